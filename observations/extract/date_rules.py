"""The candidate finder behind :mod:`observations.extract.dates`: regex needles that find
date phrases cheaply, each with the resolver that turns a match into a period.

Most resolvers hand a normalised phrase to dateparser (:mod:`.date_library`). Own rules
remain only where the library has no answer: weekends and seasons, "last/next <Month>",
"this <weekday>" in the past tense, a bare year after a preposition, and the choice of a
year for "3 March" or "in May" when no tense decides it (the nearer occurrence).

A rule's regex is tried only when the lower-cased text holds one of its needles (any
digit shows as the needle "0"). Phrases that could be something else need a preposition
before them: a bare month name ("in May", not "you may"), a year ("in 2019", not "2019
meters"), a numeric date ("on 3/14"; and only when one of its numbers is over 12, so the
order of day and month is certain).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date, timedelta

from observations.extract import date_library
from observations.extract.date_library import MovesWith
from observations.extract.date_periods import (
    DAYS_IN,
    SEASON_START,
    Period,
    add_months,
    day_range,
    distance,
    month_range,
    season_range,
    week_range,
    weekend_range,
    year_range,
)
from observations.extract.date_tense import Tense, tense_at
from observations.extract.date_words import (
    MON,
    MONTH_NAMES,
    MONTH_NEEDLES,
    NUM,
    ORD,
    REL,
    SEASON,
    UNITS,
    WEEKDAY,
    WEEKDAY_NAMES,
    YEAR,
    month_number,
    number,
    ordinal,
    relation,
    weekday_name,
)


@dataclass(frozen=True, slots=True)
class Context:
    """What a resolver sees besides its match: the whole text, the anchor day, and the
    tense the caller gave (``None``: read it from the sentence around the match)."""

    text: str
    anchor: date
    tense: Tense | None = None

    def tense_of(self, match: re.Match[str]) -> Tense | None:
        return self.tense or tense_at(self.text, match.start(), match.end())

    def after(self, match: re.Match[str], words: re.Pattern[str]) -> bool:
        """Whether one of ``words`` stands right before the match."""
        return words.search(self.text, max(0, match.start() - 24), match.start()) is not None


Resolver = Callable[[re.Match[str], Context], Period | None]


@dataclass(frozen=True, slots=True)
class Rule:
    regex: re.Pattern[str]
    resolve: Resolver
    needles: frozenset[str]  # the text must contain one of them for ``regex`` to be tried


_PREPOSITIONS = "in|since|from|until|till|by|of|during|around|before|after|on|circa|year"
_PREPOSITION = re.compile(rf"(?i)\b(?:{_PREPOSITIONS})\s+$")
# a month named alone is also a time after "for" ("scheduled my surgery for november")
_BEFORE_MONTH = re.compile(rf"(?i)\b(?:{_PREPOSITIONS}|for)\s+$")
_PLURAL_CONTEXT = re.compile(r"(?i)\b(?:every|each|most|some|other|all)\s+$")
_THE = re.compile(r"(?i)\bthe\s+$")


_MOVES_WITH: dict[str, MovesWith] = {"day": "day", "week": "day", "fortnight": "day"}
_MOVES_WITH.update({"month": "month", "year": "year", "decade": "year"})


def _library(
    query: str, ctx: Context, order: str | None = None, moves_with: MovesWith | None = None
) -> Period | None:
    return date_library.parse(query.lower(), ctx.anchor, None, order, moves_with=moves_with)


_AHEAD_BY = 2  # with no tense, the next occurrence unless the last is less than half as far


def _by_tense(
    query: str, m: re.Match[str], ctx: Context, order: str | None = None
) -> Period | None:
    """A phrase without a year ("3 March", "in May"): in the past tense the latest
    occurrence up to the anchor, in the future the first from it on; with no tense the
    past one only when it is much the nearer ("dentist in april" said in May), since what
    is said of a month with no verb in the past is mostly ahead ("lisbon in november")."""
    tense, query = ctx.tense_of(m), query.lower()
    past = date_library.parse(query, ctx.anchor, "past", order)
    if past is None or tense == "past" or distance(past, ctx.anchor) == 0:
        return past
    future = date_library.parse(query, ctx.anchor, "future", order)
    if tense == "future" or future is None:
        return future
    ahead = distance(future, ctx.anchor) <= _AHEAD_BY * distance(past, ctx.anchor)
    return future if ahead else past


def _as_is(m: re.Match[str], ctx: Context) -> Period | None:
    return _library(re.sub(r"(?i)\b(?:earlier|later)\s+", "", m[0]), ctx, moves_with="day")


def _ago(m: re.Match[str], ctx: Context) -> Period | None:
    unit = m["unit"].lower()
    if unit in DAYS_IN:  # counted in whole days from the anchor
        return _whole_days(-number(m["n"]) * DAYS_IN[unit], ctx)
    return _library(f"{number(m['n'])} {unit} ago", ctx, moves_with=_MOVES_WITH[unit])


def _years_ago_this(m: re.Match[str], ctx: Context) -> Period | None:
    """ "Three years ago this week": this week (month, day) of that many years back."""
    years = number(m["n"])
    try:
        back = ctx.anchor.replace(year=ctx.anchor.year - years)
    except ValueError:  # 29 February
        back = ctx.anchor.replace(year=ctx.anchor.year - years, day=28)
    span = (m["span"] or "day").lower()
    if span == "day":
        return day_range(back)
    return _library(f"this {span}", replace(ctx, anchor=back), moves_with=_MOVES_WITH[span])


def _ahead(m: re.Match[str], ctx: Context) -> Period | None:
    unit = m["unit"].lower()
    if unit in DAYS_IN:
        return _whole_days(number(m["n"]) * DAYS_IN[unit], ctx)
    return _library(f"in {number(m['n'])} {unit}", ctx, moves_with=_MOVES_WITH[unit])


def _whole_days(days: int, ctx: Context) -> Period:
    """ "Two weeks ago" is the day 14 days before the anchor, a day as the dates of a
    statement are (dateparser would give its week)."""
    return day_range(ctx.anchor + timedelta(days=days))


def _relative_unit(m: re.Match[str], ctx: Context) -> Period | None:
    if ctx.after(m, _THE):  # "the last year" is a duration
        return None
    unit = m["unit"].lower()
    return _library(f"{relation(m['rel'])} {unit}", ctx, moves_with=_MOVES_WITH[unit])


def _relative_weekend(m: re.Match[str], ctx: Context) -> Period:
    rel = " ".join(m["rel"].lower().split())
    step = {"last": -1, "this past": -1, "next": 1}.get(rel, 0)
    return weekend_range(ctx.anchor + timedelta(days=7 * step))


def _after_next(m: re.Match[str], ctx: Context) -> Period:
    """ "The weekend after next" said on a weekday: not the coming weekend but the one
    after it; "the week after next": the week after next week."""
    if m["unit"].lower() == "weekend":
        return weekend_range(ctx.anchor + timedelta(days=7))
    return week_range(ctx.anchor + timedelta(days=14))


def _nth_weekday_of(m: re.Match[str], ctx: Context) -> Period | None:
    """ "The second friday of june", "the last monday in may": that day of the month, in
    the year the sentence's tense points to (a plan: the next such day; past: the last),
    else the nearer; "the last friday of the month" (of this month), "… of next month"."""
    weekday = WEEKDAY_NAMES.index(weekday_name(m["wd"]))
    nth = -1 if m["nth"].lower() == "last" else ordinal(m["nth"])
    if m["rel"]:
        month_of = add_months(ctx.anchor, 1 if m["rel"].lower() == "next" else 0)
        found = _nth_weekday(month_of.year, month_of.month, weekday, nth)
        return day_range(found) if found else None
    month = month_number(m["mon"])
    if m["y"]:
        found = _nth_weekday(int(m["y"]), month, weekday, nth)
        return day_range(found) if found else None
    years = range(ctx.anchor.year - 1, ctx.anchor.year + 2)
    days = [d for y in years if (d := _nth_weekday(y, month, weekday, nth)) is not None]
    chosen = _by_tense_among(days, ctx.anchor, ctx.tense_of(m))
    return day_range(chosen) if chosen else None


def _nth_weekday(year: int, month: int, weekday: int, nth: int) -> date | None:
    """The ``nth`` (1-based; -1 the last) ``weekday`` of the month, if it has one."""
    days = [d for d in (date(year, month, n) for n in range(1, month_range(year, month)[1].day + 1))
            if d.weekday() == weekday]  # fmt: skip
    if nth < 0:
        return days[-1]
    return days[nth - 1] if nth <= len(days) else None


def _weekends_ago(m: re.Match[str], ctx: Context) -> Period:
    """ "Two weekends ago": the weekend two before the anchor's last one."""
    return weekend_range(ctx.anchor - timedelta(days=7 * number(m["n"])))


