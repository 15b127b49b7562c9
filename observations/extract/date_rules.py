"""The phrase rules behind :mod:`observations.extract.dates`: regexes and resolvers.

Each rule is a regex (case-insensitive; month names must be capitalised so "may" the verb
is no month), a resolver from the match and the anchor day to a (start, end, granularity)
period, and needles: cheap substrings of which the lower-cased text must contain one for
the regex to be tried at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

Granularity = Literal["day", "weekend", "week", "month", "season", "year"]
Period = tuple[date, date, Granularity]
_Handler = Callable[[re.Match[str], date, str], Period | None]
DIGITS: tuple[str, ...] = ("0",)  # every digit is found as the needle "0"

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_INDEX = {name.lower(): i + 1 for i, name in enumerate(MONTHS)}
_MONTH_INDEX.update({name[:3].lower(): i + 1 for i, name in enumerate(MONTHS)})
_MONTH_INDEX["sept"] = 9
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_ABBR = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3}
_WEEKDAY_ABBR.update({"fri": 4, "sat": 5, "sun": 6})
_SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
}
_YEAR_PREPOSITION = re.compile(
    r"(?i)\b(?:in|since|from|until|till|by|of|during|around|before|after|circa|year)\s+$"
)


@dataclass(frozen=True, slots=True)
class Rule:
    regex: re.Pattern[str]
    resolve: _Handler
    needles: frozenset[str]  # the text must contain one of them for ``regex`` to be tried


def _rule(pattern: str, handler: _Handler, needles: tuple[str, ...]) -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), handler, frozenset(needles))


def _shift_month(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _month_range(year: int, month: int) -> Period:
    last_year, last_month = _shift_month(date(year, month, 1), 1)
    return date(year, month, 1), date(last_year, last_month, 1) - timedelta(days=1), "month"


def _week_range(day: date) -> Period:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6), "week"


def _weekend_range(day: date) -> Period:
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
    return saturday, saturday + timedelta(days=1), "weekend"


def _year_range(year: int) -> Period:
    return date(year, 1, 1), date(year, 12, 31), "year"


def _season_range(name: str, year: int) -> Period:
    first = _SEASON_START[name]
    start = date(year, first, 1)
    end_year, end_month = _shift_month(start, 2)
    return start, _month_range(end_year, end_month)[1], "season"


def _day(day: date) -> Period:
    return day, day, "day"


def _number(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _NUMBERS[word]


def _month(word: str) -> int:
    return _MONTH_INDEX[word.lower().rstrip(".")]


def _weekday(word: str) -> int:
    word = word.lower()
    return _WEEKDAYS.index(word) if word in _WEEKDAYS else _WEEKDAY_ABBR[word]


def _relation(word: str) -> str:
    word = " ".join(word.lower().split())
    return {"this past": "last", "this coming": "next"}.get(word, word)


def _offset_days(days: int) -> _Handler:
    return lambda m, anchor, text: _day(anchor + timedelta(days=days))


def _by_unit(unit: str, anchor: date, amount: int) -> Period:
    if unit == "day":
        return _day(anchor + timedelta(days=amount))
    if unit == "week":
        return _week_range(anchor + timedelta(days=7 * amount))
    if unit == "weekend":
        return _weekend_range(anchor + timedelta(days=7 * amount))
    if unit == "month":
        return _month_range(*_shift_month(anchor, amount))
    return _year_range(anchor.year + amount)


def _ago(m: re.Match[str], anchor: date, text: str) -> Period:
    return _by_unit(m["unit"].lower(), anchor, -_number(m["n"]))


def _ahead(m: re.Match[str], anchor: date, text: str) -> Period:
    return _by_unit(m["unit"].lower(), anchor, _number(m["n"]))


def _relative_unit(m: re.Match[str], anchor: date, text: str) -> Period:
    relation, unit = _relation(m["rel"]), m["unit"].lower()
    if unit == "weekend" and " ".join(m["rel"].lower().split()) == "this coming":
        relation = "this"
    return _by_unit(unit, anchor, {"last": -1, "this": 0, "next": 1}[relation])


def _relative_weekday(m: re.Match[str], anchor: date, text: str) -> Period:
    target, relation = _weekday(m["wd"]), _relation(m["rel"])
    if relation == "this":
        return _day(anchor - timedelta(days=anchor.weekday() - target))
    if relation == "last":
        back = (anchor.weekday() - target) % 7 or 7
        return _day(anchor - timedelta(days=back))
    ahead = (target - anchor.weekday()) % 7 or 7
    return _day(anchor + timedelta(days=ahead))


def _relative_month(m: re.Match[str], anchor: date, text: str) -> Period:
    month, relation = _month(m["mon"]), _relation(m["rel"])
    year = anchor.year
    if relation == "last":
        year -= 1 if month >= anchor.month else 0
    elif relation == "next":
        year += 1 if month <= anchor.month else 0
    return _month_range(year, month)


def _relative_season(m: re.Match[str], anchor: date, text: str) -> Period:
    name, relation = m["season"].lower(), _relation(m["rel"])
    started = anchor.year if anchor.month >= _SEASON_START[name] else anchor.year - 1
    if relation == "last":
        latest = _season_range(name, started)
        return latest if latest[1] < anchor else _season_range(name, started - 1)
    if relation == "next":
        return _season_range(name, started + 1)
    in_winter = name == "winter" and anchor.month in (1, 2)
    return _season_range(name, anchor.year - 1 if in_winter else anchor.year)


def _season_of_year(m: re.Match[str], anchor: date, text: str) -> Period:
    return _season_range(m["season"].lower(), int(m["y"]))


def _nearest_year(anchor: date, month: int, day: int) -> int:
    def distance(year: int) -> int:
        try:
            return abs((date(year, month, day) - anchor).days)
        except ValueError:
            return 10**6

    return min((anchor.year - 1, anchor.year, anchor.year + 1), key=distance)


def _day_of_month(m: re.Match[str], anchor: date, text: str) -> Period | None:
    month, day = _month(m["mon"]), int(m["d"])
    year = int(m["y"]) if m["y"] else _nearest_year(anchor, month, day)
    try:
        return _day(date(year, month, day))
    except ValueError:
        return None


def _iso_day(m: re.Match[str], anchor: date, text: str) -> Period | None:
    try:
        return _day(date(int(m["y"]), int(m["m"]), int(m["d"])))
    except ValueError:
        return None


def _month_of_year(m: re.Match[str], anchor: date, text: str) -> Period:
    return _month_range(int(m["y"]), _month(m["mon"]))


def _bare_month(m: re.Match[str], anchor: date, text: str) -> Period:
    month = _month(m["mon"])
    return _month_range(_nearest_year(anchor, month, 15), month)


def _year(m: re.Match[str], anchor: date, text: str) -> Period | None:
    if not _YEAR_PREPOSITION.search(text[: m.start()]):
        return None
    return _year_range(int(m["y"]))


_MON = (
    r"(?P<mon>(?-i:January|February|March|April|May|June|July|August|September|October"
    r"|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec))\b"
)
_NUM = (
    r"(?P<n>\d{1,3}|a\s+couple(?:\s+of)?|couple\s+of|an?|one|two|three|four|five|six|seven"
    r"|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty)"
)
_REL = r"(?P<rel>last|this\s+past|this\s+coming|this|next)"
_WD = (
    r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed"
    r"|thu(?:rs?)?|fri|sat|sun)"
)
_SEASON = r"(?P<season>spring|summer|fall|autumn|winter)"
_YEAR = r"(?P<y>(?:19|20)\d\d)"
_PART = r"(?:\s+(?:morning|afternoon|evening|night))?"

_SEASONS = ("spring", "summer", "fall", "autumn", "winter")
_RELATIONS = ("last", "this", "next")
_UNITS = ("day", "week", "month", "year")
_DAY_OF_MONTH = (
    rf"\b(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}(?:,?\s+{_YEAR}\b)?"
)
_MONTH_DAY = rf"\b{_MON}\s+(?:the\s+)?(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+{_YEAR}\b)?"

RULES: tuple[Rule, ...] = tuple(
    _rule(pattern, handler, needles)
    for pattern, handler, needles in (
        (r"\bthe\s+day\s+before\s+yesterday\b", _offset_days(-2), ("yesterday",)),
        (r"\bthe\s+day\s+after\s+tomorrow\b", _offset_days(2), ("tomorrow",)),
        (rf"\b(?:yesterday{_PART}|last\s+night)\b", _offset_days(-1), ("yesterday", "night")),
        (r"\b(?:(?:earlier|later)\s+)?today\b|\btonight\b", _offset_days(0), ("today", "tonight")),
        (r"\bthis\s+(?:morning|afternoon|evening)\b", _offset_days(0), ("this",)),
        (rf"\btomorrow{_PART}\b", _offset_days(1), ("tomorrow",)),
        (rf"\b{_NUM}\s+(?P<unit>day|weekend|week|month|year)s?\s+ago\b", _ago, (" ago",)),
        (rf"\bin\s+{_NUM}\s+(?P<unit>day|week|month|year)s?(?:'\s+time)?\b", _ahead, _UNITS),
        (rf"\b{_REL}\s+(?P<unit>weekend|week|month|year)\b", _relative_unit, _RELATIONS),
        (rf"\b{_REL}\s+{_WD}\b", _relative_weekday, _RELATIONS),
        (rf"\b{_REL}\s+{_SEASON}\b", _relative_season, _SEASONS),
        (rf"\b(?:the\s+)?{_SEASON}\s+(?:of\s+)?{_YEAR}\b", _season_of_year, _SEASONS),
        (rf"\b(?P<rel>last|this|next)\s+{_MON}", _relative_month, _RELATIONS),
        (r"\b(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d)\b", _iso_day, DIGITS),
        (_DAY_OF_MONTH, _day_of_month, DIGITS),
        (_MONTH_DAY, _day_of_month, DIGITS),
        (rf"\b{_MON},?\s+(?:of\s+)?{_YEAR}\b", _month_of_year, DIGITS),
        (rf"\b(?:in|during)\s+(?:early\s+|late\s+|mid-?)?{_MON}", _bare_month, ("in ", "during ")),
        (rf"\b{_YEAR}\b(?!-\d)", _year, DIGITS),
    )
)
_NEEDLES = tuple(sorted({n for rule in RULES for n in rule.needles if n != "0"}))
_DIGIT = re.compile(r"\d")


def cues(text: str) -> set[str]:
    """The needles present in ``text`` (lower-case; any digit shows as "0")."""
    lowered = text.lower()
    present = {n for n in _NEEDLES if n in lowered}
    if _DIGIT.search(text):
        present.add("0")
    return present
