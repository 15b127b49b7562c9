"""Relative date phrases resolve against the event's time, never the wall clock."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from observations.extract.dates import find_dates, resolve, rewrite_dates

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
    ("in two weeks", MONDAY, "2023-05-22/2023-05-28", "week", "in the week of 22 May 2023"),
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
