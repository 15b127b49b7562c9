"""The extractor contract: what goes in (a closed session's events) and what comes out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Protocol

from observations.entry import (  # the entry's vocabulary, as extractors use it
    AGENT_EXPERIENCE,
    EPISODIC,
    FACT_KINDS,
    KINDS,
    PROFILE_KINDS,
    SESSION_SUMMARY,
    OwnerType,
)

__all__ = [
    "AGENT_EXPERIENCE",
    "EPISODIC",
    "FACT_KINDS",
    "KINDS",
    "PROFILE_KINDS",
    "SESSION_SUMMARY",
    "OwnerType",
]


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One ledger event as an extractor sees it."""

    id: int
    seq: int
    role: str  # user, assistant, tool_call, tool_result, file, system
    actor_id: str
    actor_name: str | None
    content: str
    occurred_at: datetime  # timezone-aware, the chat backend's time
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def speaker(self) -> str:
        """The name used in self-contained statements: the display name, written as a name
        when it was typed all in lower case ("ines" → "Ines", "maya chen" → "Maya Chen")."""
        if not self.actor_name:
            return self.actor_id
        name = self.actor_name
        return name.title() if name.islower() and name.replace(" ", "").isalpha() else name


@dataclass(frozen=True, slots=True)
class KnownDay:
    """A day an earlier session of the channel tied a word to ("wedding": 14 February
    2026): what "two days before the wedding" counts from."""

    word: str
    day: date


@dataclass(frozen=True, slots=True)
class KnownName:
    """A relation an earlier session of the channel named by their given name ("my wife
    rosa": rosa, the wife of that member): whom "rosa" means when that member says it
    again."""

    given: str  # lower case
    owner_id: str  # the member whose relation they are
    role: str


@dataclass(frozen=True, slots=True)
class KnownBelief:
    """A fact memory holds as current about a member of the session, from before it: what
    an extractor that can read it may say a new fact ends ("works at Brightline" when the
    session says "ever since I joined Ridgeway")."""

    owner_id: str
    kind: str
    key: str
    statement: str


@dataclass(frozen=True, slots=True)
class SessionInput:
    """A closed session handed to an extractor."""

    tenant_id: str
    session_id: int
    channel_id: str
    started_at: datetime
    ended_at: datetime
    events: Sequence[SessionEvent]
    known_days: Sequence[KnownDay] = ()  # the channel's, from its earlier sessions, oldest first
    known_names: Sequence[KnownName] = ()  # likewise: relations named by their given name
    known_beliefs: Sequence[KnownBelief] = ()  # the members' current facts, for extractors


@dataclass(frozen=True, slots=True)
class Extracted:
    """One observation an extractor made, before quality gates.

    ``source_event_ids`` is the provenance: the exact events the item was derived from,
    never the whole session by default. ``fields`` holds the structured parts (predicate,
    object, event_time, persons, entities, location, topic; for agent experiences goal,
    path, failures, applies_to; for summaries topics, decisions, open_questions, entities).
    """

    kind: str
    key: str
    owner_type: OwnerType
    owner_id: str
    statement: str
    confidence: float
    importance: float
    source_event_ids: tuple[int, ...]
    valid_from: datetime
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Extraction:
    """An extractor's result for one session."""

    items: tuple[Extracted, ...]
    extractor: str
    version: str
    fallback_reason: str | None = None


class Extractor(Protocol):
    """Makes a closed session's items. An extractor that reads
    ``SessionInput.known_beliefs`` says so with a ``reads_beliefs = True`` attribute: the
    builder loads them only for one that does."""

    name: str
    version: str

    def extract(self, session: SessionInput) -> Extraction: ...
