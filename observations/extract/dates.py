"""Resolve relative date phrases against an anchor: the event's ``occurred_at``.

The anchor is always passed in, at the offset the speaker wrote from (its local day is the
day "yesterday" counts from); the wall clock is never read, so replaying an old transcript
resolves "yesterday" to the day before the message was written.

* ``find_dates(text, anchor)`` — every resolvable phrase in ``text``, left to right,
  non-overlapping (the longest phrase wins where two start at the same place).
* ``resolve(phrase, anchor)`` — one phrase that must make up the whole string.
* ``rewrite_dates(text, anchor)`` — ``text`` with each phrase replaced by its absolute
  form ("yesterday" → "on 7 May 2023", "last year" → "in 2022", "since last year" →
  "since 2022").

Phrases are found by cheap regexes (:mod:`.date_rules`) and read by dateparser
(:mod:`.date_library`), then composed: an offset before a date ("the day before 12 May",
"a week from today", "a year after 29 February 2024"), a day of a month ("the first of
next month", "next month on the 14th").

The tense decides which way a phrase without a year or week points: "I saw her on Monday"
is the last Monday before the anchor, "we'll meet on Monday" the next one after it; a bare
weekday with no tense is left alone, "in May" or "3 March" with no tense is the nearer
occurrence. ``tense`` may be passed in (from a parse); otherwise it is read from the verbs
of the sentence around each phrase (:mod:`.date_tense`).

Conventions: weeks start on Monday; "last <weekday>" is the most recent such day strictly
before the anchor, "next <weekday>" the first one strictly after it, "this <weekday>" the
next one from the anchor on (in the past tense: the latest up to the anchor); "last/this/
next weekend" is the Saturday–Sunday of the previous / current / following week; "last
<Month>" is the most recent such month strictly before the anchor's month; "in two weeks"
and "two weeks ago" are the day 14 days after or before the anchor; a weekday beside a date
without a year ("Friday 26 September") names the year, whatever the sentence's tense (the
occurrence nearest the anchor on that weekday); a month or a year added to a day the
target month lacks lands on its last day (29 February 2024 + a year = 28 February 2025);
seasons are northern-hemisphere (winter = December–February, named by the year it starts
in). Vague phrases ("recently", "the other day", "a few days ago") are not resolved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from observations.extract.date_periods import MONTHS, Granularity, Period, shift, weekend_range
from observations.extract.date_rules import RULES, Context, cues
from observations.extract.date_tense import Tense
from observations.extract.date_words import NUM, ORD, WEEKDAY_NAMES, number, ordinal
from observations.extract.text import content_words, singular
from observations.extract.vocabulary import FEMININE, MASCULINE, ROLES

__all__ = ["DATE_FIELDS", "MONTHS", "Anchors", "Granularity", "ResolvedDate", "Tense"]
__all__ += ["apply_dates"]
__all__ += ["day_label"]
__all__ += ["find_dates", "resolve", "rewrite_dates", "yearly_dates"]

# an entry's fields that date it to one occurrence: the phrase (ISO 8601) and its
# granularity, the day it starts on and how exact it is
DATE_FIELDS = ("event_time", "event_time_granularity", "valid_at", "precision")
# a preposition a phrase takes in with it ("during yesterday", "back in 2019")
_PREPOSITION = r"(?:back in|during|on|in)\s+"
_PREFIX = re.compile(rf"\b{_PREPOSITION}$", re.IGNORECASE)
_PREFIX_AT_START = re.compile(_PREPOSITION, re.IGNORECASE)
_KEEP_PREPOSITION = re.compile(
    r"(?i)\b(?:since|until|till|by|from|before|after|around|of|to|through|than|for|at|about"
    r"|between|into|like)\s+$"
)
_OFFSET = re.compile(
    rf"(?i)(?:\b(?:the|a|one)\s+(?P<one>day)|\b{NUM}\s+(?P<unit>day|week|fortnight|month|year)s?)"
    r"\s+(?P<dir>before|after|from)\s+$"
)
# a date counted from another date said before it ("the day before", "two days later",
# "that weekend"); "before"/"after" not followed by what they are before or after
_FROM_STATED = re.compile(
    rf"(?i)\b(?:(?:the|a|one)\s+(?P<one>day|week)|{NUM}\s+(?P<unit>day|week|fortnight|month|year)s?)"
    r"\s+(?P<dir>later|earlier|(?:before|after)"
    r"(?!\s+(?:the|a|an|my|our|his|her|their|your|this|that|i|we|you|he|she|they|it|\w+ing)\b))\b"
    r"|\bthe\s+(?:next|following)\s+(?P<next>day)\b|\bthat\s+(?P<that>weekend)\b"
)
# a date counted from an event the sentence names ("the night before the wedding", "two
# days after my surgery"), dated by what was said before (:class:`Anchors`)
_FROM_NAMED = re.compile(
    rf"(?i)\b(?:(?:the|a|one)\s+(?P<one>day|night|evening|morning|week)"
    rf"|{NUM}\s+(?P<unit>day|night|week|fortnight|month|year)s?)"
    r"\s+(?P<dir>before|after|ahead\s+of|prior\s+to)\s+"
    r"(?:the|my|our|his|her|their|your|[a-z]+['’]s)\s+(?P<named>[a-z][\w'’]*(?:\s+[a-z][\w'’]*){0,2})"
)
# a date moved from its own ("two days earlier than the original date"): the thing moved is
# named before it ("the consulate moved my interview …")
_THAN_BEFORE = re.compile(
    r"(?i)\s+than\s+(?:the|its|my|our|his|her|their)\s+"
    r"(?:original|old|first|planned|scheduled|previous|usual)\s+(?:date|day|time|plan)\b"
)
# a phrase that moves a date by an offset, after a verb of moving
_MOVED_BY = re.compile(r"(?i)\b(?:earlier|later)\b")
_MOVED = re.compile(
    r"(?i)\b(?:moved|pushed|bumped|rescheduled|changed|shifted|postponed|brought|delayed)"
    r"(?:\s+[\w'’]+){0,4}\s+$"
)
# where a noun phrase after "before"/"after" ends: a preposition, a conjunction, a verb of
# being, a pronoun ("the day before the wedding at my aunt's", "… the interview i have")
_NAMED_ENDS = frozenset(
    ("at", "in", "on", "for", "with", "and", "but", "so", "or", "to", "from", "by", "of",
     "which", "that", "who", "is", "was", "will", "when", "where", "because", "i", "we",
     "you", "he", "she", "they", "it")
)  # fmt: skip
_DAY_BEFORE_MONTH = re.compile(rf"(?i)(?:\b(?:the\s+)?(?P<d>{ORD})\s+of|\bthe\s+(?P<e>{ORD}))\s+$")
_DAY_AFTER_MONTH = re.compile(rf"(?i),?\s+(?:on\s+)?the\s+(?P<d>{ORD})\b")
_Found = tuple[int, int, Period]  # a phrase's start and end, and its period
_REACH = 48  # how far before a phrase an offset or a day of the month is looked for


@dataclass(frozen=True, slots=True)
class ResolvedDate:
    """A date phrase found in a text and the absolute period it denotes."""

    text: str  # the phrase as written
    span: tuple[int, int]  # where it is in the text it was found in
    start: date
    end: date  # inclusive
    granularity: Granularity

    @property
    def label(self) -> str:
        """The absolute period without a preposition: "7 May 2023", "2022"."""
        if self.granularity == "day":
            return day_label(self.start)
        if self.granularity == "month":
            return f"{MONTHS[self.start.month - 1]} {self.start.year}"
        if self.granularity == "year":
            return str(self.start.year)
        if self.granularity == "week":
            return f"the week of {day_label(self.start)}"
        if self.granularity == "weekend":
            return f"the weekend of {_range_label(self.start, self.end)}"
        return _season_label(self.start)

    @property
    def phrase(self) -> str:
        """The absolute period as an adverbial: "on 7 May 2023", "in 2022"."""
        preposition = "on" if self.granularity in ("day", "weekend") else "in"
        return f"{preposition} {self.label}"

    @property
    def possessor(self) -> str:
        """The period as the owner of what follows, after the preposition written with it:
        "during yesterday's class" → "during 9 March 2025" ('s class), "last week's game"
        → "the week of 3 March 2025" ('s game)."""
        lead = _PREFIX_AT_START.match(self.text)
        return f"{lead[0]}{self.label}" if lead else self.label

    def owns_what_follows(self, text: str) -> bool:
        """Whether the phrase is a possessor in ``text`` (the text it was found in)."""
        return text[self.span[1] : self.span[1] + 2] in ("'s", "’s")

    @property
    def iso(self) -> str:
        """ISO 8601: a date, a year-month, a year, or a start/end interval."""
        if self.granularity == "day":
            return self.start.isoformat()
        if self.granularity == "month":
            return self.start.isoformat()[:7]
        if self.granularity == "year":
            return str(self.start.year)
        return f"{self.start.isoformat()}/{self.end.isoformat()}"

    @property
    def valid_at(self) -> str:
        """The ISO date the period starts on: an entry's ``valid_at`` field."""
        return self.start.isoformat()

    @property
    def precision(self) -> Granularity:
        """How exact the date is (day, weekend, week, month, season, year): an entry's
        ``precision`` field."""
        return self.granularity

    @property
    def fields(self) -> dict[str, str]:
        """The fields of an entry dated by this phrase (:data:`DATE_FIELDS`)."""
        values = (self.iso, self.granularity, self.valid_at, self.precision)
        return dict(zip(DATE_FIELDS, values, strict=True))


def day_label(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _range_label(start: date, end: date) -> str:
    if start.month == end.month:
        return f"{start.day}-{day_label(end)}"
    if start.year == end.year:
        return f"{start.day} {MONTHS[start.month - 1]}-{day_label(end)}"
    return f"{day_label(start)}-{day_label(end)}"


def _season_label(start: date) -> str:
    name = {3: "spring", 6: "summer", 9: "autumn", 12: "winter"}[start.month]
    return f"{name} {start.year}-{start.year + 1}" if name == "winter" else f"{name} {start.year}"


def _matches(text: str) -> list[tuple[int, int, re.Match[str], int]]:
    """Every rule's matches, by start and then longest first (resolved later, lazily)."""
    found: list[tuple[int, int, re.Match[str], int]] = []
    present = cues(text)
    for index, rule in enumerate(RULES):
        if present.isdisjoint(rule.needles):
            continue
        found.extend((m.start(), -m.end(), m, index) for m in rule.regex.finditer(text))
    found.sort(key=lambda c: (c[0], c[1], c[3]))
    return [(start, -end, m, index) for start, end, m, index in found]


def _day_of_month(ctx: Context, start: int, end: int, period: Period, floor: int) -> _Found:
    """A day of the month the period is: "the first of next month", "next month on the
    14th"."""
    if period[2] != "month":
        return start, end, period
    before = _DAY_BEFORE_MONTH.search(ctx.text, max(floor, start - _REACH), start)
    after = None if before else _DAY_AFTER_MONTH.match(ctx.text, end)
    found = before or after
    if found is None:
        return start, end, period
    day = ordinal(found["d"] or found["e"])
    try:
        chosen = period[0].replace(day=day)
    except ValueError:
        return start, end, period
    if before:
        return before.start(), end, (chosen, chosen, "day")
    return start, found.end(), (chosen, chosen, "day")


def _offset(ctx: Context, start: int, end: int, period: Period, floor: int) -> _Found:
    """The period moved by an offset written before it: "the day before 12 May", "two
    days after March 3rd", "a week from today"."""
    found = _OFFSET.search(ctx.text, max(floor, start - _REACH), start)
    if found is None or (found["dir"].lower() == "from" and period[2] != "day"):
        return start, end, period
    amount = 1 if found["one"] else number(found["n"])
    moved = shift(period, -amount if found["dir"].lower() == "before" else amount,
                  found["unit"].lower() if found["unit"] else "day")  # fmt: skip
    return (found.start(), end, moved) if moved else (start, end, period)


class Anchors:
    """Days the conversation tied to words: "kenji's wedding is march 15" ties "wedding" to
    15 March, so that "the night before the wedding" is 14 March. A word's latest tie wins;
    ties known from earlier sessions come first (:meth:`know`), and :attr:`own` keeps the
    ones made here, for later sessions."""

    def __init__(self) -> None:
        self._days: dict[str, Period] = {}
        self.own: dict[str, date] = {}

    def know(self, word: str, day: date) -> None:
        """A tie made before (in an earlier session)."""
        self._days[_anchor_word(word)] = (day, day, "day")

    def tie(self, text: str, period: Period) -> None:
        """Tie the content words of ``text`` to ``period`` (a day)."""
        if period[2] != "day":
            return
        for word in _anchor_words(text):
            self._days[word] = period
            self.own[word] = period[0]

    def tie_dates(self, text: str, dates: Sequence[ResolvedDate]) -> None:
        """Tie each day found in ``text`` to the other words of its clause, or of the
        clause before when its own has none ("the conference in brisbane, it's on july
        14th")."""
        clauses = [c.span() for c in _CLAUSE.finditer(text) if c.end() - c.start() > 1]
        for found in dates:
            start, end = found.span
            at = next((n for n, (a, b) in enumerate(clauses) if a <= start < b), None)
            first, last = clauses[at] if at is not None else (0, len(text))
            words = text[first:start] + " " + text[end:last]
            if not _anchor_words(words) and at:
                words = text[slice(*clauses[at - 1])]
            self.tie(words, (found.start, found.end, found.granularity))

    def find(self, words: list[str]) -> Period | None:
        """The day of the first of ``words`` that has one."""
        for word in words:
            period = self._days.get(_anchor_word(word))
            if period is not None:
                return period
        return None

    def copy(self) -> Anchors:
        copied = Anchors()
        copied._days, copied.own = dict(self._days), dict(self.own)
        return copied


# a clause of a sentence, as far as the words a day is tied to go
_CLAUSE = re.compile(r"(?:[^,;]|,(?=\d))+?(?=[,;]|\s+(?:and|but|so|while|because|then)\s+|$)|[,;]")


def _anchor_words(text: str) -> list[str]:
    return [w for w in map(_anchor_word, content_words(text)) if w not in _NOT_ANCHORS]


def _anchor_word(word: str) -> str:
    return singular(word.lower().replace("’", "'").removesuffix("'s"))


# words a day is not told by: its own units and names, what any plan has, and people
_NOT_ANCHORS = ROLES | FEMININE | MASCULINE | frozenset(
    (*(m.lower() for m in MONTHS), *WEEKDAY_NAMES,
     "day", "night", "morning", "evening", "week", "weekend", "month", "year", "date", "time",
     "today", "tonight", "tomorrow", "yesterday", "plan", "thing", "am", "pm")
)  # fmt: skip


def find_dates(
    text: str,
    anchor: datetime | date,
    tense: Tense | None = None,
    stated: ResolvedDate | None = None,
    anchors: Anchors | None = None,
) -> tuple[ResolvedDate, ...]:
    """Every resolvable date phrase in ``text``, resolved against ``anchor`` (its own
    local day), in ``tense`` when given, else in the tense each phrase's sentence has; a
    date counted from another ("the day before") from the date stated before it in
    ``text``, else from ``stated`` (the last date of the sentences before); one counted
    from an event named ("two days before the wedding", "two days earlier than the
    original date") from the day ``anchors`` tie to it."""
    day = anchor.date() if isinstance(anchor, datetime) else anchor
    ctx = Context(text, day, tense)
    chosen: list[ResolvedDate] = []
    taken_until = 0
    for start, end, match, index in _matches(text):
        if start < taken_until:
            continue
        period = RULES[index].resolve(match, ctx)
        if period is None:
            continue
        start, end, period = _day_of_month(ctx, start, end, period, taken_until)
        start, end, period = _offset(ctx, start, end, period, taken_until)
        prefix = _PREFIX.search(text, max(taken_until, start - 12), start)
        begin = prefix.start() if prefix else start
        chosen.append(ResolvedDate(text[begin:end], (begin, end), *period))
        taken_until = end
    if anchors is not None:
        chosen = _counted_from_named(text, chosen, anchors)
    return _within_stated(_counted_from_stated(text, chosen, stated, anchors), stated)


_BARE_WEEKDAY = re.compile(
    rf"(?i)(?:on\s+)?(?:the\s+)?(?P<wd>{'|'.join(WEEKDAY_NAMES)})"
    r"(?:\s+(?:morning|afternoon|evening|night))?"
)


def _within_stated(
    found: tuple[ResolvedDate, ...], stated: ResolvedDate | None
) -> tuple[ResolvedDate, ...]:
    """A bare weekday said after a week or a weekend ("the weekend after next, leaving
    saturday morning"): that weekday of the week or weekend stated, not of the coming one."""
    kept: list[ResolvedDate] = []
    for item in found:
        base = kept[-1] if kept else stated
        bare = _BARE_WEEKDAY.fullmatch(item.text.strip())
        if bare and base is not None and base.granularity in ("week", "weekend"):
            weekday = WEEKDAY_NAMES.index(bare["wd"].lower())
            days = (base.start + timedelta(days=n) for n in range((base.end - base.start).days + 1))
            day = next((d for d in days if d.weekday() == weekday), None)
            if day is not None:
                item = replace(item, start=day, end=day)
        kept.append(item)
    return tuple(kept)


def _counted_from_named(
    text: str, chosen: list[ResolvedDate], anchors: Anchors
) -> list[ResolvedDate]:
    """``chosen`` with the dates counted from an event named after them: "the night before
    the wedding", "three weeks after my surgery" (the last word before a preposition)."""
    found = list(chosen)
    for match in _FROM_NAMED.finditer(text):
        start = match.start()
        if any(d.span[0] < match.end() and start < d.span[1] for d in chosen):
            continue
        named: list[str] = []
        for word in match["named"].split():
            if word.lower() in _NAMED_ENDS:
                break
            named.append(word)
        base = anchors.find(named[-1:])  # the head: "my sister's wedding"
        if base is None:
            continue
        end = match.start("named") + len(" ".join(named))
        period = _from(match, base)
        if period is not None:
            found.append(_phrase(text, start, end, period, chosen))
    return sorted(found, key=lambda d: d.span)


def _counted_from_stated(
    text: str, chosen: list[ResolvedDate], stated: ResolvedDate | None, anchors: Anchors | None
) -> tuple[ResolvedDate, ...]:
    """``chosen`` with the dates counted from a date stated before them: "the summit is on
    12 May. I'll fly out the day before" → 11 May; "two days later", "the next day" (from
    a day), "a year later" (from a day, month or year), "that weekend" (of a day). With
    no date stated, or when the phrase says it moves a thing from its own date ("moved
    my interview two days earlier than the original date"), from the day ``anchors`` tie
    to a word before it in the sentence (the nearest first)."""
    found = list(chosen)
    for match in _FROM_STATED.finditer(text):
        start, end = match.span()
        if any(d.span[0] < end and start < d.span[1] for d in chosen):
            continue  # part of a phrase already read ("the day before 12 May")
        earlier = [d for d in chosen if d.span[1] <= start]
        base = earlier[-1] if earlier else stated
        than = _THAN_BEFORE.match(text, end) if match["dir"] else None
        own = None
        if anchors is not None and (than or base is None):
            own = anchors.find(content_words(text[:start])[::-1])
        if own is not None:
            period = _from(match, own)
            end = than.end() if than else end
        elif base is not None:
            period = _from(match, (base.start, base.end, base.granularity))
        else:
            continue
        if period is not None:
            found.append(_phrase(text, start, end, period, earlier))
    return tuple(sorted(found, key=lambda d: d.span))


def _phrase(
    text: str, start: int, end: int, period: Period, before: list[ResolvedDate]
) -> ResolvedDate:
    """The phrase from ``start`` to ``end`` with the preposition written before it (not
    reaching into a phrase of ``before``)."""
    floor = max((d.span[1] for d in before if d.span[1] <= start), default=0)
    prefix = _PREFIX.search(text, max(floor, start - 12), start)
    begin = prefix.start() if prefix else start
    return ResolvedDate(text[begin:end], (begin, end), *period)


def _from(match: re.Match[str], base: Period) -> Period | None:
    groups = match.groupdict()
    if groups.get("that"):
        return weekend_range(base[0]) if base[2] in ("day", "weekend") else None
    if groups.get("next"):
        return shift(base, 1, "day") if base[2] == "day" else None
    amount = 1 if match["one"] else number(match["n"])
    unit = (match["one"] or match["unit"]).lower()
    unit = "day" if unit in ("night", "evening", "morning") else unit
    back = match["dir"].lower().split()[0] in ("before", "earlier", "ahead", "prior")
    return shift(base, -amount if back else amount, unit)


def resolve(
    phrase: str, anchor: datetime | date, tense: Tense | None = None
) -> ResolvedDate | None:
    """Resolve ``phrase`` when the whole of it is one date phrase, else ``None``."""
    stripped = phrase.strip()
    found = find_dates(stripped, anchor, tense)
    if len(found) == 1 and found[0].span == (0, len(stripped)):
        return found[0]
    return None


def rewrite_dates(
    text: str, anchor: datetime | date, tense: Tense | None = None
) -> tuple[str, tuple[ResolvedDate, ...]]:
    """Replace each date phrase in ``text`` by its absolute form."""
    found = find_dates(text, anchor, tense)
    return apply_dates(text, found), found


def apply_dates(text: str, found: tuple[ResolvedDate, ...]) -> str:
    """``text`` with the date phrases ``found`` in it (by :func:`find_dates`) made absolute."""
    pieces: list[str] = []
    cursor = 0
    for item in found:
        start, end = item.span
        keep_bare = _KEEP_PREPOSITION.search(text[:start]) is not None
        if item.owns_what_follows(text):
            replacement = item.possessor
        elif _MOVED_BY.search(item.text) and _MOVED.search(text, max(0, start - 60), start):
            replacement = f"to {item.label}"  # "moved my interview two days earlier"
        else:
            replacement = item.label if keep_bare else item.phrase
        if text[start : start + 1].isupper():
            replacement = replacement[:1].upper() + replacement[1:]
        pieces.extend((text[cursor:start], replacement))
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


def annotate_dates(text: str, found: tuple[ResolvedDate, ...]) -> str:
    """``text`` as written, each date phrase ``found`` in it followed by the period it
    denotes in brackets, unless it says that period already: "yesterday" → "yesterday
    [7 May 2023]", "on 7 May 2023" unchanged."""
    pieces: list[str] = []
    cursor = 0
    for item in found:
        end = item.span[1]
        pieces.append(text[cursor:end])
        if item.label.casefold() not in item.text.casefold():
            pieces.append(f" [{item.label}]")
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


_DAY_OF_A_YEAR = re.compile(rf"\b(\d{{1,2}} (?:{'|'.join(MONTHS)})) \d{{4}}\b")


def yearly_dates(text: str, anchor: datetime | date) -> str:
    """``text`` about what comes back every year (a birthday, an anniversary), with each day
    it names written without a year: "Amara's birthday is the 13th of june" → "… is on 13
    June"; "… is on 4 July 2023" → "… is on 4 July". The year a phrase resolves to is the
    next occurrence, which is not part of the fact."""
    dated = apply_dates(text, tuple(d for d in find_dates(text, anchor) if d.granularity == "day"))
    return _DAY_OF_A_YEAR.sub(r"\1", dated)
