"""Request and response bodies of the HTTP API (validated at the boundary)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ledger.scope import ID_PATTERN

Kind = Literal[
    "preference", "relationship", "experience", "skill", "goal", "constraint", "identity",
    "event", "agent_experience", "session_summary", "episodic", "digest",
]  # fmt: skip
# Text without NUL characters (PostgreSQL text cannot hold them).
Text = Annotated[str, Field(pattern=r"^[^\x00]*$")]
# A user, agent or channel id: 1-128 characters, no control characters or outer spaces.
UserId = Annotated[str, Field(pattern=ID_PATTERN, max_length=128)]


def _text_time(value: object) -> object:
    if isinstance(value, int | float):
        raise ValueError("a time is text (RFC 3339), not a number")
    return value


# A time as the document gives it: RFC 3339 text (pydantic would read a number as seconds
# since 1970).
Time = Annotated[datetime, Field(strict=False), BeforeValidator(_text_time)]


class Strict(BaseModel):
    """A request body: no unknown fields, and each value of the JSON type the document
    gives (no 0 for false, "10" for 10 or 1.0 for 1)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class EventsIn(Strict):
    events: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)


class EventResult(BaseModel):
    index: int
    status: Literal["accepted", "duplicate"]
    session_id: int | None = None  # None for a duplicate
    event_id: int | None = None  # the stored event's id (accepted)


class EventsOut(BaseModel):
    results: list[EventResult]
    accepted: int
    duplicates: int
    sessions_closed: list[int]


class CloseOut(BaseModel):
    session_id: int
    closed: bool  # False: it was already closed


class ScopeIn(Strict):
    user_id: UserId | None = None
    agent_id: UserId | None = None


class SearchIn(ScopeIn):
    query: Annotated[Text, Field(min_length=1, max_length=4000)]
    limit: int = Field(default=10, ge=1, le=100)
    kinds: list[Kind] = Field(default_factory=list, max_length=20)
    since: Time | None = None
    until: Time | None = None
    history: bool = False


class ContextIn(ScopeIn):
    query: Annotated[Text, Field(min_length=1, max_length=4000)]
    channel_id: UserId | None = None
    budget_tokens: int | None = Field(default=None, ge=50, le=100_000)
    # with an agent_id: also offer skill proposals not reviewed yet, marked "unreviewed"
    include_unreviewed_skills: bool = False


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
    evidence_count: int  # independent successes: the sessions the procedure worked in
    failure_count: int  # the sessions it failed in
    successes_since_failure: int
    last_failure_at: datetime | None
    source_entry_ids: list[int]
    status: str
    reviewed_by: str | None
    reviewed_at: datetime | None
    review_reason: str | None


class ReviewIn(Strict):
    decision: Literal["publish", "reject"]
    reviewer: UserId
    reason: Annotated[Text, Field(max_length=2000)] | None = None


class MemoryAddIn(Strict):
    """Remember text for a user: it goes through the ledger and the builder like any chat."""

    user_id: UserId
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=1000)
    channel_id: UserId | None = None


class EntryEditIn(Strict):
    statement: Annotated[Text, Field(min_length=1, max_length=10_000)]


class DeletedOut(BaseModel):
    deleted: int


class MaintenanceOut(BaseModel):
    job: str
    status: str  # done, or busy (running elsewhere)
    run_id: int | None
    stats: dict[str, Any]


class ErrorOut(BaseModel):
    error: str
    message: str
    fields: dict[str, Any] = Field(default_factory=dict)