def _weekdays_ago(m: re.Match[str], ctx: Context) -> Period:
    """ "Two saturdays ago": the Saturday one week before the last one (today is none of
    them)."""
    back = (ctx.anchor.weekday() - WEEKDAY_NAMES.index(weekday_name(m["wd"])) - 1) % 7 + 1
    return day_range(ctx.anchor - timedelta(days=back + 7 * (number(m["n"]) - 1)))


def _relative_weekday(m: re.Match[str], ctx: Context) -> Period | None:
    rel, name = relation(m["rel"]), weekday_name(m["wd"])
    if rel == "this" and ctx.tense_of(m) == "past":
        back = (ctx.anchor.weekday() - WEEKDAY_NAMES.index(name)) % 7
        return day_range(ctx.anchor - timedelta(days=back))
    return _library(f"{rel} {name}", ctx, moves_with="day")


def _bare_weekday(m: re.Match[str], ctx: Context) -> Period | None:
    tense = ctx.tense_of(m)
    if tense is None or ctx.after(m, _PLURAL_CONTEXT):
        return None
    return date_library.parse(weekday_name(m["wd"]), ctx.anchor, tense, moves_with="day")


def _relative_month(m: re.Match[str], ctx: Context) -> Period | None:
    month, rel = month_number(m["mon"]), relation(m["rel"])
    if rel == "this" and m["mon"] == "may":  # "this may sound odd"
        return None
    year, anchor = ctx.anchor.year, ctx.anchor
    if rel == "last":
        year -= 1 if month >= anchor.month else 0
    elif rel == "next":
        year += 1 if month <= anchor.month else 0
    return month_range(year, month)


