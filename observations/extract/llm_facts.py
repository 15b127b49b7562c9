"""Validated LLM facts → ``Extracted`` items: turn numbers to event ids, names to owners.

A fact is dropped (and counted under the reason) when it cites no turn
(``no_source_turns``), cites a turn number the model was not shown
(``nonexistent_turn``), cites no user's turn (``no_user_turn``), or names as its
``speaker`` nobody among the users whose turns it cites (``speaker_not_cited``): a fact
about a user rests on that user's own words, so a chat cannot put words in someone
else's memory, and an assistant's or a stranger's statement is nobody's memory. Keys are
normalised to the heuristic extractor's scheme, ``<kind>:<topic>`` in lower case
(``event:<iso date>:<topic>`` for dated events), a single-valued attribute under the
heuristic's own key whatever the model called it ("identity:company" is
``identity:employer``), so a new value supersedes the old one from either extractor.

A fact whose ``ends`` names a belief of its own owner (one the prompt listed) takes that
belief's kind and key, so that supersession ends the belief whatever words the model
chose for the new value ("joined Ridgeway" ends "works at Brightline"); ``fields.ends``
keeps the key it ended. A number that names no belief, or another person's, ends nothing.

The statement goes through the heuristic's post-processing too, in case the model left
what it was told to resolve: first person written as the owner's name, relative dates
made absolute against the time of the latest turn it cites. A dated fact carries the
same date fields as the heuristic's (``event_time`` with its granularity, ``valid_at``,
``precision``). What is still wrong after that (a second-person pronoun, a doubled name…)
is the quality gates' to refuse, as for any extractor.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from ledger.events import check_strings
from observations.extract.base import Extracted, KnownBelief
from observations.extract.dates import rewrite_dates
from observations.extract.llm_prompt import NumberedTurn
from observations.extract.llm_schema import LLMFact
from observations.extract.rewrite import rewrite_persons
from observations.extract.vocabulary import OWN_ATTRIBUTES

_ISO_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
MAX_KEY_PARTS = 4  # after the kind: a key stays short enough for its index


@dataclass(frozen=True, slots=True)
class Mapped:
    """The items made from one reply and the facts dropped, by reason."""

    items: tuple[Extracted, ...]
    dropped: Counter[str]


def slugify(text: str, limit: int = 40) -> str:
    return _NOT_SLUG.sub("-", text.lower()).strip("-")[:limit].strip("-")


def iso_date(value: str | None) -> tuple[str, date] | None:
    """``"2023-05-07"``, ``"2023-05"`` or ``"2023"`` and the first day it denotes."""
    match = _ISO_DATE.match((value or "").strip())
    if match is None:
        return None
    year, month, day = (int(g) if g else 1 for g in match.groups())
    try:
        return match.group(0), date(year, month, day)
    except ValueError:
        return None


# what a model may call an attribute the heuristic keys as one of its own
_ATTRIBUTE_KEYS = {
    **{topic: key for topic, key in OWN_ATTRIBUTES.items() if topic != "job"},
    "workplace": ("identity", "employer"),
    "city": ("identity", "city"),
    "home": ("identity", "city"),
    "residence": ("identity", "city"),
    "location": ("identity", "city"),
}


def fact_key(fact: LLMFact) -> str:
    parts = [slugify(p) for p in fact.key.split(":")]
    parts = [p for p in parts if p]
    if parts and parts[0] == fact.kind:
        parts = parts[1:]
    parts = parts[:MAX_KEY_PARTS]
    own = _ATTRIBUTE_KEYS.get(parts[0]) if len(parts) == 1 else None
    if own is not None and own[0] == fact.kind:
        return ":".join(own)
    if not parts:
        parts = [slugify(fact.topic or "") or slugify(" ".join(fact.statement.split()[1:4]))]
    when = iso_date(fact.event_time)
    if fact.kind == "event" and when and parts[0] != when[0]:
        parts = [when[0], *parts]
    return ":".join([fact.kind, *([p for p in parts if p] or ["general"])])


def _owner(fact: LLMFact, cited: Sequence[NumberedTurn]) -> tuple[str | None, str]:
    """The user the fact is about — one of the users whose turns it cites: the one its
    ``speaker`` names (by display name or id), or the only one cited — or, with None,
    the reason it is dropped."""
    speakers = {t.event.actor_id: t.event.speaker for t in cited if t.event.role == "user"}
    if not speakers:
        return None, "no_user_turn"
    name = fact.speaker.strip().casefold()
    named = [a for a, shown in speakers.items() if name in (shown.casefold(), a.casefold())]
    if len(named) == 1:
        return named[0], ""
    if not name and len(speakers) == 1:
        return next(iter(speakers)), ""
    return None, "speaker_not_cited"


def _valid_from(fact: LLMFact, cited: Sequence[NumberedTurn]) -> datetime:
    said = max(t.event.occurred_at for t in cited)
    when = iso_date(fact.event_time)
    if fact.kind != "event" or when is None:
        return said
    return min(said, datetime.combine(when[1], time(), tzinfo=UTC))  # as the heuristic


_PRECISION = {4: "year", 7: "month", 10: "day"}  # by the length of an ISO date


def _fields(fact: LLMFact, cited: Sequence[NumberedTurn], model: str) -> dict[str, Any]:
    when = iso_date(fact.event_time)
    precision = _PRECISION[len(when[0])] if when else None
    fields: dict[str, Any] = {
        "speaker": fact.speaker or None,
        "topic": fact.topic,
        "event_time": when[0] if when else None,
        "event_time_granularity": precision,
        "valid_at": when[1].isoformat() if when else None,
        "precision": precision,
        "persons": [p for p in fact.persons if p] or None,
        "location": fact.location,
        "source_turns": [t.number for t in cited],
        "extractor": "llm",
        "model": model,
    }
    return {name: value for name, value in fields.items() if value}


def _statement(text: str, owner: str, cited: Sequence[NumberedTurn]) -> str:
    """The model's statement with first person as the owner's name and relative dates made
    absolute against the latest turn it cites."""
    text = " ".join(text.split())
    anchor = max(t.event.occurred_at for t in cited)
    text, _ = rewrite_dates(rewrite_persons(text, owner, None), anchor)
    return text if text[-1:] in ".!?…" else text + "."


def _ended(fact: LLMFact, owner: str, beliefs: Sequence[KnownBelief]) -> KnownBelief | None:
    """The first belief of ``owner`` among those the fact says it ends."""
    for number in fact.ends:
        if 1 <= number <= len(beliefs) and beliefs[number - 1].owner_id == owner:
            return beliefs[number - 1]
    return None


def _item(
    fact: LLMFact, cited: list[NumberedTurn], owner: str, model: str, ended: KnownBelief | None
) -> Extracted:
    name = next(t.event.speaker for t in cited if t.event.actor_id == owner)
    fields = _fields(fact, cited, model)
    if ended is not None:
        fields["ends"] = ended.key
    return Extracted(
        kind=ended.kind if ended else fact.kind,
        key=ended.key if ended else fact_key(fact),
        owner_type="user",
        owner_id=owner,
        statement=_statement(fact.statement, name, cited),
        confidence=fact.confidence,
        importance=fact.importance,
        source_event_ids=tuple(sorted({t.event.id for t in cited})),
        valid_from=_valid_from(fact, cited),
        fields=fields,
    )


def _drop_reason(fact: LLMFact, shown: Mapping[int, NumberedTurn]) -> str | None:
    if not fact.source_turns:
        return "no_source_turns"
    if any(n not in shown for n in fact.source_turns):
        return "nonexistent_turn"
    try:
        check_strings(fact.model_dump())  # what PostgreSQL's text refuses (a NUL)
    except ValueError:
        return "unstorable_text"
    return None


def _map_one(
    fact: LLMFact,
    by_number: Mapping[int, NumberedTurn],
    model: str,
    beliefs: Sequence[KnownBelief],
) -> Extracted | str:
    """The item for one fact, or the reason it is dropped."""
    reason = _drop_reason(fact, by_number)
    if reason is not None:
        return reason
    cited = [by_number[n] for n in sorted(set(fact.source_turns))]
    owner, dropped = _owner(fact, cited)
    if owner is None:
        return dropped
    return _item(fact, cited, owner, model, _ended(fact, owner, beliefs))


def map_facts(
    facts: Sequence[LLMFact],
    shown: Sequence[NumberedTurn],
    model: str,
    beliefs: Sequence[KnownBelief] = (),
) -> Mapped:
    """Items for the facts whose citations name turns in ``shown`` (the model's chunk);
    ``beliefs`` are the numbered beliefs the prompt listed, from 1."""
    by_number = {t.number: t for t in shown}
    items: list[Extracted] = []
    dropped: Counter[str] = Counter()
    for fact in facts:
        mapped = _map_one(fact, by_number, model, beliefs)
        if isinstance(mapped, str):
            dropped[mapped] += 1
        else:
            items.append(mapped)
    return Mapped(tuple(items), dropped)
