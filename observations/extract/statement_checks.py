"""Checks a stored fact statement must pass: a quality gate and an evaluation metric.

Each check names one way a statement fails to be a clean, self-contained atom:

* ``first_or_second_person`` — it says "I", "my", "you", "our"… (quoted text aside);
* ``doubled_name`` — a name written twice in a row ("Maya Chen Chen", "Maya Chen, Maya"),
  or said to be itself ("Marta is Marta, dispatcher at…");
* ``agreement`` — a singular third-person subject with a plural verb ("Maya Chen fly"), a
  plural one or people joined by "and" with a singular verb ("Ana and Tom lives"), or a
  participle for a verb ("Toby become buddies");
* ``leading_filler`` — it opens with a discourse filler ("By the way", "Actually", "So");
* ``trailing_exclamation`` — it ends with "!" or chat noise ("lol", "haha");
* ``unresolved_reference`` — a pronoun or demonstrative as subject or object that names
  nobody ("them", "that", "something", "that fellow fan", "he");
* ``cut_value`` — the value stops inside a name or a number ("pediatric nurse at St" of
  "St. Mary's", "1" of "1:48");
* ``missing_object`` — its verb takes an object and has none: nothing is said of what
  ("Andrew tried.", "Maya Chen loves.", "Tom Okafor bought at the market.");
* ``stray_mark`` — a quotation mark left without its quotation ("Lucía gets the ' yr.",
  when the words quoted were cut out);
* ``relative_date`` — a day said as it was said, not as a date ("has a checkup the
  15th", "shots thursday", "flying to accra end of the month"): true only on the day
  it was said; a day of every week ("every monday", "on mondays") is no such day;
* ``self_object`` — its subject is its own object ("Clarithromycin gave Olu
  clarithromycin", "Chin chin brought chin chin"): a pronoun put back wrong.

:func:`statement_failures` checks a batch (one parse for all of them); the checks that
need no parse are :func:`text_failures`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from observations.extract.analysis import Parsed, Word, analyse
from observations.extract.base import FACT_KINDS, Extracted
from observations.extract.references import CORE, POINTING, THIRD, points_nowhere
from observations.extract.vocabulary import BARE_INFINITIVE_AFTER, words

CHECKS: tuple[str, ...] = (
    "first_or_second_person",
    "doubled_name",
    "agreement",
    "leading_filler",
    "trailing_exclamation",
    "unresolved_reference",
    "cut_value",
    "missing_object",
    "stray_mark",
    "relative_date",
    "self_object",
)
_HABIT = re.compile(r"(?i)\b(?:every|each)\b")  # "every monday instead of friday": a habit
# a day or a span of days named from the day it was said; a rendered date has its year
_RELATIVE_DAY = re.compile(
    r"(?i)\b(?:(?:mon|tues|wednes|thurs|fri|satur|sun)day|today|tonight|"
    r"tomorrow|tmrw|yesterday|(?:this|next|last) (?:week|weekend|month|year)|the (?:\d{1,2})"
    r"(?:st|nd|rd|th)\b(?! of)|(?:end|start|beginning) of (?:the|this|next) (?:week|month|year)|"
    r"\d+ (?:day|week|month|year)s? ago|in \d+ (?:day|week|month)s?)\b(?!s\b)(?!,? \d)"
)
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')
_STRAY_MARK = re.compile(r"""(?:^|\s)['‘’"“”](?=\s|$|[.,;:!?])""")
_PERSONAL = re.compile(
    r"(?<!-)\b(?:I|(?i:me|my|mine|myself|we|our|ours|ourselves|you|your|yours|yourself"
    r"|yourselves)|us|Us)\b(?!['’-]\w)"
)
_FILLER = re.compile(
    r"^(?:by the way|btw|actually|anyway|anyways|so|well|oh|yeah|yes|no|lol|haha\w*|"
    r"honestly|basically|hey|hi|wow|ok|okay|um+|uh+|also|and|but|plus|like|heads up|fyi|tho)\b",
    re.IGNORECASE,
)
_NOISE_END = re.compile(r"(?:!|\b(?:lol|lmao|haha\w*|hehe\w*|xd)\W*|[:;]-?[)dp(]\W*)$", re.I)
_ABBREVIATIONS = words("st dr mt mr mrs ms jr sr ft no vs prof gen capt sgt")
_CONTINUES = re.compile(r"^(?:\.\s*[A-Z0-9]|[:.,]\d|\w|['’]s\b)")
_SINGULAR_SUBJECT_TAGS = ("NN", "NNP")
_PLURAL_ONLY = frozenset(("are", "were", "am", "'re", "'m"))
# verbs that say nothing without what they act on ("Maya tried." — tried what?), in the
# forms a statement writes them (the checks' parse has no lemmas)
_NEED_OBJECT = words(
    """try tries tried love loves loved like likes liked enjoy enjoys enjoyed adore adores
    adored hate hates hated prefer prefers preferred want wants wanted need needs needed
    buy buys bought take takes took make makes made bring brings brought find
    finds found use uses used visit visits visited see sees saw watch watches watched give
    gives gave keep keeps kept own owns owned borrow borrows borrowed grab grabs grabbed
    order orders ordered pick picks picked choose chooses chose have has had"""
)
# what can stand for an object: a direct or clausal object, a complement, an agent, the
# particle of a phrasal verb ("gave up", "took off")
_OBJECT_LIKE = frozenset(
    ("dobj", "obj", "ccomp", "xcomp", "attr", "acomp", "dative", "oprd", "agent", "csubj", "prt")
)


@dataclass(frozen=True, slots=True)
class Statement:
    """A statement to check, with its value and the names it may contain."""

    text: str
    value: str | None = None
    names: tuple[str, ...] = ()


def statement_failures(statements: Sequence[Statement]) -> list[tuple[str, ...]]:
    """The checks each statement fails, in :data:`CHECKS` order (empty: it passes)."""
    parsed = analyse([s.text for s in statements], light=True)
    return [
        _ordered(text_failures(s) + parse_failures(view))
        for s, view in zip(statements, parsed, strict=True)
    ]


def failing_facts(items: Sequence[Extracted], names: Iterable[str]) -> set[int]:
    """The positions of the user facts among ``items`` whose statements fail a check
    (``names``: the participants' display names)."""
    known = tuple(sorted(set(names)))
    facts = [n for n, item in enumerate(items) if item.kind in FACT_KINDS]
    checked = statement_failures([of_item(items[n], known) for n in facts])
    return {n for n, failed in zip(facts, checked, strict=True) if failed}


def of_item(item: Extracted, names: tuple[str, ...] = ()) -> Statement:
    """An extracted fact as a statement to check: its value is ``fields["object"]``."""
    value = item.fields.get("object")
    return Statement(item.statement, value if isinstance(value, str) else None, names)


def _ordered(failed: Iterable[str]) -> tuple[str, ...]:
    found = set(failed)
    return tuple(c for c in CHECKS if c in found)


def text_failures(statement: Statement) -> tuple[str, ...]:
    """The checks that read the text alone."""
    text = statement.text.strip()
    failed = []
    if _PERSONAL.search(_QUOTED.sub(" ", text)):
        failed.append("first_or_second_person")
    if doubled_name(text, statement.names):
        failed.append("doubled_name")
    if _FILLER.match(text):
        failed.append("leading_filler")
    if _NOISE_END.search(text.rstrip(".")):
        failed.append("trailing_exclamation")
    if statement.value and cut_value(text, statement.value):
        failed.append("cut_value")
    if _STRAY_MARK.search(text) or text.count('"') % 2:
        failed.append("stray_mark")
    if _RELATIVE_DAY.search(_QUOTED.sub(" ", text)) and not _HABIT.search(text):
        failed.append("relative_date")
    return tuple(failed)


def doubled_name(text: str, names: Iterable[str]) -> bool:
    """A name, then at once the same name or a part of it ("Maya Chen Chen", "Lena Lena",
    "Maya Chen, Maya", "Maya Chen's Maya Chen"), or said to be itself ("Marta is Marta,
    dispatcher at…": an introduction, which says nothing of her)."""
    parts = {p for name in names for p in (name, *name.split()) if p}
    words = re.findall(r"[A-Z][\w'’-]*", text)
    if any(a == b for a, b in pairwise(words) if _adjacent(text, a, b)):
        return True
    for name in names:
        for part in parts & set(name.split()) | {name}:
            pattern = rf"\b{re.escape(name)}(?:['’]s|\s+(?:is|was))?,?\s+{re.escape(part)}\b"
            if name and re.search(pattern, text):
                return True
    return False


def _adjacent(text: str, first: str, second: str) -> bool:
    return re.search(rf"\b{re.escape(first)},?\s+{re.escape(second)}\b", text) is not None


def cut_value(statement: str, value: str) -> bool:
    """The value stops inside a name or a number of the statement it comes from."""
    value = value.strip()
    last = value.split()[-1].lower() if value.split() else ""
    if last.rstrip(".") in _ABBREVIATIONS and not last.endswith("."):
        return True
    if value.endswith((":", ",", "-")):
        return True
    at = statement.find(value)
    return at >= 0 and _CONTINUES.match(statement[at + len(value) :]) is not None


def parse_failures(parsed: Parsed) -> tuple[str, ...]:
    """The checks that read the parse: agreement, unresolved references, missing objects."""
    failed = []
    if any(_disagrees(parsed, w) for w in parsed.words):
        failed.append("agreement")
    if any(_unresolved(parsed, w) for w in parsed.words):
        failed.append("unresolved_reference")
    if any(_lacks_object(parsed, w) for w in parsed.words):
        failed.append("missing_object")
    if any(_own_object(parsed, w) for w in parsed.words):
        failed.append("self_object")
    return tuple(failed)


def _own_object(parsed: Parsed, word: Word) -> bool:
    """The subject's words are again the object of its verb ("Chin chin brought chin
    chin"); "Marcus ran Marcus's first marathon" has an owner, not the subject, after it."""
    if word.dep != "nsubj" or word.pos not in ("NOUN", "PROPN"):
        return False

    def said(w: Word) -> str:
        return " ".join(parsed.words[i].lower for i in parsed.subtree(w.i))

    return any(said(o) == said(word) for o in parsed.kids(word.head, "dobj", "dative"))


def _lacks_object(parsed: Parsed, word: Word) -> bool:
    """The sentence's main verb takes an object and has none, in the active voice ("Maya
    was given …" and "the car Maya bought" have theirs elsewhere)."""
    if word.dep != "ROOT" or word.pos != "VERB" or word.lower not in _NEED_OBJECT:
        return False
    deps = {k.dep for k in parsed.kids(word.i)}
    if deps & _OBJECT_LIKE or "auxpass" in deps or "nsubjpass" in deps:
        return False
    # "Maya Chen tried sushi and ramen": an object of a verb joined to it counts too
    return not any(parsed.kids(k.i, *_OBJECT_LIKE) for k in parsed.kids(word.i, "conj"))


def _disagrees(parsed: Parsed, word: Word) -> bool:
    """A singular noun or name subject whose finite verb is a plural form; a plural noun
    with its determiner or owner, or people joined by "and", whose finite verb is a singular
    one ("Ana's dogs loves…", "Ana and Tom lives…"); a participle without its auxiliary for
    a verb ("Toby become…")."""
    if word.dep != "nsubj":
        return False
    listed = [k for k in parsed.kids(word.i, "appos") if parsed.kids(k.i, "conj")]
    joined = [word, *(j for w in (word, *listed) for j in parsed.kids(w.i, "conj")), *listed]
    people = len(joined) > 1 and any(w.tag in ("NNP", "NNPS") for w in joined)
    # "ines is…": a lowercase name is at times tagged as a plural noun
    plural = people or (word.tag == "NNS" and bool(parsed.kids(word.i, "poss", "det")))
    singular = word.tag in _SINGULAR_SUBJECT_TAGS and len(joined) == 1
    if not plural and not singular:
        return False
    verb = parsed.words[word.head]
    auxes = [a for a in parsed.kids(verb.i, "aux", "auxpass") if a.tag != "TO" and a.i < verb.i]
    finite = auxes[0] if auxes else verb
    if finite.i < word.i:  # question order or a fragment: nothing to compare
        return False
    if finite.tag == "VBN" and not auxes:
        return True  # "Toby become buddies": a participle is no finite verb
    if plural:
        return finite.tag == "VBZ" or finite.lower == "was"
    if finite.dep == "ccomp" and parsed.words[finite.head].lower in BARE_INFINITIVE_AFTER:
        return False  # "Maya can't help Tom move": a bare infinitive
    bare = finite.tag == "VB" and not auxes and finite.pos in ("VERB", "AUX")
    return finite.tag == "VBP" or bare or finite.lower in _PLURAL_ONLY


def _unresolved(parsed: Parsed, word: Word) -> bool:
    if word.lower in THIRD and word.pos == "PRON" and word.dep in CORE:
        return True
    if word.dep == "ROOT" and word.pos in ("PRON", "NOUN") and word.lower in POINTING:
        return True  # a statement the parser could only hang on "Something"
    return word.pos in ("PRON", "DET", "ADV", "NOUN") and points_nowhere(parsed, word)