def _relative_season(m: re.Match[str], ctx: Context) -> Period:
    name, rel, anchor = m["season"].lower(), relation(m["rel"]), ctx.anchor
    started = anchor.year if anchor.month >= SEASON_START[name] else anchor.year - 1
    if rel == "last":
        latest = season_range(name, started)
        return latest if latest[1] < anchor else season_range(name, started - 1)
    if rel == "next":
        return season_range(name, started + 1)
    in_winter = name == "winter" and anchor.month in (1, 2)
    return season_range(name, anchor.year - 1 if in_winter else anchor.year)


def _season_of_year(m: re.Match[str], ctx: Context) -> Period:
    return season_range(m["season"].lower(), int(m["y"]))


def _day_of_month(m: re.Match[str], ctx: Context) -> Period | None:
    day, month = ordinal(m["d"]), month_number(m["mon"])
    if m["y"]:
        return _library(f"{day} {MONTH_NAMES[month - 1]} {m['y']}", ctx, moves_with="nothing")
    return _by_tense(f"{day} {MONTH_NAMES[month - 1]}", m, ctx)


def _bare_day(m: re.Match[str], ctx: Context) -> Period | None:
    """ "due on the 3rd" with no month near: that day of this month, the month before or the
    month after, by tense (the latest up to the anchor in the past, the first from it on
    in the future, else the nearer), as :func:`_by_tense` picks a year."""
    if ctx.after(m, _A_MONTH):
        return None  # "next month on the 30th" that month lacks: no other month's 30th
    day, anchor = ordinal(m["d"]), ctx.anchor
    candidates = []
    for months in (-1, 0, 1):
        year, month = divmod(anchor.year * 12 + anchor.month - 1 + months, 12)
        try:
            candidates.append(date(year, month + 1, day))
        except ValueError:  # the 31st of a 30-day month
            continue
    chosen = _by_tense_among(candidates, anchor, ctx.tense_of(m))
    return day_range(chosen) if chosen else None


