"""The memledger routes (``/v1/...``): ingest, read, memory management, maintenance."""

from __future__ import annotations

import math
import time
from datetime import datetime, timedelta
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, BackgroundTasks, HTTPException, Path, Query, Response
from pydantic import BaseModel

from consolidation.jobs import JOBS, JobScope
from consolidation.runs import point_window, window_for
from ledger.scope import ID_PATTERN
from ledger.store import AppendResult
from materializers.api import SkillProposal, get_profile, list_skills, review_skill
from observations.edits import entry_history, get_entry
from ops.api import idempotency
from ops.api.deps import Owner, State, TenantConn
from ops.api.errors import ERRORS
from ops.api.idempotency import IdempotencyKey
from ops.api.keys import KeyOwner
from ops.api.models import (
    CloseOut,
    ContextIn,
    ContextOut,
    DeletedOut,
    EntryEditIn,
    EntryOut,
    ErrorOut,
    EventResult,
    EventsIn,
    EventsOut,
    HistoryOut,
    MaintenanceOut,
    MemoryAddIn,
    ProfileRowOut,
    Provenance,
    ReviewIn,
    SearchHit,
    SearchIn,
    SearchOut,
    SkillOut,
)
from ops.api.state import ApiState
from ops.metrics import LATENCY
from ops.usecases import maintenance
from ops.usecases.edit import edit, forget_entry, forget_owner
from ops.usecases.ingest import close, ingest
from ops.usecases.remember import chat_messages, default_channel, remember
from ops.wiring import consolidation_config
from retrieval.bundle import dumps, render_text
from retrieval.context import ContextRequest, build_context, bundle_provenance
from retrieval.recent import recent_messages
from retrieval.search import Filters, Scope, search
from retrieval.types import Scored

router = APIRouter(prefix="/v1", responses=ERRORS)
PathId = Annotated[str, Path(pattern=ID_PATTERN, max_length=128)]
RowId = Annotated[int, Path(ge=1, le=2**63 - 1)]


# ------------------------------------------------------------------------------ ingest


@router.post("/events", tags=["ingest"], response_model=EventsOut)
def post_events(body: EventsIn, owner: Owner, state: State, tasks: BackgroundTasks) -> Response:
    """Append a batch of chat events, whole or not at all: each is accepted or a duplicate
    (its external id was seen: a retried delivery, a no-op). A batch with an invalid event
    writes nothing and answers 422 ``BatchRejected``, naming every bad event in
    ``fields.rejected`` (index, field, reason). Sessions closed by the batch are queued for
    building."""
    # The append is its own tenant-scoped transaction: it commits (and lets go of the
    # ledger lock) in the round trip of its writes, before the response is made.
    with state.connection() as conn:
        ingested = ingest(conn, owner.tenant_id, body.events, state, tasks.add_task)
    return _json(events_out(ingested.result))


def events_out(result: AppendResult, closed: list[int] | None = None) -> EventsOut:
    """Each event's outcome, the counts, and the sessions closed (the append's, or
    ``closed``)."""
    results = [
        EventResult(index=o.index, status=o.status, session_id=o.session_id, event_id=o.event_id)
        for o in result.outcomes
    ]
    return EventsOut(
        results=results,
        accepted=result.accepted,
        duplicates=result.duplicates,
        sessions_closed=list(result.closed) if closed is None else closed,
    )


