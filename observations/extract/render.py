"""Write a selection of a parsed sentence's words back as text.

Words are written as they were, or as ``replace`` says (a name for a pronoun, an
inflected verb; "" leaves a word out), with the original spacing: a clitic written as a
word of its own ("'m" → "is") gets a space, "n't" stays attached. A date phrase found in
the text (by :mod:`observations.extract.dates`) is written once, absolute: "14 November
2025" after a preposition that takes a bare date ("since", "until", "by"…), else with its
own preposition ("on 14 November 2025", "in March 2026").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from observations.extract.analysis import Parsed, Word
from observations.extract.dates import ResolvedDate
from observations.extract.vocabulary import TITLES, words

_BARE_BEFORE = words(
    """since until till by from before after around of to through than for at about between
    into like"""
)
_NO_SPACE_BEFORE = frozenset(",.;:!?%)]}…")
_ARTICLES = frozenset(("a", "an", "the"))


def render(
    parsed: Parsed,
    indices: Iterable[int],
    replace: Mapping[int, str],
    dates: Sequence[ResolvedDate] = (),
) -> str:
    """The words at ``indices`` (in text order) as text, replaced and dated."""
    pieces: list[str] = []
    previous: int | None = None
    written_dates: set[int] = set()
    for i in sorted(indices):
        word = parsed.words[i]
        date = _date_at(dates, word)
        if date is not None and date in written_dates:
            previous = i
            continue
        if date is not None:
            text = _date_text(parsed, dates[date], pieces)
        else:
            text = replace.get(i, word.text)
        if date is not None:
            written_dates.add(date)
        if not text:
            continue
        if pieces and _spaced(parsed, previous, word, text, i in replace):
            pieces.append(" ")
        pieces.append(text)
        previous = i
    return "".join(pieces).strip()


def _date_at(dates: Sequence[ResolvedDate], word: Word) -> int | None:
    for n, found in enumerate(dates):
        if found.span[0] <= word.start < found.span[1]:
            return n
    return None


def _date_text(parsed: Parsed, found: ResolvedDate, pieces: list[str]) -> str:
    if found.owns_what_follows(parsed.text):
        return found.possessor  # "during 9 March 2025's class", not "on 9 March 2025's"
    before = "".join(pieces).split()
    bare = bool(before) and before[-1].lower() in _BARE_BEFORE
    return found.label if bare else found.phrase


def _spaced(parsed: Parsed, previous: int | None, word: Word, text: str, replaced: bool) -> bool:
    """Whether a space goes before ``word`` (written as ``text``)."""
    if text[0] in _NO_SPACE_BEFORE or text.lower() in ("n't", "'s"):
        return False
    if previous is None or previous != word.i - 1:
        return True
    if replaced and text[:1].isalpha():
        return True  # "'m" written as "is", "gonna" as "going to"
    return parsed.words[previous].space


def strip_article(text: str) -> str:
    """``text`` without a leading article ("a flat white" → "flat white")."""
    first, _, rest = text.partition(" ")
    return rest if first.lower() in _ARTICLES and rest else text


# a title typed in lower case before a name: "prof Ferreira" → "Prof Ferreira"; after
# "dr" and "prof", a name typed in lower case too ("Dr. halvorsen" → "Dr. Halvorsen"; not
# after "ms": "diagnosed with ms last year")
_TITLE = re.compile(rf"\b({'|'.join(TITLES)})(?=\.? [A-Z])")
_TITLED_NAME = re.compile(r"\b(?i:prof|dr)\.? [a-z]")
# a clause's link to the one before it, left at its start ("…, then that weekend we're …")
_LINK = re.compile(r"^(?:and )?then,? ", re.IGNORECASE)


def sentence_case(text: str) -> str:
    """Capitalised, ending with one period; a title and the name after it capitalised; no
    "then" left at the start."""
    text = _TITLED_NAME.sub(lambda m: m[0][:-1] + m[0][-1].upper(), text)
    text = _TITLE.sub(lambda m: m[1].capitalize(), text)
    text = _LINK.sub("", text.strip()).rstrip(",;:-–—").rstrip()
    while text[-1:] in (".", "!", "?", "…"):
        text = text[:-1].rstrip()
    return f"{text[:1].upper()}{text[1:]}." if text else text


def words_text(words: Sequence[Word]) -> str:
    """Words as written, with their spacing."""
    return "".join(w.text + (" " if w.space else "") for w in words).strip()