def _by_tense_among(candidates: list[date], anchor: date, tense: Tense | None) -> date | None:
    """Of the days a phrase may mean, the latest up to the anchor in the past, the first
    from it on in the future, else the nearer."""
    past = [d for d in candidates if d <= anchor]
    future = [d for d in candidates if d >= anchor]
    if tense == "past" or not future:
        return max(past) if past else None
    if tense == "future" or not past:
        return min(future)
    return min((max(past), min(future)), key=lambda d: abs((d - anchor).days))


def _weekday_and_day(m: re.Match[str], ctx: Context) -> Period | None:
    """ "Friday 26 September": without a year, the occurrence nearest the anchor on that
    weekday (the weekday names the year; the sentence's tense is often another event's)."""
    if m["y"]:
        return _day_of_month(m, ctx)
    day, month = ordinal(m["d"]), month_number(m["mon"])
    weekday = WEEKDAY_NAMES.index(weekday_name(m["wd"]))
    fitting = []
    for year in (ctx.anchor.year - 1, ctx.anchor.year, ctx.anchor.year + 1):
        try:
            candidate = date(year, month, day)
        except ValueError:  # 29 February of a common year, 31 April
            continue
        if candidate.weekday() == weekday:
            fitting.append(candidate)
    if not fitting:
        return _day_of_month(m, ctx)
    return day_range(min(fitting, key=lambda d: abs((d - ctx.anchor).days)))


def _month_then_day(m: re.Match[str], ctx: Context) -> Period | None:
    if m["mon"] == "may" and not m["d"][0].isdigit():  # "you may first want to"
        return None
    return _day_of_month(m, ctx)


def _month_of_year(m: re.Match[str], ctx: Context) -> Period | None:
    month = MONTH_NAMES[month_number(m["mon"]) - 1]
    return _library(f"{month} {m['y']}", ctx, moves_with="nothing")


def _bare_month(m: re.Match[str], ctx: Context) -> Period | None:
    if not ctx.after(m, _BEFORE_MONTH) or m[0].endswith("'"):
        return None
    return _by_tense(MONTH_NAMES[month_number(m["mon"]) - 1], m, ctx)


def _iso_day(m: re.Match[str], ctx: Context) -> Period | None:
    return _library(m[0], ctx, moves_with="nothing")


def _numeric_day(m: re.Match[str], ctx: Context) -> Period | None:
    first, second = int(m["a"]), int(m["b"])
    if not ctx.after(m, _PREPOSITION) or (first > 12) == (second > 12) or max(first, second) > 31:
        return None
    order = "DMY" if first > 12 else "MDY"
    if m["y"]:  # a two-digit year takes its century from the base
        return _library(m[0], ctx, order, "nothing" if len(m["y"]) == 4 else None)
    return _by_tense(m[0], m, ctx, order)


def _year(m: re.Match[str], ctx: Context) -> Period | None:
    return year_range(int(m["y"])) if ctx.after(m, _PREPOSITION) else None


_A_MONTH = re.compile(rf"(?i)\b(?:month|{MON})\s*,?\s*$")
# what may follow a day of the month standing alone ("on the 3rd, remind me", "on the 3rd
# at noon"); not a noun ("on the 3rd floor", "on the 2nd try") nor "of" a month
_AFTER_BARE_DAY = (
    r"\s*(?:$|[.,!?;:)]|(?:and|or|but|so|at|in|when|because|then|too|as|if|for|from|to|with|btw"
    r"|lol|i|we|you|he|she|they|it|please|pls|right)\b)"
)
_UNIT = rf"(?P<unit>{'|'.join(UNITS)})s?"
_PART = r"(?:\s+(?:morning|afternoon|evening|night))?"
_DIGIT_NEEDLE = ("0",)
_RELATIONS = ("last", "this", "next")
_SEASONS = tuple(SEASON_START)

