"""The items a context bundle holds, each with its provenance, and how each is rendered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from observations.extract.dates import day_label
from retrieval.types import Explain, Scored


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Where an item came from: entries, ledger events and the backend's external ids."""

    entry_ids: tuple[int, ...] = ()
    event_ids: tuple[int, ...] = ()
    external_ids: tuple[str, ...] = ()
    session_id: int | None = None

    @classmethod
    def of_entries(
        cls, entry_ids: Sequence[int], sources: Mapping[int, Mapping[str, Any]]
    ) -> Provenance:
        """The provenance of an item built from ``entry_ids`` (a profile row, a skill), the
        first its main one: ``sources`` holds each entry's ``source_session_id``,
        ``source_event_ids`` and ``source_external_ids`` by entry id."""
        found = [sources[i] for i in entry_ids if i in sources]
        return cls(
            entry_ids=tuple(entry_ids),
            event_ids=tuple(dict.fromkeys(x for s in found for x in s["source_event_ids"])),
            external_ids=tuple(dict.fromkeys(x for s in found for x in s["source_external_ids"])),
            session_id=found[0]["source_session_id"] if found else None,
        )

    @classmethod
    def of(cls, s: Scored) -> Provenance:
        c = s.candidate
        return cls(
            entry_ids=(c.entry_id,),
            event_ids=c.source_event_ids,
            external_ids=c.source_external_ids,
            session_id=c.source_session_id,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileItem:
    key: str
    value: str
    statement: str
    valid_from: datetime
    provenance: Provenance


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    statement: str
    valid_from: datetime
    kind: str
    score: float
    explain: Explain
    provenance: Provenance

    @classmethod
    def of(cls, s: Scored) -> MemoryItem:
        c = s.candidate
        return cls(
            statement=c.statement,
            valid_from=c.valid_from,
            kind=c.kind,
            score=s.score,
            explain=s.explain,
            provenance=Provenance.of(s),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryItem:
    statement: str
    started_at: datetime
    ended_at: datetime | None
    topics: tuple[str, ...]
    score: float
    explain: Explain
    provenance: Provenance

    @classmethod
    def of(cls, s: Scored, *, ended_at: datetime | None = None) -> SummaryItem:
        c = s.candidate
        return cls(
            statement=c.statement,
            started_at=c.valid_from,
            ended_at=ended_at or c.valid_to,
            topics=tuple(str(t) for t in c.fields.get("topics", ())),
            score=s.score,
            explain=s.explain,
            provenance=Provenance.of(s),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillItem:
    skill_key: str
    goal: str
    steps: tuple[str, ...]
    evidence_count: int
    provenance: Provenance
    reviewed: bool = True  # published by a reviewer or the policy; False: a proposal


@dataclass(frozen=True, slots=True, kw_only=True)
class RecentMessage:
    speaker: str
    occurred_at: datetime
    content: str
    event_id: int | None = None
    external_id: str | None = None


Item = ProfileItem | MemoryItem | SummaryItem | SkillItem | RecentMessage


def render_item(item: Item) -> str:
    """One item as it appears in the prompt, always with its date (in its own timezone):
    before it, or in the header its statement opens with ("Maya to Atlas, 8 May 2023: …",
    "On 8 May 2023, Maya said to Atlas: …")."""
    match item:
        case ProfileItem():
            return f"[{_day(item.valid_from)}] {item.statement}"
        case MemoryItem():
            header = item.statement.split(":", 1)[0]
            if day_label(item.valid_from.date()) in header and header != item.statement:
                return f"({item.kind}) {item.statement}"  # its date once, in its words
            return f"[{_day(item.valid_from)}] ({item.kind}) {item.statement}"
        case SummaryItem():
            topics = f" (topics: {', '.join(item.topics)})" if item.topics else ""
            return f"[{_window(item.started_at, item.ended_at)}]{topics} {item.statement}"
        case SkillItem():
            steps = [f"  {n}. {step}" for n, step in enumerate(item.steps, 1)]
            plural = "" if item.evidence_count == 1 else "s"
            seen = f"evidence: {item.evidence_count} session{plural}"
            if not item.reviewed:
                seen += ", unreviewed"
            return "\n".join([f"- {item.goal} ({seen})", *steps])
        case RecentMessage():
            return f"[{_minute(item.occurred_at)}] {item.speaker}: {item.content}"


def _day(when: datetime) -> str:
    return when.date().isoformat()


def _minute(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M")


def _window(start: datetime, end: datetime | None) -> str:
    if end is None:
        return _minute(start)
    if end.date() == start.date():
        return f"{_minute(start)}–{end.strftime('%H:%M')}"
    return f"{_minute(start)} – {_minute(end)}"
