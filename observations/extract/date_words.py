"""The words of date phrases: regex fragments for the candidate finder, and their values."""

from __future__ import annotations

from collections.abc import Iterable

WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAY_ABBR = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3}
_WEEKDAY_ABBR.update({"fri": 4, "sat": 5})  # not "sun": "enjoying this sun"
_MONTH_WORDS: tuple[str, ...] = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
)
_MONTH_WORDS += ("september", "october", "november", "december")
_MONTH_INDEX = {name: i + 1 for i, name in enumerate(_MONTH_WORDS)}
_MONTH_INDEX.update({name[:3]: i + 1 for i, name in enumerate(_MONTH_WORDS)})
_MONTH_INDEX["sept"] = 9
MONTH_NEEDLES = tuple(name[:3] for name in _MONTH_WORDS)
MONTH_NAMES = _MONTH_WORDS

UNITS = ("day", "week", "fortnight", "month", "year", "decade")  # what a count of time counts
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NUMBERS.update({"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12})
_NUMBERS.update({"fifteen": 15, "twenty": 20, "thirty": 30})
_COUPLE = ("a couple of", "a couple", "couple of")
_ORDINALS = {
    word: i + 1
    for i, word in enumerate(
        (
            *("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"),
            *("ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth"),
            *("sixteenth", "seventeenth", "eighteenth", "nineteenth", "twentieth"),
        )
    )
}
_ORDINALS.update({f"twenty-{w}": 20 + n for w, n in list(_ORDINALS.items())[:9]})
_ORDINALS.update({"thirtieth": 30, "thirty-first": 31})


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True)).replace(" ", r"\s+")


NUM = rf"(?P<n>\d{{1,3}}|{_alternation((*_COUPLE, *_NUMBERS))})"
ORD = rf"(?:\d{{1,2}}(?:st|nd|rd|th)|{_alternation(_ORDINALS)})"
REL = r"(?P<rel>last|this\s+past|this\s+coming|this|next)"
WEEKDAY = rf"(?P<wd>{_alternation((*WEEKDAY_NAMES, *_WEEKDAY_ABBR))})"
MON = rf"(?P<mon>{_alternation(_MONTH_INDEX)})\b"
SEASON = r"(?P<season>spring|summer|fall|autumn|winter)"
YEAR = r"(?P<y>(?:19|20)\d\d)"


def number(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else 2 if word in _COUPLE else _NUMBERS[word]


def ordinal(word: str) -> int:
    """A day of the month: "3", "3rd", "third", "twenty-first"."""
    word = word.lower()
    return int(word.rstrip("stndrh")) if word[0].isdigit() else _ORDINALS[word]


def month_number(word: str) -> int:
    return _MONTH_INDEX[word.lower()]


def weekday_name(word: str) -> str:
    word = word.lower()
    return word if word in WEEKDAY_NAMES else WEEKDAY_NAMES[_WEEKDAY_ABBR[word]]


def relation(word: str) -> str:
    word = " ".join(word.lower().split())
    return {"this past": "last", "this coming": "next"}.get(word, word)