RULES: tuple[Rule, ...] = tuple(
    Rule(re.compile(pattern, re.IGNORECASE), handler, frozenset(needles))
    for pattern, handler, needles in (
        (rf"\b(?:(?:earlier|later)\s+)?(?:yesterday|today|tomorrow|tonight){_PART}\b", _as_is,
         ("yesterday", "today", "tomorrow", "tonight")),
        (r"\blast\s+night\b|\bthis\s+(?:morning|afternoon|evening)\b", _as_is, _RELATIONS),
        (rf"\b{NUM}\s+years?\s+ago\s+(?:this\s+(?P<span>week|month)|today)\b", _years_ago_this,
         (" ago",)),
        (rf"\b{NUM}\s+{_UNIT}\s+ago\b", _ago, (" ago",)),
        (rf"\bin\s+{NUM}\s+{_UNIT}(?:'?\s+time)?\b", _ahead, UNITS),
        (rf"\b{NUM}\s+{_UNIT}\s+from\s+now\b", _ahead, ("now",)),
        (rf"\b{REL}\s+(?P<unit>week|month|year)\b", _relative_unit, _RELATIONS),
        (rf"\b{REL}\s+weekend\b", _relative_weekend, ("weekend",)),
        (rf"\b{NUM}\s+weekends\s+ago\b", _weekends_ago, ("weekend",)),
        (r"\bthe\s+(?P<unit>week|weekend)\s+after\s+next\b", _after_next, ("after next",)),
        (rf"\b(?:the\s+)?(?P<nth>first|second|third|fourth|fifth|last|1st|2nd|3rd|4th|5th)\s+"
         rf"{WEEKDAY}\s+(?:of|in)\s+(?:{MON}(?:,?\s+{YEAR}\b)?|(?P<rel>the|this|next)\s+month\b)",
         _nth_weekday_of, ("day",)),
        (rf"\b{NUM}\s+(?P<wd>{'|'.join(WEEKDAY_NAMES)})s\s+ago\b", _weekdays_ago, (" ago",)),
        (rf"\b{REL}\s+{WEEKDAY}\b", _relative_weekday, _RELATIONS),
        (rf"\b(?P<wd>{'|'.join(WEEKDAY_NAMES)})(?!s\b){_PART}\b", _bare_weekday, ("day",)),
        (rf"\b{WEEKDAY},?\s+(?:the\s+)?(?P<d>{ORD}|\d{{1,2}})\s+(?:of\s+)?{MON}(?:,?\s+{YEAR}\b)?",
         _weekday_and_day, ("day",)),
        (rf"\b{REL}\s+{SEASON}\b", _relative_season, _SEASONS),
        (rf"\b(?:the\s+)?{SEASON}\s+(?:of\s+)?{YEAR}\b", _season_of_year, _SEASONS),
        (rf"\b(?P<rel>last|this|next)\s+{MON}(?!')", _relative_month, _RELATIONS),
        (r"\b(?:19|20)\d\d-\d\d-\d\d\b", _iso_day, _DIGIT_NEEDLE),
        (rf"\b(?:the\s+)?(?P<d>{ORD}|\d{{1,2}})\s+(?:of\s+)?{MON}(?:,?\s+{YEAR}\b)?", _day_of_month,
         MONTH_NEEDLES),
        (rf"\b{MON}\s+(?:the\s+)?(?P<d>{ORD}|\d{{1,2}})\b(?!:|\.\d|\s*(?:am|pm|%))(?:,?\s+{YEAR}\b)?",
         _month_then_day, MONTH_NEEDLES),
        (rf"(?:\bon\s+|(?<=\bto\s)|(?<=\bby\s)|(?<=\bfor\s)|(?<=\buntil\s)|(?<=\btill\s))"
         rf"the\s+(?P<d>{ORD})(?={_AFTER_BARE_DAY})", _bare_day, ("the",)),
        (rf"\b{MON},?\s+(?:of\s+)?{YEAR}\b", _month_of_year, MONTH_NEEDLES),
        (rf"\b(?:(?:early|late|mid)[\s-]+)?{MON}'?", _bare_month, MONTH_NEEDLES),
        (r"(?<![\d/.])(?P<a>\d{1,2})/(?P<b>\d{1,2})(?:/(?P<y>\d{4}|\d{2}))?(?![\d/])", _numeric_day,
         _DIGIT_NEEDLE),
        (rf"\b{YEAR}\b(?!-\d)", _year, _DIGIT_NEEDLE),
    )
)  # fmt: skip
_NEEDLES = tuple(sorted({n for rule in RULES for n in rule.needles if n != "0"}))
_DIGIT = re.compile(r"\d")


def cues(text: str) -> set[str]:
    """The needles present in ``text`` (lower-case; any digit shows as "0")."""
    lowered = text.lower()
    present = {n for n in _NEEDLES if n in lowered}
    if _DIGIT.search(text):
        present.add("0")
    return present
