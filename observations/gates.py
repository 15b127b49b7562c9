"""Quality gates applied to any extractor's output before anything is written.

``apply_gates`` passes each item through the gates below in this order; an item is
dropped by the first gate it fails, and ``GateResult.dropped`` counts per gate (every gate
is present, zero when it dropped nothing):

* ``bad_provenance`` — no source events, or a source event that is not in the session;
* ``empty_statement`` — an empty statement, or one made only of pronouns and function
  words ("She did it.");
* ``not_self_contained`` — the statement speaks in the first or second person ("I",
  "my", "you", "our"…) instead of naming people (quoted text aside: a quotation, such as
  a tool's error message, may say "your"; an episodic record is a quotation, in the
  speaker's own words, under a header that names who said it to whom);
* ``bad_statement`` — a user fact (not an episodic record, summary or agent experience)
  whose statement fails one of the statement checks of
  :mod:`observations.extract.statement_checks` (a doubled name, a verb that does not
  agree, a leading filler, a trailing exclamation, a pronoun that names nobody, a value
  cut inside a name or number);
* ``low_confidence`` — ``confidence < min_confidence``;
* ``unsupported`` — the statement says things its source events do not: fewer than
  ``min_support`` of its content words occur in the text of its source events (content,
  plus string metadata such as image captions). Words a faithful rewrite adds are not
  held against it: the participants' names, date words, and the framing words the
  heuristic extractor writes ("said", "others", "talked"…). Words are compared by a crude
  stem, so "loves" matches "love" and "painting" matches "paint". A small LLM that adds
  world knowledge nobody said fails here;
* ``duplicate`` — a later item of the session that passed the gates above has the same
  owner and key: memory holds one entry per owner and key, and the last thing said of it
  stands (a repeat, or a change of mind within the session). One sentence that states
  two facts ("Melanie is a nurse and loves to paint" → ``identity:occupation`` and
  ``preference:painting``) is not a duplicate: each feeds its own profile key;
* ``over_cap`` — more than ``max_items`` items: the highest ``importance * confidence``
  are kept (ties by order), session summaries always.

Pure and deterministic: the survivors keep their input order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from observations.extract.base import (
    EPISODIC,
    SESSION_SUMMARY,
    Extracted,
    Extraction,
    SessionEvent,
    SessionInput,
)
from observations.extract.lexicon import SPOKEN_FORMS, wordset
from observations.extract.procedures import SLOT
from observations.extract.statement_checks import failing_facts

GATES: tuple[str, ...] = (
    "bad_provenance",
    "empty_statement",
    "not_self_contained",
    "bad_statement",
    "low_confidence",
    "unsupported",
    "duplicate",
    "over_cap",
)
DEFAULT_MIN_CONFIDENCE = 0.7
DEFAULT_MIN_SUPPORT = 0.5
DEFAULT_MAX_ITEMS = 200


FUNCTION_WORDS = wordset(
    """
    i me my mine myself we us our ours ourselves you your yours yourself yourselves he him
    his himself she her hers herself it its itself they them their theirs themselves
    themself one this that these those there here who whom whose which what a an the and
    or but nor so if then than as of at by for from in into on onto out over under up
    down off about above below after before between through during with without to too
    very just also only not no is am are was were be been being has have had having do
    does did doing done will would shall should can could may might must get got gets
    getting go goes going went gone let lets s t d ll m re ve yes yeah oh ok okay well
    really all any some each every both few more most other such own same again once
    always never ever still even now don doesn didn isn wasn aren weren haven hasn hadn
    won wouldn couldn shouldn cannot mustn shan ain"""
)
_DATE_WORDS = wordset(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday
    friday saturday sunday today yesterday tomorrow tonight day days week weeks weekend
    month months year years spring summer autumn fall winter morning afternoon evening
    night early late mid last next ago since until"""
)
# Words the heuristic extractor's templates add around what was said.
_FRAMING_WORDS = wordset(
    """
    said says say told talked shared photo image picture others user assistant agent
    handled request requested worked working calling call called failed avoid task tool
    succeeded result"""
)
_NOT_CLAIMS = _DATE_WORDS | _FRAMING_WORDS
_PERSONAL_LOWER = wordset(
    "me my mine myself we our ours ourselves you your yours yourself yourselves"
)
_PERSONAL = frozenset(
    {"I", *_PERSONAL_LOWER}
    | {w.capitalize() for w in _PERSONAL_LOWER}
    | {w.upper() for w in _PERSONAL_LOWER}  # "MY FAVORITE DRINK IS TEA"
)
_POSSESSIVE = re.compile(r"['’]s\b")
_WORD = re.compile(r"[^\W\d_]+|\d+")
_WHOLE_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")  # "me-time" is no "me"
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


@dataclass(frozen=True, slots=True)
class GateResult:
    """The items that passed every gate, and how many each gate dropped."""

    items: tuple[Extracted, ...]
    dropped: dict[str, int]


def tokens(text: str) -> list[str]:
    """Lower-cased words and numbers, split at apostrophes, possessive "'s" removed; a
    template's slots ("{city}") are no words."""
    return _WORD.findall(_POSSESSIVE.sub("", SLOT.sub(" ", text.lower())))


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A crude stem that maps inflections to one form: loves/loved/loving → "lov"."""
    if len(word) > 4 and word.endswith(("ies", "ied")):
        word = word[:-3] + "y"
    elif len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith(("ed", "es")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2]:
        word = word[:-1]
    if len(word) > 2 and word.endswith("e"):
        word = word[:-1]
    return word


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for inner in value.values():
            yield from _strings(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _strings(inner)


def event_text(event: SessionEvent) -> str:
    """What an event said: its content plus the strings in its metadata (captions, args)."""
    return " ".join([event.content, *_strings(dict(event.metadata))])


def participant_words(session: SessionInput) -> frozenset[str]:
    """The words of every participant's display name and id."""
    words: set[str] = set()
    for event in session.events:
        words.update(tokens(f"{event.actor_id} {event.actor_name or ''}"))
    return frozenset(words)


