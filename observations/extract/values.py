"""Values with a type, read off a parsed text: amounts of money and doses.

A fact's slot is filled by what its value *is*, not by the topic words around it: "i'm on
48k", "they bumped me to 68k" and "rent is 1450 a month" hold an amount of money; "the doc
put me on metformin, 500mg twice a day" holds a dose. A value is a number (a cardinal, or
a token such as "48k" or "500mg") with what makes it one type, unless it counts the noun
it modifies ("5k steps", "3 kids"):

* **money** — a currency sign or word beside it ("$900", "900 euros", "40 quid"), a
  thousands suffix ("48k", "1.2m"), or a period after it ("1450 a month", "900 per
  month", "85k a year");
* **dose** — a unit of medicine after it or in it ("500mg", "50 mg", "100 mcg", "2000
  iu"), with how often when said ("500mg twice a day").

The value's text is its whole phrase, as written ("$900 a month", "500mg twice a day").
Units, currencies and periods are closed classes: they are the language's, not a rule's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from observations.extract.analysis import Parsed, Word

# a date comes from :mod:`.dates`; a bare number only corrects a value of another type
ValueType = Literal["money", "dose", "date", "number"]

_NUMBER = re.compile(r"^[$€£]?\d[\d,]*(?:\.\d+)?(?P<suffix>[kKmM]|mg|mcg|µg|iu|IU)?$")
_CURRENCY_SIGNS = frozenset("$€£")
_CURRENCY_WORDS = frozenset(
    ("dollars", "dollar", "bucks", "euros", "euro", "pounds", "quid", "usd", "eur", "gbp")
)
_DOSE_UNITS = frozenset(("mg", "mcg", "µg", "iu", "milligrams", "micrograms"))
_PERIODS = frozenset(("day", "week", "month", "year", "annum", "hour", "mo", "yr"))
_PERIODIC = frozenset(("monthly", "yearly", "annually", "weekly", "daily"))
_HOW_OFTEN = frozenset(("once", "twice", "thrice"))


@dataclass(frozen=True, slots=True)
class Value:
    type: ValueType
    words: range  # the phrase's word indices
    text: str
    number: int  # the index of its number
    periodic: bool  # said with a period ("a month", "monthly", "twice a day")


def typed_values(parsed: Parsed, words: Sequence[int]) -> list[Value]:
    """The typed values among ``words`` (indices into ``parsed``), in order."""
    inside = set(words)
    found = []
    for i in sorted(inside):
        word = parsed.words[i]
        number = _NUMBER.match(word.text)
        if number is None or (word.tag != "CD" and number["suffix"] is None and not _signed(word)):
            continue
        value = _value(parsed, word, number["suffix"] or "", inside)
        if value is not None:
            found.append(value)
    return found


def _signed(word: Word) -> bool:
    return word.text[:1] in _CURRENCY_SIGNS


def _value(parsed: Parsed, word: Word, suffix: str, inside: set[int]) -> Value | None:
    words = parsed.words
    counted = words[word.head]
    counts = word.dep in ("nummod", "compound") and counted.i > word.i and counted.pos == "NOUN"
    if counts and counted.lower not in _CURRENCY_WORDS | _DOSE_UNITS:
        return None  # a number counting something ("5k steps", "3 kids")
    start, end = word.i, word.i + 1
    before = words[word.i - 1] if word.i > 0 and word.i - 1 in inside else None
    after = words[end] if end in inside else None
    kind: ValueType | None = None
    if suffix.lower() in _DOSE_UNITS or (after and after.lower in _DOSE_UNITS):
        kind = "dose"
        end += 0 if suffix else 1
    elif suffix.lower() in ("k", "m") or _signed(word):
        kind = "money"
    elif before is not None and before.text in _CURRENCY_SIGNS:
        kind, start = "money", before.i
    elif after is not None and after.lower in _CURRENCY_WORDS:
        kind, end = "money", end + 1
    if kind == "money" and end in inside and words[end].lower in _CURRENCY_WORDS:
        end += 1
    period = _period(parsed, end, inside, dose=kind == "dose")
    if kind is None and period > end:
        kind = "money"  # "1450 a month": an amount paid by the period
    if kind is None:
        return None
    text = _text(parsed, range(start, period))
    return Value(kind, range(start, period), text, word.i, period > end)


def _period(parsed: Parsed, at: int, inside: set[int], *, dose: bool) -> int:
    """Where a period said right after a value ends ("a month", "per year", "monthly";
    for a dose "twice a day", "daily"), or ``at`` when none is."""
    words = parsed.words
    if at not in inside:
        return at
    first = words[at].lower
    if first in _PERIODIC:
        return at + 1
    if dose and first in _HOW_OFTEN:
        at += 1
    per = at + 1 in inside and words[at].lower in ("a", "an", "per", "every", "each", "/")
    return at + 2 if per and words[at + 1].lower in _PERIODS else at


def _text(parsed: Parsed, span: range) -> str:
    pieces = []
    for i in span:
        word = parsed.words[i]
        pieces.append(word.text + (" " if word.space and i != span[-1] else ""))
    return "".join(pieces).strip()


_IT = frozenset(("it", "its", "it's", "'s", "is"))
_AROUND = frozenset(
    ("wait", "no", "nope", "sorry", "actually", "oh", "oops", "now", "ok", "okay", "so", "well")
)


def bare_value(parsed: Parsed) -> Value | None:
    """What a correction says when it says only a value ("wait no sorry its 790 now", "it's
    100mg actually", "its 790 now, they raised it"): "it" and "is" with one number, typed
    or bare (its type then comes from the fact it corrects), and nothing else but words of
    correcting, up to a comma."""
    end = next((w.i for w in parsed.words if w.text in (",", ";", "-")), len(parsed.words))
    said = range(end)
    rest = [parsed.words[i] for i in said if parsed.words[i].pos != "PUNCT"]
    rest = [w for w in rest if w.lower not in _AROUND]
    if not rest or rest[0].lower not in _IT:
        return None
    values = typed_values(parsed, said)
    if not values:
        numbers = [w for w in rest if w.tag == "CD" and _NUMBER.match(w.text)]
        if len(numbers) != 1:
            return None
        n = numbers[0]
        values = [Value("number", range(n.i, n.i + 1), n.text, n.i, False)]
    if len(values) != 1:
        return None
    inside = set(values[0].words)
    others = [w for w in rest if w.i not in inside and w.lower not in _IT]
    return values[0] if not others else None


def revalued(old: str, new: Value) -> str:
    """The value ``old`` put right by ``new``: a bare number takes the place of the first
    number in it ("740 a month", "790" → "790 a month"), a typed value replaces it."""
    if new.type != "number":
        return new.text
    return _FIRST_NUMBER.sub(new.text, old, count=1)


_FIRST_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