@router.post("/sessions/{session_id}/close", tags=["ingest"])
def post_close(
    session_id: RowId, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> CloseOut:
    """Close an open session now (it is queued for building); closing twice is a no-op."""
    closed = close(conn, owner.tenant_id, session_id, state, tasks.add_task)
    return CloseOut(session_id=session_id, closed=closed)


# ------------------------------------------------------------------------------ read


@router.post("/search", tags=["read"], response_model=SearchOut)
async def post_search(body: SearchIn, owner: Owner, state: State) -> Response:
    """Entries relevant to the query within the scope, best first, each with an explain."""
    return await anyio.to_thread.run_sync(_search, body, owner, state, limiter=state.reads)


def _search(body: SearchIn, owner: KeyOwner, state: ApiState) -> Response:
    started = time.perf_counter()
    filters = Filters(
        kinds=tuple(body.kinds), since=body.since, until=body.until, history=body.history
    )
    now = state.clock()
    # search is its own tenant-scoped transaction, a snapshot: reads need no other
    with state.connection() as conn:
        hits = search(
            conn,
            Scope(owner.tenant_id, body.user_id, body.agent_id),
            body.query,
            embedder=state.embedder,
            now=now,
            limit=body.limit,
            filters=filters,
            settings=state.search,
        )
    state.access.record(owner.tenant_id, [h.candidate.entry_id for h in hits], now)
    state.metrics.observe(LATENCY, ("search",), time.perf_counter() - started)
    return _json(SearchOut(results=[_hit(h) for h in hits]))


@router.post("/context", tags=["read"], response_model=ContextOut)
async def post_context(body: ContextIn, owner: Owner, state: State) -> Response:
    """The context bundle for a query: profile, memories, skills, earlier sessions and the
    open session's recent messages, packed whole-item under the token budget."""
    return await anyio.to_thread.run_sync(_context, body, owner, state, limiter=state.reads)


def _context(body: ContextIn, owner: KeyOwner, state: ApiState) -> Response:
    started = time.perf_counter()
    scope = Scope(owner.tenant_id, body.user_id, body.agent_id)
    now = state.clock()
    request = ContextRequest(
        scope=scope,
        query=body.query,
        budget_tokens=body.budget_tokens or state.settings.context_budget_tokens,
        unreviewed_skills=body.include_unreviewed_skills,
    )
    # Each read is its own tenant-scoped transaction (the bundle's a snapshot), so the
    # connection is taken here, not as a dependency (two more hops to a worker thread).
    with state.connection() as conn:
        recent = []
        if body.channel_id is not None:
            recent = recent_messages(
                conn,
                state.window,
                owner.tenant_id,
                body.channel_id,
                limit=state.settings.recent_window,
                participant=body.user_id or body.agent_id,
            )
        bundle = build_context(
            conn,
            request,
            embedder=state.embedder,
            counter=state.counter,
            now=now,
            recent=recent,
            settings=state.search,
        )
    ids = [p.entry_ids[0] for p in bundle_provenance(bundle)]
    state.access.record(owner.tenant_id, ids, now)
    state.metrics.observe(LATENCY, ("context",), time.perf_counter() - started)
    out = dumps({"text": render_text(bundle), "bundle": bundle})  # ContextOut's form
    return Response(out, media_type="application/json")


def _json(body: BaseModel) -> Response:
    """``body`` as the JSON response FastAPI would make of it, serialized in the request's
    worker thread: a sync route returning a model has it validated again in one more
    thread hop, then serialized on the event loop."""
    return Response(body.model_dump_json(), media_type="application/json")


@router.get("/users/{user_id:path}/profile", tags=["read"])
def get_user_profile(user_id: PathId, owner: Owner, conn: TenantConn) -> list[ProfileRowOut]:
    """The user's profile: one row per key, the latest valid fact current, conflicts kept."""
    return [
        ProfileRowOut(
            key=r.key,
            value=r.value,
            statement=r.statement,
            confidence=r.confidence,
            valid_from=r.valid_from,
            source_entry_ids=list(r.source_entry_ids),
            conflicts=[c.as_json() for c in r.conflicts],
        )
        for r in get_profile(conn, owner.tenant_id, user_id)
    ]


@router.get("/agents/{agent_id:path}/skills", tags=["read"])
def get_agent_skills(
    agent_id: PathId,
    owner: Owner,
    conn: TenantConn,
    status: str | None = Query(default=None, pattern="^(proposed|published|rejected)$"),
) -> list[SkillOut]:
    """The agent's skill proposals (optionally in one status)."""
    return [_skill(s) for s in list_skills(conn, owner.tenant_id, agent_id=agent_id, status=status)]


@router.post("/skills/{skill_id}/review", tags=["read"])
def post_review(
    skill_id: RowId, body: ReviewIn, owner: Owner, conn: TenantConn, state: State
) -> SkillOut:
    """Publish or reject a skill proposal; the decision survives new evidence."""
    skill = review_skill(
        conn,
        owner.tenant_id,
        skill_id,
        body.decision,
        body.reviewer,
        body.reason,
        now=state.clock(),
    )
    return _skill(skill)


@router.get("/entries/{entry_id}", tags=["read"])
def get_one_entry(entry_id: RowId, owner: Owner, conn: TenantConn) -> EntryOut:
    """One memory entry with its provenance (whatever its status)."""
    return entry_out(get_entry(conn, owner.tenant_id, entry_id))


@router.get("/entries/{entry_id}/history", tags=["read"])
def get_entry_history(entry_id: RowId, owner: Owner, conn: TenantConn) -> list[HistoryOut]:
    """Every change to the entry, oldest first."""
    return [HistoryOut(**r) for r in entry_history(conn, owner.tenant_id, entry_id)]


# ------------------------------------------------------------------------------ memories


@router.post("/memories", tags=["memories"], response_model=EventsOut)
def post_memories(
    body: MemoryAddIn,
    owner: Owner,
    conn: TenantConn,
    state: State,
    tasks: BackgroundTasks,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Remember messages of a user: appended to the ledger as a session of their own, which
    is closed and built like any other (asynchronously). A message that cannot be stored
    fails the whole request: nothing is written. With an ``Idempotency-Key``, a retry of
    the request answers the same and writes nothing."""
    tenant = owner.tenant_id
    again = idempotency.take(conn, tenant, idempotency_key, "memories", body, state.clock())
    if again is not None:
        return again
    channel = body.channel_id or default_channel("memories", body.user_id)
    remembered = remember(
        conn, tenant, chat_messages(body.messages), channel=channel, speaker=body.user_id,
        assistant="assistant", metadata={}, deps=state, defer=tasks.add_task,
    )  # fmt: skip
    out = events_out(remembered.ingested.result, remembered.sessions_closed)
    idempotency.keep(conn, tenant, idempotency_key, out)
    return _json(out)


@router.put("/entries/{entry_id}", tags=["memories"])
def put_entry(
    entry_id: RowId,
    body: EntryEditIn,
    owner: Owner,
    conn: TenantConn,
    state: State,
    tasks: BackgroundTasks,
) -> EntryOut:
    """Rewrite an entry's statement (re-embedded; the change is in its history)."""
    defer = tasks.add_task
    row = edit(
        conn, owner.tenant_id, entry_id, body.statement, actor=owner.actor, deps=state, defer=defer
    )
    return entry_out(row)


@router.delete("/entries/{entry_id}", tags=["memories"])
def delete_one_entry(
    entry_id: RowId, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> DeletedOut:
    """Delete an entry (kept as history: its status becomes deleted)."""
    defer = tasks.add_task
    forget_entry(conn, owner.tenant_id, entry_id, actor=owner.actor, deps=state, defer=defer)
    return DeletedOut(deleted=1)


@router.delete("/users/{user_id:path}/entries", tags=["memories"])
def delete_user_entries(
    user_id: PathId, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> DeletedOut:
    """Delete every entry of a user (each kept as history)."""
    n = forget_owner(
        conn, owner.tenant_id, "user", user_id, actor=owner.actor, deps=state, defer=tasks.add_task
    )
    return DeletedOut(deleted=n)


# ------------------------------------------------------------------------------ shapes


def entry_out(row: dict[str, Any]) -> EntryOut:
    return EntryOut(
        id=row["id"],
        owner_type=row["owner_type"],
        owner_id=row["owner_id"],
        kind=row["kind"],
        key=row["key"],
        statement=row["canonical_statement"],
        status=row["status"],
        confidence=row["confidence"],
        importance=row["importance"],
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        recorded_at=row["recorded_at"],
        expired_at=row["expired_at"],
        superseded_by=row["superseded_by"],
        fields=row["fields"],
        provenance=Provenance(
            session_id=row["source_session_id"],
            event_ids=list(row["source_event_ids"]),
            external_ids=list(row["source_external_ids"]),
        ),
    )


def _hit(s: Scored) -> SearchHit:
    c = s.candidate
    entry = EntryOut(
        id=c.entry_id,
        owner_type=c.owner_type,
        owner_id=c.owner_id,
        kind=c.kind,
        key=c.key,
        statement=c.statement,
        status=c.status,
        confidence=c.confidence,
        importance=c.importance,
        valid_from=c.valid_from,
        valid_to=c.valid_to,
        recorded_at=_read(c.recorded_at),
        expired_at=c.expired_at,
        superseded_by=c.superseded_by,
        fields=dict(c.fields),
        provenance=Provenance(
            session_id=c.source_session_id,
            event_ids=list(c.source_event_ids),
            external_ids=list(c.source_external_ids),
        ),
    )
    return SearchHit(
        entry=entry, score=s.score, explain={k: float(v) for k, v in s.explain.items()}
    )


def _read(value: datetime | None) -> datetime:
    assert value is not None  # a search reads every entry with its recorded_at
    return value


def _skill(s: SkillProposal) -> SkillOut:
    return SkillOut(
        id=s.id,
        agent_id=s.agent_id,
        skill_key=s.skill_key,
        goal=s.goal,
        steps=list(s.steps),
        failures=list(s.failures),
        applies_to=list(s.applies_to),
        evidence_count=s.evidence_count,
        failure_count=s.failure_count,
        successes_since_failure=s.successes_since_failure,
        last_failure_at=s.last_failure_at,
        source_entry_ids=list(s.source_entry_ids),
        status=s.status,
        reviewed_by=s.reviewed_by,
        reviewed_at=s.reviewed_at,
        review_reason=s.review_reason,
    )


# ------------------------------------------------------------------------------ operations


TOO_SOON: dict[int | str, dict[str, Any]] = {
    429: {"model": ErrorOut, "description": "this job ran for the tenant too recently"}
}


@router.post("/maintenance/{job}", tags=["operations"], responses=TOO_SOON)
def post_maintenance(
    job: Annotated[str, Path(pattern="^(" + "|".join(JOBS) + ")$")],
    owner: Owner,
    state: State,
) -> MaintenanceOut:
    """Run one consolidation job now for the key's tenant (recorded in consolidation_runs,
    skipped while the same job runs elsewhere). A tenant runs each job at most once in each
    clock-aligned window of ``maintenance_interval_seconds``: a second run in the window is
    refused with 429 and ``Retry-After`` (the seconds to its end)."""
    now = state.clock()
    interval = timedelta(seconds=state.settings.maintenance_interval_seconds)
    window = window_for(now, interval) if interval else point_window(now)
    config = consolidation_config(state.settings, state.send_builds, embedder=state.embedder)
    with state.connection() as conn:
        # Each step commits on its own, as scheduled runs do: the sweep's closes commit
        # before their builds are handed to the queue (a worker must find them closed).
        conn.autocommit = True
        try:
            scope = JobScope(now=now, tenant_id=owner.tenant_id)
            outcome = maintenance.run(
                conn, job, config, scope, window=window, clock=state.clock, metrics=state.metrics
            )
        finally:
            conn.autocommit = False
    if outcome.status == "taken":
        wait = max(1, math.ceil((window.end - now).total_seconds()))
        raise HTTPException(
            429,
            f"{job} ran for this tenant less than {interval.total_seconds():g} s ago",
            headers={"Retry-After": str(wait)},
        )
    return MaintenanceOut(
        job=job, status=outcome.status, run_id=outcome.run_id, stats=dict(outcome.stats or {})
    )
