"""Resolve relative date phrases against an anchor: the event's ``occurred_at``.

The anchor is always passed in; the wall clock is never read, so replaying an old
transcript resolves "yesterday" to the day before the message was written.

* ``find_dates(text, anchor)`` — every resolvable phrase in ``text``, left to right,
  non-overlapping (the longest phrase wins where two start at the same place).
* ``resolve(phrase, anchor)`` — one phrase that must make up the whole string.
* ``rewrite_dates(text, anchor)`` — ``text`` with each phrase replaced by its absolute
  form ("yesterday" → "on 7 May 2023", "last year" → "in 2022", "since last year" →
  "since 2022").

Conventions: weeks start on Monday; "last <weekday>" is the most recent such day strictly
before the anchor, "next <weekday>" the first one strictly after it, "this <weekday>" the
one in the anchor's week; "last/this/next weekend" is the Saturday–Sunday of the previous /
current / following week; "last <Month>" is the most recent such month strictly before
the anchor's month; "in <Month>" and "<day> <Month>" without a year take the occurrence
nearest to the anchor; seasons are northern-hemisphere (winter = December–February,
named by the year it starts in). Vague phrases ("recently", "the other day", "a few days
ago") are not resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime

from observations.extract.date_rules import MONTHS, RULES, Granularity, Period, cues

__all__ = ["MONTHS", "Granularity", "ResolvedDate", "day_label", "find_dates", "resolve"]
__all__ += ["rewrite_dates"]

_PREFIX = re.compile(r"(?i)\b(?:back in|during|on|in)\s+$")
_KEEP_PREPOSITION = re.compile(
    r"(?i)\b(?:since|until|till|by|from|before|after|around|of|to|through|than|for|at|about"
    r"|between|into|like)\s+$"
)


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
    def iso(self) -> str:
        """ISO 8601: a date, a year-month, a year, or a start/end interval."""
        if self.granularity == "day":
            return self.start.isoformat()
        if self.granularity == "month":
            return self.start.isoformat()[:7]
        if self.granularity == "year":
            return str(self.start.year)
        return f"{self.start.isoformat()}/{self.end.isoformat()}"


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


def _candidates(text: str, anchor: date) -> list[tuple[int, int, Period]]:
    found = []
    present = cues(text)
    for rule in RULES:
        if present.isdisjoint(rule.needles):
            continue
        for match in rule.regex.finditer(text):
            resolved = rule.resolve(match, anchor, text)
            if resolved is not None:
                found.append((match.start(), match.end(), resolved))
    found.sort(key=lambda c: (c[0], -c[1]))
    return found


def find_dates(text: str, anchor: datetime | date) -> tuple[ResolvedDate, ...]:
    """Every resolvable date phrase in ``text``, resolved against ``anchor``."""
    day = anchor.date() if isinstance(anchor, datetime) else anchor
    chosen: list[ResolvedDate] = []
    taken_until = 0
    for start, end, (first, last, granularity) in _candidates(text, day):
        if start < taken_until:
            continue
        prefix = _PREFIX.search(text[:start])
        begin = prefix.start() if prefix else start
        chosen.append(ResolvedDate(text[begin:end], (begin, end), first, last, granularity))
        taken_until = end
    return tuple(chosen)


def resolve(phrase: str, anchor: datetime | date) -> ResolvedDate | None:
    """Resolve ``phrase`` when the whole of it is one date phrase, else ``None``."""
    stripped = phrase.strip()
    found = find_dates(stripped, anchor)
    if len(found) == 1 and found[0].span == (0, len(stripped)):
        return found[0]
    return None


def rewrite_dates(text: str, anchor: datetime | date) -> tuple[str, tuple[ResolvedDate, ...]]:
    """Replace each date phrase in ``text`` by its absolute form."""
    found = find_dates(text, anchor)
    return apply_dates(text, found), found


def apply_dates(text: str, found: tuple[ResolvedDate, ...]) -> str:
    """``text`` with the date phrases ``found`` in it (by :func:`find_dates`) made absolute."""
    pieces: list[str] = []
    cursor = 0
    for item in found:
        start, end = item.span
        keep_bare = _KEEP_PREPOSITION.search(text[:start]) is not None
        replacement = item.label if keep_bare else item.phrase
        if text[start : start + 1].isupper():
            replacement = replacement[:1].upper() + replacement[1:]
        pieces.extend((text[cursor:start], replacement))
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)
