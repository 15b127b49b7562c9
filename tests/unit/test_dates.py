"""Relative date phrases resolve against the event's time, never the wall clock."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from observations.extract.date_tense import tense_at
from observations.extract.dates import (
    Anchors,
    annotate_dates,
    apply_dates,
    find_dates,
    resolve,
    rewrite_dates,
    yearly_dates,
)

# Monday 8 May 2023, 13:56 UTC (LoCoMo's first session).
MONDAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
# Saturday 13 May 2023, Wednesday 10 January 2024.
SATURDAY = datetime(2023, 5, 13, 10, 0, tzinfo=UTC)
JANUARY = datetime(2024, 1, 10, 9, 0, tzinfo=timezone(timedelta(hours=-5)))

RESOLUTIONS = [
    # phrase, anchor, iso, granularity, absolute phrase
    ("yesterday", MONDAY, "2023-05-07", "day", "on 7 May 2023"),
    ("today", MONDAY, "2023-05-08", "day", "on 8 May 2023"),
    ("tonight", MONDAY, "2023-05-08", "day", "on 8 May 2023"),
    ("tomorrow", MONDAY, "2023-05-09", "day", "on 9 May 2023"),
    ("the day before yesterday", MONDAY, "2023-05-06", "day", "on 6 May 2023"),
    ("last night", MONDAY, "2023-05-07", "day", "on 7 May 2023"),
    ("last week", MONDAY, "2023-05-01/2023-05-07", "week", "in the week of 1 May 2023"),
    ("next week", MONDAY, "2023-05-15/2023-05-21", "week", "in the week of 15 May 2023"),
    ("last month", MONDAY, "2023-04", "month", "in April 2023"),
    ("next month", MONDAY, "2023-06", "month", "in June 2023"),
    ("last May", MONDAY, "2022-05", "month", "in May 2022"),
    ("last May", JANUARY, "2023-05", "month", "in May 2023"),
    ("next May", MONDAY, "2024-05", "month", "in May 2024"),
    ("in May", MONDAY, "2023-05", "month", "in May 2023"),
    ("in December", JANUARY, "2023-12", "month", "in December 2023"),
    ("next Friday", MONDAY, "2023-05-12", "day", "on 12 May 2023"),
    ("last Friday", MONDAY, "2023-05-05", "day", "on 5 May 2023"),
    ("last Saturday", SATURDAY, "2023-05-06", "day", "on 6 May 2023"),
    ("last fri", MONDAY, "2023-05-05", "day", "on 5 May 2023"),
    (
        "this weekend",
        MONDAY,
        "2023-05-13/2023-05-14",
        "weekend",
        "on the weekend of 13-14 May 2023",
    ),
    ("last weekend", MONDAY, "2023-05-06/2023-05-07", "weekend", "on the weekend of 6-7 May 2023"),
    ("two years ago", MONDAY, "2021", "year", "in 2021"),
    ("ten years ago", MONDAY, "2013", "year", "in 2013"),
    ("3 days ago", MONDAY, "2023-05-05", "day", "on 5 May 2023"),
    ("a month ago", MONDAY, "2023-04", "month", "in April 2023"),
    ("a couple of days ago", MONDAY, "2023-05-06", "day", "on 6 May 2023"),
    ("in two weeks", MONDAY, "2023-05-22", "day", "on 22 May 2023"),
    ("a week from today", MONDAY, "2023-05-15", "day", "on 15 May 2023"),
    ("a fortnight from today", MONDAY, "2023-05-22", "day", "on 22 May 2023"),
    ("a fortnight after May 3", MONDAY, "2023-05-17", "day", "on 17 May 2023"),
    ("last year", MONDAY, "2022", "year", "in 2022"),
    ("next year", MONDAY, "2024", "year", "in 2024"),
    ("in 2019", MONDAY, "2019", "year", "in 2019"),
    ("on 5 March", MONDAY, "2023-03-05", "day", "on 5 March 2023"),
    ("March 5th", MONDAY, "2023-03-05", "day", "on 5 March 2023"),
    ("December 20", JANUARY, "2023-12-20", "day", "on 20 December 2023"),
    ("the 5th of March, 2021", MONDAY, "2021-03-05", "day", "on 5 March 2021"),
    ("May 2021", MONDAY, "2021-05", "month", "in May 2021"),
    ("2023-01-02", MONDAY, "2023-01-02", "day", "on 2 January 2023"),
    ("last summer", MONDAY, "2022-06-01/2022-08-31", "season", "in summer 2022"),
    ("last winter", MONDAY, "2022-12-01/2023-02-28", "season", "in winter 2022-2023"),
]


@pytest.mark.parametrize(("phrase", "anchor", "iso", "granularity", "absolute"), RESOLUTIONS)
def test_resolves_relative_phrase_against_anchor(
    phrase: str, anchor: datetime, iso: str, granularity: str, absolute: str
) -> None:
    resolved = resolve(phrase, anchor)
    assert resolved is not None, phrase
    assert (resolved.iso, resolved.granularity, resolved.phrase) == (iso, granularity, absolute)


@pytest.mark.parametrize(
    "phrase", ["recently", "the other day", "a few days ago", "a while ago", "soon", "lately"]
)
def test_leaves_vague_phrases_unresolved(phrase: str) -> None:
    assert resolve(phrase, MONDAY) is None
    assert find_dates(f"I saw her {phrase}.", MONDAY) == ()


def test_resolution_uses_the_anchor_not_the_clock() -> None:
    old = datetime(1999, 12, 31, 23, 0, tzinfo=UTC)
    resolved = resolve("yesterday", old)
    assert resolved is not None
    assert resolved.start == date(1999, 12, 30)


def test_anchor_day_is_taken_in_the_anchor_timezone() -> None:
    late_evening = datetime(2023, 5, 8, 23, 30, tzinfo=timezone(timedelta(hours=-7)))
    resolved = resolve("tomorrow", late_evening)
    assert resolved is not None
    assert resolved.iso == "2023-05-09"


def test_lowercase_may_is_a_verb_not_a_month() -> None:
    assert find_dates("I may go there, who knows.", MONDAY) == ()


def test_finds_several_phrases_with_their_spans() -> None:
    text = "Yesterday I ran, and next Friday I fly."
    found = find_dates(text, MONDAY)
    assert [f.text for f in found] == ["Yesterday", "next Friday"]
    assert [text[f.span[0] : f.span[1]] for f in found] == ["Yesterday", "next Friday"]


def test_rewrites_phrases_into_absolute_dates() -> None:
    text, found = rewrite_dates("Yesterday I went out, and since last year I paint.", MONDAY)
    assert text == "On 7 May 2023 I went out, and since 2022 I paint."
    assert len(found) == 2


def test_a_bare_weekday_after_a_weekend_stated_is_that_weekends_day() -> None:
    text = "camping is the weekend after next! leaving saturday morning"
    found = find_dates(text, MONDAY)
    assert [(f.text, f.label) for f in found] == [
        ("the weekend after next", "the weekend of 20-21 May 2023"),
        ("saturday morning", "20 May 2023"),
    ]
    later = find_dates("leaving saturday", MONDAY, stated=found[0])
    assert [f.label for f in later] == ["20 May 2023"]


def test_annotating_keeps_the_words_and_adds_each_period_beside_its_phrase() -> None:
    text = "I ran yesterday, and on 12 May 2023 I fly."
    annotated = annotate_dates(text, find_dates(text, MONDAY))
    assert annotated == "I ran yesterday [7 May 2023], and on 12 May 2023 I fly."


def test_rewrite_keeps_a_preceding_preposition_other_than_on_or_in() -> None:
    text, _ = rewrite_dates("I booked it for next Friday, in 2019 style.", MONDAY)
    assert text == "I booked it for 12 May 2023, in 2019 style."


def test_rewrite_absorbs_on_and_in_into_the_absolute_phrase() -> None:
    text, _ = rewrite_dates("We met on last Friday and married in May.", MONDAY)
    assert text == "We met on 5 May 2023 and married in May 2023."


def test_a_year_needs_a_preposition_to_count_as_a_date() -> None:
    assert find_dates("I ran 2019 meters.", MONDAY) == ()
    assert [f.iso for f in find_dates("I moved here back in 2019.", MONDAY)] == ["2019"]


def test_impossible_calendar_dates_are_not_resolved() -> None:
    assert resolve("February 30", MONDAY) is None


# Wednesday 31 December 2025, 23:30 in New York; Friday 31 January 2025.
NEW_YEARS_EVE = datetime(2025, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
END_OF_JANUARY = datetime(2025, 1, 31, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sentence", "tense"),
    [
        ("i saw her on monday", "past"),
        ("we really liked it on monday", "past"),
        ("we got married on monday", "past"),
        ("my brother is getting married on monday", "future"),
        ("we'll get engaged on monday", "future"),
        ("i was getting married on monday", "past"),
        ("my visa expires on monday", "future"),
        ("my passport runs out on monday", "future"),
        ("my lease ends on monday", "future"),
        ("my visa expired on monday", "past"),
        ("i've been sick since monday", "past"),
        ("on monday i went home", "past"),
        ("i'm flying out on monday", "future"),
        ("we'll meet on monday", "future"),
        ("i said we'll meet on monday", "future"),
        ("i'm going to paris on monday", "future"),
        ("see you on monday", "future"),
        ("i booked a table for monday", "future"),
        ("i'm so excited for monday", "future"),
        ("monday works for me", None),
        ("got it, monday then", None),
        ("ok understood, monday it is", None),
        ("i got it on monday", "past"),
        ("my flight leaves on monday. i was tired", None),
        ("im at the conference till monday", "future"),
        ("the office is closed until monday", "future"),
        ("i was in porto until monday", "past"),
        ("the wedding is monday", "future"),
        ("the wedding is monday and i haven't finished my speech", "future"),
        ("the wedding was monday and i loved it", "past"),
    ],
)
def test_tense_is_read_from_the_verbs_nearest_the_phrase(sentence: str, tense: str | None) -> None:
    start = sentence.index("monday")
    assert tense_at(sentence, start, start + len("monday")) == tense


def test_a_bare_weekday_points_the_way_its_tense_does() -> None:
    [past] = find_dates("I saw her on Monday.", NEW_YEARS_EVE)
    [future] = find_dates("We'll meet on Monday.", NEW_YEARS_EVE)
    assert (past.text, past.iso, future.iso) == ("on Monday", "2025-12-29", "2026-01-05")
    assert find_dates("Monday works for me.", NEW_YEARS_EVE) == ()  # no tense, no guess


@pytest.mark.parametrize(
    ("said", "iso"),
    [
        ("lisbon in november!! me and my sister", "2023-11"),  # no verb: mostly ahead
        ("my trip to lisbon is in november", "2023-11"),  # "is in": set, ahead
        ("we went to lisbon in november", "2022-11"),
        ("dentist in april, it went fine", "2023-04"),  # the last one is much the nearer
    ],
)
def test_a_month_with_no_past_tense_is_the_next_unless_the_last_is_much_nearer(
    said: str, iso: str
) -> None:
    [found] = find_dates(said, MONDAY)
    assert found.iso == iso


def test_a_tense_passed_in_overrides_the_verbs() -> None:
    [found] = find_dates("I saw her on Monday.", NEW_YEARS_EVE, tense="future")
    assert found.iso == "2026-01-05"
    resolved = resolve("in March", NEW_YEARS_EVE, tense="past")
    assert resolved is not None and resolved.iso == "2025-03"


@pytest.mark.parametrize(
    "text", ["every Monday we run", "on Mondays we run", "we run most mondays, we did"]
)
def test_habitual_weekdays_are_not_dates(text: str) -> None:
    assert find_dates(text, NEW_YEARS_EVE) == ()


@pytest.mark.parametrize(
    "text",
    ["I was there on 4/5.", "I was there on 13/14.", "I rated it 3/14.", "we won 3/14 games"],
)
def test_a_numeric_date_needs_a_preposition_and_a_certain_order(text: str) -> None:
    assert find_dates(text, NEW_YEARS_EVE) == ()


@pytest.mark.parametrize(
    "text",
    [
        "this may sound odd",
        "you may first want to check",
        "the last year has been hard",
        "the next week or so is busy",
    ],
)
def test_words_that_only_look_like_dates_are_left_alone(text: str) -> None:
    assert find_dates(text, NEW_YEARS_EVE) == ()


def test_precision_and_valid_at_are_the_fields_an_entry_keeps() -> None:
    fields = {
        phrase: (found.valid_at, found.precision)
        for phrase in ("yesterday", "last month", "last year", "last weekend", "last winter")
        if (found := resolve(phrase, NEW_YEARS_EVE)) is not None
    }
    assert fields == {
        "yesterday": ("2025-12-30", "day"),
        "last month": ("2025-11-01", "month"),
        "last year": ("2024-01-01", "year"),
        "last weekend": ("2025-12-27", "weekend"),
        "last winter": ("2024-12-01", "season"),
    }


@pytest.mark.parametrize(
    ("said", "anchor", "written"),
    [
        # a composed phrase is one absolute date
        ("We fly next month, on the 14th, and land the day after.", NEW_YEARS_EVE,
         "We fly on 14 January 2026, and land on 15 January 2026."),
        ("Rent is due the first of next month.", NEW_YEARS_EVE, "Rent is due on 1 January 2026."),
        # a period that owns what follows is written as its owner
        ("I met Ana during yesterday's class and missed last week's game.", MONDAY,
         "I met Ana during 7 May 2023's class and missed the week of 1 May 2023's game."),
        ("At today’s meeting I spoke.", MONDAY, "At 8 May 2023’s meeting I spoke."),
    ],
)  # fmt: skip
def test_rewrite_writes_a_composed_or_owning_phrase_as_one_absolute_date(
    said: str, anchor: datetime, written: str
) -> None:
    assert rewrite_dates(said, anchor)[0] == written


def test_a_day_the_month_lacks_leaves_the_month_as_it_was() -> None:
    text, found = rewrite_dates("We go next month on the 30th.", END_OF_JANUARY)
    assert text == "We go in February 2025 on the 30th."
    assert [f.precision for f in found] == ["month"]


def test_an_offset_finer_than_its_date_is_not_applied() -> None:
    [found] = find_dates("two days after March 2026", NEW_YEARS_EVE)
    assert (found.text, found.iso) == ("March 2026", "2026-03")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The summit is on May 12 and I fly out the day before.", "I fly out on 11 May 2023."),
        ("We got there on March 3, two days later it snowed.", "on 5 March 2023 it snowed"),
        ("Moving on June 5, the next day I start work.", "6 June"),
        ("My exam is on June 7, that weekend we celebrate.", "the weekend of 10-11 June 2023"),
        ("I moved here in 2019, a year later I got married.", "in 2020"),
    ],
)
def test_a_date_counted_from_a_date_stated_before_it_in_the_text(text: str, expected: str) -> None:
    rewritten, _ = rewrite_dates(text, MONDAY)
    assert expected in rewritten, rewritten


def test_a_date_counted_from_a_date_stated_in_an_earlier_sentence() -> None:
    (stated,) = find_dates("the data summit in denver is on may 12", MONDAY)
    (found,) = find_dates("i'll fly out the day before", MONDAY, stated=stated)
    assert (found.text, found.label) == ("the day before", "11 May 2023")
    assert find_dates("i'll fly out the day before", MONDAY) == ()


@pytest.mark.parametrize(
    "text",
    [
        "I fly out the day before the summit, on May 12.",  # before what: not the date
        "We met in May. I left the day after.",  # a month: no day to count from
        "I fly out the day before.",  # no date stated
    ],
)
def test_a_counted_date_without_a_day_to_count_from_stays_as_written(text: str) -> None:
    found = find_dates(text, MONDAY)
    assert all("day before" not in f.text and "day after" not in f.text for f in found)


def _wedding_day() -> Anchors:
    anchors = Anchors()
    (said,) = find_dates("my brother kenji's wedding is may 27", MONDAY)
    anchors.tie_dates("my brother kenji's wedding is may 27", [said])
    return anchors


@pytest.mark.parametrize(
    ("text", "phrase", "label"),
    [
        ("the rehearsal dinner is the night before the wedding", "the night before the wedding",
         "26 May 2023"),
        ("the rehearsal dinner is 2 days before the wedding, at my aunt's place",
         "2 days before the wedding", "25 May 2023"),
        ("we fly home three days after kenji's wedding and his honeymoon",
         "three days after kenji's wedding", "30 May 2023"),
        ("i need the suit a week ahead of the wedding", "a week ahead of the wedding",
         "20 May 2023"),
    ],
)  # fmt: skip
def test_a_date_counted_from_an_event_named_counts_from_the_day_said_for_it(
    text: str, phrase: str, label: str
) -> None:
    (found,) = find_dates(text, MONDAY, anchors=_wedding_day())
    assert (found.text, found.label) == (phrase, label)


@pytest.mark.parametrize(
    "text",
    [
        "the rehearsal dinner is the night before the party",  # no day said for a party
        "i need the suit the day before my brother arrives",  # "brother" is no event
        "we leave the day before the weekend",  # nor a weekend
    ],
)
def test_a_date_counted_from_an_event_no_day_was_said_for_stays_as_written(text: str) -> None:
    assert find_dates(text, MONDAY, anchors=_wedding_day()) == ()


def test_a_date_moved_from_its_own_day_counts_from_the_day_said_for_the_thing_moved() -> None:
    anchors = Anchors()
    said = "my visa interview is on may 12, 8:30am"
    anchors.tie_dates(said, find_dates(said, MONDAY))
    moved = "the consulate moved my interview 2 days earlier than the original date. same time"

    (found,) = find_dates(moved, MONDAY, anchors=anchors)

    assert (found.text, found.label) == ("2 days earlier than the original date", "10 May 2023")
    assert apply_dates(moved, (found,)).startswith("the consulate moved my interview to 10 May")
    (later,) = find_dates("they pushed the interview a week later", MONDAY, anchors=anchors)
    assert later.label == "19 May 2023"
    assert find_dates(moved, MONDAY) == ()  # nothing tied: left as written


def test_a_day_whose_clause_names_nothing_ties_the_clause_before() -> None:
    anchors = Anchors()
    said = "work is sending me to the conference in brisbane, it's on july 14th"
    anchors.tie_dates(said, find_dates(said, MONDAY))
    (found,) = find_dates("i'll fly up the day before the conference", MONDAY, anchors=anchors)
    assert found.label == "13 July 2023"


def test_only_a_day_ties_words_and_the_latest_tie_wins() -> None:
    anchors = Anchors()
    anchors.tie("the wedding", (date(2023, 5, 27), date(2023, 5, 27), "day"))
    anchors.tie("the wedding", (date(2023, 6, 1), date(2023, 6, 30), "month"))
    assert anchors.find(["wedding"]) == (date(2023, 5, 27), date(2023, 5, 27), "day")
    anchors.tie("the weddings", (date(2023, 6, 3), date(2023, 6, 3), "day"))
    assert anchors.find(["wedding's"]) == (date(2023, 6, 3), date(2023, 6, 3), "day")


@pytest.mark.parametrize(
    ("text", "yearly"),
    [
        ("Amara's birthday is the 13th of june.", "Amara's birthday is on 13 June."),
        ("Maya's birthday is on 4 July 2023.", "Maya's birthday is on 4 July."),
        ("Their anniversary is on the first of next month.", "Their anniversary is on 1 June."),
        ("Tom's birthday is in March 2024.", "Tom's birthday is in March 2024."),  # no day
        ("Lena's birthday is the 13th.", "Lena's birthday is the 13th."),  # no month
    ],
)
def test_a_day_that_comes_back_every_year_is_written_without_one(text: str, yearly: str) -> None:
    assert yearly_dates(text, datetime(2023, 5, 8, 14, tzinfo=UTC)) == yearly


def test_a_day_of_the_month_alone_is_that_day_of_the_month_the_tense_points_to() -> None:
    # Thursday 20 March 2025
    anchor = datetime(2025, 3, 20, 18, 0, tzinfo=UTC)
    said = {
        "my lease renewal is due on the 3rd, remind me": "2025-04-03",
        "i will see him on the 30th": "2025-03-30",
        "i paid it on the 3rd": "2025-03-03",
    }
    for text, iso in said.items():
        assert [d.iso for d in find_dates(text, anchor)] == [iso], text
    for text in ("we live on the 3rd floor", "i passed on the 2nd try"):
        assert find_dates(text, anchor) == (), text
    (composed,) = find_dates("it's due on the 1st of next month", anchor)
    assert composed.iso == "2025-04-01"
