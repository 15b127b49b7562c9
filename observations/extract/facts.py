"""User fact atoms: the first-person patterns applied to each sentence of each user turn."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time
from typing import Any

from observations.extract.base import Extracted
from observations.extract.lexicon import TRAILING_WORDS
from observations.extract.patterns import EVENT_NOUNS, NEGATIVE, PATTERNS, FactPattern
from observations.extract.rewrite import PersonRewriter
from observations.extract.text import FUNCTION_WORDS, content_words, ensure_period, slug
from observations.extract.turns import Sentence, Turn

IMPORTANCE = {
    "identity": 0.8,
    "constraint": 0.8,
    "relationship": 0.7,
    "goal": 0.7,
    "event": 0.65,
    "skill": 0.6,
    "preference": 0.6,
    "experience": 0.5,
}
_CLIP = re.compile(
    r"\s+(?:and\s+(?:I|i|we|it|they|he|she|that|then)\b|but\b|because\b|cause\b|so\b|which\b"
    r"|when\b|while\b|since\b|as\s+(?:it|I|they|well|much|long)\b|if\b|though\b|although\b"
    r"|until\b|who\b|whenever\b|lol\b|haha\w*\b|or\s+something\b)"
)
_VAGUE_OBJECT = re.compile(
    r"^(?:it|that|this|those|these|so|you|your|yours|them|him|her|there|one|what|how|when|why"
    r"|where|the\s+way|hearing|seeing|to\s+(?:hear|see|say|thank|tell|let|share|ask|know)"
    r"|say|thank|tell|let|share|ask|know|hear|show|mention|add|remind|congratulate|wish"
    r"|a\s+lot|lots|up|out|back|too|some|something|anything|everything"
    r"|see\s+(?:it|that|this|them|you|your|yours|a\s+(?:photo|pic|picture)|more|another|some)"
    r"|check\s+(?:it|them|that|this)\s+out|help\s*$"
    r"|(?:doing|making|playing|having|getting)\s+(?:it|them|that|this|those|these)\b)\b",
    re.IGNORECASE,
)
_VAGUE_TIME = re.compile(
    r"\b(?:(?:a\s+)?(?:few|couple(?:\s+of)?|several)\s+(?:days|weeks|months|years)\s+ago"
    r"|recently|lately|the\s+other\s+day|a\s+while\s+(?:ago|back)|these\s+days|nowadays"
    r"|back\s+then|last\s+time|(?:the\s+)?next\s+time|some\s?day|soon|right\s+now|sometime"
    r"|one\s+day|at\s+some\s+point|for\s+a\s+while|again)\b",
    re.IGNORECASE,
)
_CLAUSE_START = re.compile(r"(?:^|[,;:]\s*|\b(?:and|but|now|yes|yeah|oh)\s+)$", re.IGNORECASE)
_TRIGGER = re.compile(
    r"(?<![\w'’])(?:(?P<i>I|i)(?:['’](?:m|ve|ll|d))?|(?P<my>[Mm]y)|(?P<me>[Mm]e)"
    r"|(?P<we>[Ww]e)(?:['’](?:re|ve|ll|d))?)(?![\w'’])"
)
_YOU_SOON = re.compile(r"^(?:\S+\s+){0,2}(?:you|your)\b", re.IGNORECASE)
_LOCATION = re.compile(
    r"\b(?:in|at|to|from|near|around|visited)\s+(?P<loc>(?:the\s+)?[A-Z][\w'’-]*"
    r"(?:\s+(?:of\s+)?[A-Z][\w'’-]*)*)"
)
_FIXED_OBJECT_KINDS = ("relationship", "identity")


@dataclass(frozen=True, slots=True)
class FactHit:
    """A fact and the sentence it came from (so uncovered sentences can go episodic)."""

    event_id: int
    sentence_index: int
    item: Extracted


@dataclass(frozen=True, slots=True)
class _Match:
    pattern: FactPattern
    match: re.Match[str]
    obj: str
    key: str


def clip_object(obj: str, sentence: Sentence) -> str:
    """Cut an object phrase at the next clause and drop its date phrases."""
    obj = _CLIP.split(obj, maxsplit=1)[0]
    for found in sentence.dates:
        obj = obj.replace(found.text, " ")
    obj = _VAGUE_TIME.sub(" ", obj)
    words = obj.split()[:10]
    while words and (words[-1].lower() in TRAILING_WORDS or words[-1].lower().endswith("ly")):
        words.pop()
    return " ".join(words)


def _object_ok(kind: str, obj: str) -> bool:
    if kind in _FIXED_OBJECT_KINDS:
        return True
    if not obj or _VAGUE_OBJECT.match(obj) or not content_words(obj, FUNCTION_WORDS):
        return False
    return not (kind == "preference" and _YOU_SOON.match(obj))


def _anchors(sentence: Sentence) -> dict[str, list[int]]:
    """Where each first-person trigger ("i", "my", "me", "we" = I or we) starts."""
    found: dict[str, list[int]] = {"i": [], "my": [], "me": [], "we": []}
    for m in _TRIGGER.finditer(sentence.text):
        found[str(m.lastgroup)].append(m.start())
    found["we"] = sorted(found["we"] + found["i"])
    return found


def _pattern_matches(
    pattern: FactPattern, sentence: Sentence, anchors: dict[str, list[int]]
) -> Iterator[re.Match[str]]:
    """Matches of a pattern, tried only where its trigger word starts (they all begin there)."""
    if pattern.trigger == "any":
        return pattern.regex.finditer(sentence.text)
    matches = (pattern.regex.match(sentence.text, at) for at in anchors[pattern.trigger])
    return (m for m in matches if m is not None)


def _opens_clause(sentence: Sentence, m: re.Match[str]) -> bool:
    return _CLAUSE_START.search(sentence.text[: m.start()]) is not None


def _matches(sentence: Sentence) -> list[_Match]:
    found: dict[str, _Match] = {}
    anchors = _anchors(sentence)
    if not any(anchors.values()):
        return []
    for pattern in PATTERNS:
        for m in _pattern_matches(pattern, sentence, anchors):
            if pattern.clause_start and not _opens_clause(sentence, m):
                continue
            obj = clip_object(m["obj"] or "", sentence)
            if not _object_ok(pattern.kind, obj):
                continue
            if pattern.kind == "relationship":
                obj = " ".join(part for part in (m["role"], m["name"]) if part)
            key = pattern.key(m, obj)
            found.setdefault(key, _Match(pattern, m, obj, key))
    return list(found.values())


def _event_match(sentence: Sentence, matches: list[_Match]) -> _Match | None:
    """A dated sentence about something done or planned is an event."""
    if not sentence.dates:
        return None
    for match in matches:
        if match.pattern.kind in ("experience", "goal"):
            return match
    noun = EVENT_NOUNS.search(sentence.text)
    if noun is None:
        return None
    pattern = FactPattern("event", EVENT_NOUNS, lambda m, o: "", "has", 0.7)
    return _Match(pattern, noun, clip_object(noun["obj"], sentence), "")


def _valid_from(turn: Turn, sentence: Sentence, kind: str) -> datetime:
    said = turn.event.occurred_at
    if kind != "event" or not sentence.dates:
        return said
    # a calendar date is stored as its UTC midnight, the way every date is shown
    start = datetime.combine(sentence.dates[0].start, time(), tzinfo=UTC)
    return min(start, said)


def _fields(turn: Turn, sentence: Sentence, found: _Match, kind: str) -> dict[str, Any]:
    rewriter = PersonRewriter(turn.speaker, turn.addressee)
    fields: dict[str, Any] = {
        "predicate": found.pattern.predicate,
        "object": rewriter.rewrite(found.obj),
        "topic": found.key.split(":", 1)[-1],
        "speaker": turn.speaker,
    }
    persons = [p for p in (found.match.groupdict().get("name"),) if p]
    if turn.addressee and turn.addressee in sentence.rendered and turn.addressee not in persons:
        persons.append(turn.addressee)
    entities = list(sentence.names)
    location = _LOCATION.search(sentence.text)
    if kind == "identity" and found.key in ("identity:origin", "identity:location"):
        fields["location"] = found.obj
    elif location:
        fields["location"] = location["loc"]
    if sentence.dates:
        fields["event_time"] = sentence.dates[0].iso
        fields["event_time_granularity"] = sentence.dates[0].granularity
    if kind == "preference":
        fields["polarity"] = "negative" if NEGATIVE.search(found.match.group(0)) else "positive"
    if persons:
        fields["persons"] = persons
    if entities:
        fields["entities"] = entities
    return fields


def _item(turn: Turn, sentence: Sentence, found: _Match, kind: str) -> Extracted:
    key = found.key
    if kind == "event":
        key = f"event:{sentence.dates[0].iso}:{slug(found.obj)}"
    boost = 0.1 if sentence.dates or sentence.names else 0.0
    return Extracted(
        kind=kind,
        key=key,
        owner_type="user",
        owner_id=turn.event.actor_id,
        statement=ensure_period(sentence.rendered),
        confidence=found.pattern.confidence,
        importance=min(1.0, IMPORTANCE[kind] + boost),
        source_event_ids=(turn.event.id,),
        valid_from=_valid_from(turn, sentence, kind),
        fields=_fields(turn, sentence, found, kind),
    )


def sentence_facts(turn: Turn, sentence: Sentence) -> list[Extracted]:
    """The facts one first-person sentence states (questions state none)."""
    if sentence.question:
        return []
    matches = _matches(sentence)
    event = _event_match(sentence, matches)
    items = [_item(turn, sentence, event, "event")] if event else []
    for found in matches:
        if found is event or (event and found.pattern.kind in ("experience", "goal")):
            continue
        items.append(_item(turn, sentence, found, found.pattern.kind))
    return items


def extract_facts(turns: tuple[Turn, ...]) -> list[FactHit]:
    """Every fact in the users' turns, in session order."""
    hits = []
    for turn in turns:
        if turn.event.role != "user":
            continue
        for sentence in turn.sentences:
            for item in sentence_facts(turn, sentence):
                hits.append(FactHit(turn.event.id, sentence.index, item))
    return hits
