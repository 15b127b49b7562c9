"""Verb forms for a subject that became a third-person name ("I fly" → "Maya Chen flies").

:func:`third_person` inflects a base verb by a small rule; :func:`agreeing` takes a parsed
finite verb (its tag and lemma say whether it needs to change) and returns the form that
agrees with a singular third-person subject, or ``None`` when it already does.
"""

from __future__ import annotations

from observations.extract.analysis import Word
from observations.extract.vocabulary import words

IRREGULAR = {"be": "is", "am": "is", "are": "is", "were": "was", "have": "has"}
IRREGULAR.update({"do": "does", "go": "goes", "don't": "doesn't", "haven't": "hasn't"})
IRREGULAR.update({"aren't": "isn't", "weren't": "wasn't", "wanna": "wants to"})
IRREGULAR.update({"gotta": "has got to"})
_NOT_BASE = words(
    """can could will would shall should may might must was were had did am is are got has
    does goes went saw made took came gave found felt said told thought bought brought caught
    taught ran wrote met left kept lost won sent spent built heard knew grew drew flew threw
    ate drove rode sang swam sat stood understood became forgot chose broke spoke woke wore
    fell held led paid put set cut hit let quit shut hurt cost slept dealt meant sold fought
    read gotta wanna gonna ought used"""
)
# verbs whose past is their base form: a present-tense one still takes -s
_SAME_PAST = frozenset(("read", "put", "set", "cut", "hit", "let", "quit", "shut", "hurt", "cost"))
_CLITICS = {"'m": "is", "m": "is", "'re": "is", "re": "is", "'ve": "has", "ve": "has"}
_CLITICS.update({"'ll": "will", "ll": "will"})
_BARE_FORMS = {"'ll": "will", "ll": "will", "wo": "will", "ca": "can", "sha": "shall"}


def third_person(verb: str) -> str:
    """The third-person singular of a base verb: "love" → "loves", "try" → "tries"."""
    lower = verb.lower().replace("’", "'")
    if lower in IRREGULAR:
        return _match_case(verb, IRREGULAR[lower])
    if lower in _NOT_BASE or (lower.endswith("ed") and not lower.endswith("eed")):
        return verb
    if "'" in lower or not lower.isalpha() or lower.endswith("ing"):
        return verb
    if lower.endswith("s") and not lower.endswith("ss"):
        return verb
    if lower.endswith(("ss", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if lower.endswith("y") and len(lower) > 2 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _match_case(original: str, form: str) -> str:
    return form[:1].upper() + form[1:] if original[:1].isupper() else form


def agreeing(word: Word) -> str | None:
    """``word`` (a finite verb after "I", "you" or "we") as it agrees with a singular
    third-person subject; None when it needs no change."""
    lower = word.lower
    if lower in _CLITICS:
        return _CLITICS[lower]
    if word.tag == "MD" or (word.tag == "VBD" and lower != "were"):
        return _written_out(word)
    if lower == "were":
        return _match_case(word.text, "was")
    if word.tag in ("VBP", "VB") and word.pos in ("VERB", "AUX"):
        if lower in _SAME_PAST:
            return _match_case(word.text, lower + "s")  # "I read" now → "reads"
        return _match_case(word.text, third_person(lower))
    return None


def _written_out(word: Word) -> str | None:
    """A contracted modal or past form written as a word ("'d" → "would" or "had")."""
    lower = word.lower
    if lower in ("'d", "d"):
        return "would" if word.tag == "MD" else "had"
    return _BARE_FORMS.get(lower) if lower in ("'ll", "ll") else None


def written_out(word: Word, after: Word | None = None) -> str | None:
    """A clitic verb written as a word, for any subject ("'ll" → "will", "'m" → "am",
    "'s" → "is", or "has" before "been" or "got": ``after`` is the word after it)."""
    lower = word.lower
    if lower == "'s" and word.tag == "VBZ":
        return "has" if after is not None and after.lower in ("been", "got", "gotten") else "is"
    if lower in ("'m", "m"):
        return "am"
    if lower in ("'re", "re"):
        return "are"
    if lower in ("'ve", "ve"):
        return "have"
    return _written_out(word)