def claim_stems(statement: str, ignore: frozenset[str] = frozenset()) -> set[str]:
    """The stems a statement asserts, without names, dates, numbers and framing words."""
    return _claims(tokens(statement), ignore)


def _claims(words: Iterable[str], ignore: frozenset[str]) -> set[str]:
    return {
        stem(w)
        for w in words
        if w not in FUNCTION_WORDS and w not in _NOT_CLAIMS and w not in ignore and not w.isdigit()
    }


def stems_of(text: str) -> set[str]:
    """The stems of a source text's words, and of the words its chat spellings stand for
    ("bday" supports "birthday")."""
    words = tokens(text)
    return {stem(w) for w in words} | {stem(SPOKEN_FORMS[w]) for w in words if w in SPOKEN_FORMS}


def support(statement: str, sources: Iterable[str], ignore: frozenset[str] = frozenset()) -> float:
    """The share of the statement's claimed words found in the source texts (1.0 if none)."""
    said: set[str] = set()
    for text in sources:
        said |= stems_of(text)
    return _share(claim_stems(statement, ignore), said)


def _share(claimed: set[str], said: set[str]) -> float:
    return len(claimed & said) / len(claimed) if claimed else 1.0


def is_first_or_second_person(statement: str) -> bool:
    """Whether the statement says "I", "my", "you", "we"… rather than naming people.
    Quoted text is a quotation (a tool's error message, someone's words) and not held
    against it."""
    return any(w in _PERSONAL for w in _WHOLE_WORD.findall(_QUOTED.sub(" ", statement)))


@dataclass(slots=True)
class _Context:
    events: dict[int, SessionEvent]
    names: frozenset[str]
    min_confidence: float
    min_support: float
    said: dict[int, set[str]] = field(default_factory=dict)  # event id → stems, on demand
    bad: set[int] = field(default_factory=set)  # positions of facts failing a check

    def supported(self, item: Extracted, words: list[str]) -> bool:
        said: set[str] = set()
        for event_id in item.source_event_ids:
            if event_id not in self.said:
                self.said[event_id] = stems_of(event_text(self.events[event_id]))
            said |= self.said[event_id]
        return _share(_claims(words, self.names), said) >= self.min_support


def _failed_gate(item: Extracted, words: list[str], ctx: _Context, at: int) -> str | None:
    """The first per-item gate the item at position ``at`` fails (``words``: its
    statement's tokens)."""
    ids = item.source_event_ids
    if not ids or any(i not in ctx.events for i in ids):
        return "bad_provenance"
    if all(w in FUNCTION_WORDS for w in words):
        return "empty_statement"
    if item.kind != EPISODIC and is_first_or_second_person(item.statement):
        return "not_self_contained"
    if at in ctx.bad:
        return "bad_statement"
    if item.confidence < ctx.min_confidence:
        return "low_confidence"
    if not ctx.supported(item, words):
        return "unsupported"
    return None


def _cap(items: list[Extracted], max_items: int | None) -> list[Extracted]:
    if max_items is None or len(items) <= max_items:
        return items
    summaries = [i for i, item in enumerate(items) if item.kind == SESSION_SUMMARY]
    others = [i for i, item in enumerate(items) if item.kind != SESSION_SUMMARY]
    others.sort(key=lambda i: (-items[i].importance * items[i].confidence, i))
    keep = set(summaries) | set(others[: max(0, max_items - len(summaries))])
    return [item for i, item in enumerate(items) if i in keep]


def _per_item(items: list[Extracted], ctx: _Context, dropped: dict[str, int]) -> list[Extracted]:
    """The items that pass every gate but the cap; counts the others into ``dropped``."""
    passed: dict[tuple[str, str, str], Extracted] = {}
    for at, item in enumerate(items):
        gate = _failed_gate(item, tokens(item.statement), ctx, at)
        if gate is not None:
            dropped[gate] += 1
            continue
        ident = (item.owner_type, item.owner_id, item.key)
        if passed.pop(ident, None) is not None:
            dropped["duplicate"] += 1
        passed[ident] = item  # at the place of the last one said
    return list(passed.values())


def apply_gates(
    extraction: Extraction | Iterable[Extracted],
    session: SessionInput,
    *,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    min_support: float = DEFAULT_MIN_SUPPORT,
    max_items: int | None = DEFAULT_MAX_ITEMS,
) -> GateResult:
    """Drop what should not become memory; ``extraction`` is an ``Extraction`` or items."""
    items = list(extraction.items if isinstance(extraction, Extraction) else extraction)
    events = {e.id: e for e in session.events}
    ctx = _Context(events, participant_words(session), min_confidence, min_support)
    ctx.bad = failing_facts(items, {e.actor_name for e in session.events if e.actor_name})
    dropped = dict.fromkeys(GATES, 0)
    passed = _per_item(items, ctx, dropped)
    kept = _cap(passed, max_items)
    dropped["over_cap"] = len(passed) - len(kept)
    return GateResult(tuple(kept), dropped)
