"""Request and response bodies of the HTTP API (validated at the boundary)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Id = Field(min_length=1, max_length=256)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EventsIn(Strict):
    events: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)


class EventResult(BaseModel):
    index: int
    status: Literal["accepted", "duplicate", "rejected"]
    session_id: int | None = None
    field: str | None = None
    reason: str | None = None


class EventsOut(BaseModel):
    results: list[EventResult]
    accepted: int
    duplicates: int
    rejected: int
    sessions_closed: list[int]


class CloseOut(BaseModel):
    session_id: int
    closed: bool  # False: it was already closed


class ScopeIn(Strict):
    user_id: str | None = Field(default=None, min_length=1, max_length=256)
    agent_id: str | None = Field(default=None, min_length=1, max_length=256)


class SearchIn(ScopeIn):
    query: str = Field(min_length=1, max_length=4000)
    limit: int = Field(default=10, ge=1, le=100)
    kinds: list[str] = Field(default_factory=list, max_length=20)
    since: datetime | None = None
    until: datetime | None = None
    history: bool = False


class ContextIn(ScopeIn):
    query: str = Field(min_length=1, max_length=4000)
    channel_id: str | None = Field(default=None, min_length=1, max_length=256)
    budget_tokens: int | None = Field(default=None, ge=50, le=100_000)


class Provenance(BaseModel):
    session_id: int | None
    event_ids: list[int]
    external_ids: list[str]


class EntryOut(BaseModel):
    id: int
    owner_type: str
    owner_id: str
    kind: str
    key: str
    statement: str
    status: str
    confidence: float
    importance: float
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    expired_at: datetime | None
    superseded_by: int | None
    fields: dict[str, Any]
    provenance: Provenance


class SearchHit(BaseModel):
    entry: EntryOut
    score: float
    explain: dict[str, float]


class SearchOut(BaseModel):
    results: list[SearchHit]


class ContextOut(BaseModel):
    text: str
    bundle: dict[str, Any]


class HistoryOut(BaseModel):
    id: int
    entry_id: int
    action: str
    old_statement: str | None
    new_statement: str | None
    old_status: str | None
    new_status: str | None
    actor: str
    reason: str | None
    at: datetime


class ProfileRowOut(BaseModel):
    key: str
    value: str
    statement: str
    confidence: float
    valid_from: datetime
    source_entry_ids: list[int]
    conflicts: list[dict[str, Any]]


class SkillOut(BaseModel):
    id: int
    agent_id: str
    skill_key: str
    goal: str
    steps: list[Any]
    failures: list[Any]
    applies_to: list[str]
    evidence_count: int
    source_entry_ids: list[int]
    status: str
    reviewed_by: str | None
    reviewed_at: datetime | None
    review_reason: str | None


class ReviewIn(Strict):
    decision: Literal["publish", "reject"]
    reviewer: str = Field(min_length=1, max_length=256)
    reason: str | None = Field(default=None, max_length=2000)


class MemoryAddIn(Strict):
    """Remember text for a user: it goes through the ledger and the builder like any chat."""

    user_id: str = Id
    messages: list[dict[str, str]] = Field(min_length=1, max_length=1000)
    channel_id: str | None = Field(default=None, min_length=1, max_length=256)


class EntryEditIn(Strict):
    statement: str = Field(min_length=1, max_length=10_000)


class DeletedOut(BaseModel):
    deleted: int


class ErrorOut(BaseModel):
    error: str
    message: str
    fields: dict[str, Any] = Field(default_factory=dict)
