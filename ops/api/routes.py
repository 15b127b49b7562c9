"""The memledger routes (``/v1/...``): ingest, read, memory management, maintenance."""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, HTTPException, Path, Query, Response
from pydantic import BaseModel

from consolidation.jobs import JOBS, JobScope
from consolidation.runs import point_window, run_job, window_for
from ledger.db import Conn
from ledger.errors import InvalidEvent
from ledger.events import EventIn, parse_events
from ledger.scope import ID_PATTERN, MAX_ID_LENGTH
from ledger.store import AppendResult, append, close_session
from materializers.api import SkillProposal, get_profile, list_skills, review_skill
from observations.builder import MEMORY_METADATA
from observations.edits import (
    InvalidEdit,
    delete_entry,
    delete_owner_entries,
    edit_entry,
    entry_history,
    get_entry,
)
from ops.api import idempotency
from ops.api.app import Owner, State, TenantConn
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
from ops.ingest import accepted_events
from ops.metrics import EVENTS, JOB_RUNS, LATENCY
from ops.scheduler import consolidation_config
from retrieval.bundle import dumps, render_text
from retrieval.context import ContextRequest, build_context, bundle_provenance
from retrieval.recent import recent_messages
from retrieval.search import Filters, Scope, search
from retrieval.types import Scored

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "missing or unknown API key"},
    404: {"model": ErrorOut, "description": "not found in this tenant"},
    422: {"model": ErrorOut, "description": "invalid input; the message names the field"},
}
router = APIRouter(prefix="/v1", responses=ERRORS)
PathId = Annotated[str, Path(pattern=ID_PATTERN, max_length=128)]
RowId = Annotated[int, Path(ge=1, le=2**63 - 1)]


# ------------------------------------------------------------------------------ ingest


@router.post("/events", tags=["ingest"], response_model=EventsOut)
def post_events(body: EventsIn, owner: Owner, state: State, tasks: BackgroundTasks) -> Response:
    """Append a batch of chat events. Each is accepted, a duplicate (its external id was seen:
    a retried delivery, a no-op) or rejected with the reason; the others are written.
    Sessions closed by the batch are queued for building."""
    # The append is its own tenant-scoped transaction: it commits (and lets go of the
    # ledger lock) in the round trip of its writes, before the response is made.
    with state.connection() as conn:
        return _json(_ingest(conn, body.events, owner, state, tasks)[0])


def _ingest(
    conn: Conn,
    events: list[dict[str, Any]],
    owner: KeyOwner,
    state: ApiState,
    tasks: BackgroundTasks,
) -> tuple[EventsOut, AppendResult | None]:
    """Validate each event, append the valid ones, and queue what follows the commit; the
    response, and the append's result (None when no event was valid)."""
    with state.appending:
        results, valid, result = _validate_and_append(conn, events, owner.tenant_id, state)
    ordered = [results[i] for i in range(len(events))]
    counts = {s: sum(r.status == s for r in ordered) for s in ("accepted", "duplicate", "rejected")}
    tasks.add_task(_after_commit, state, owner.tenant_id, valid, result, counts)
    out = EventsOut(
        results=ordered,
        accepted=counts["accepted"],
        duplicates=counts["duplicate"],
        rejected=counts["rejected"],
        sessions_closed=list(result.closed) if result else [],
    )
    return out, result


def _validate_and_append(
    conn: Conn, events: list[dict[str, Any]], tenant_id: str, state: ApiState
) -> tuple[dict[int, EventResult], list[EventIn], AppendResult | None]:
    """Each event's result by position (rejected with the reason, accepted, or a
    duplicate), the valid events, and the append's result (None if none was valid)."""
    now = state.clock()
    limits = state.settings.limits
    results: dict[int, EventResult] = {}
    valid, positions = [], []
    for index, raw in enumerate(events):
        try:
            valid += parse_events([raw], now=now, limits=limits)
            positions.append(index)
        except InvalidEvent as exc:
            results[index] = EventResult(
                index=index, status="rejected", field=exc.field, reason=exc.reason
            )
    result = None
    if valid:
        gap = state.settings.session_gap
        result = append(conn, tenant_id, valid, now=now, gap=gap, limits=limits)
        for outcome in result.outcomes:
            index = positions[outcome.index]
            results[index] = EventResult(
                index=index,
                status=outcome.status,
                session_id=outcome.session_id,
                event_id=outcome.event_id,
            )
    return results, valid, result


def _after_commit(
    state: ApiState,
    tenant_id: str,
    events: list[EventIn],
    result: AppendResult | None,
    counts: dict[str, int],
) -> None:
    """After the response, so once the request's transaction has committed (and let go of
    the ledger lock): the events counted, the recent window, and a build for each session
    the append closed. A request that fails later (a Mem0 add with a bad message) rolls
    back and gets none of this. None of it raises: with Redis down, the window and the
    counts wait (the ledger has the events) and the builds stay in the outbox."""
    state.metrics.add((EVENTS, (status,), n) for status, n in counts.items())
    if result is None:
        return
    if state.window is not None:
        state.window.record(tenant_id, accepted_events(events, result))
    state.queue_builds(tenant_id, result.closed)


@router.post("/sessions/{session_id}/close", tags=["ingest"])
def post_close(
    session_id: RowId, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> CloseOut:
    """Close an open session now (it is queued for building); closing twice is a no-op."""
    closed = close_session(conn, owner.tenant_id, session_id, now=state.clock())
    if closed:
        tasks.add_task(state.queue_builds, owner.tenant_id, [session_id])
    return CloseOut(session_id=session_id, closed=closed)


# ------------------------------------------------------------------------------ read


@router.post("/search", tags=["read"], response_model=SearchOut)
def post_search(body: SearchIn, owner: Owner, conn: TenantConn, state: State) -> Response:
    """Entries relevant to the query within the scope, best first, each with an explain."""
    started = time.perf_counter()
    filters = Filters(
        kinds=tuple(body.kinds), since=body.since, until=body.until, history=body.history
    )
    now = state.clock()
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
def post_context(body: ContextIn, owner: Owner, conn: TenantConn, state: State) -> Response:
    """The context bundle for a query: profile, memories, skills, earlier sessions and the
    open session's recent messages, packed whole-item under the token budget."""
    started = time.perf_counter()
    scope = Scope(owner.tenant_id, body.user_id, body.agent_id)
    now = state.clock()
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
    request = ContextRequest(
        scope=scope,
        query=body.query,
        budget_tokens=body.budget_tokens or state.settings.context_budget_tokens,
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
    messages = chat_messages(body.messages)
    out = remember(messages, channel, body.user_id, "assistant", {}, owner, conn, state, tasks)
    idempotency.keep(conn, tenant, idempotency_key, out)
    return _json(out)


_LITERAL_CHANNEL_IDS = 100  # user ids named as they are in a default channel: up to this long


def default_channel(prefix: str, user_id: str) -> str:
    """The channel a user's remembered messages go to when none is named:
    ``<prefix>-<user id>`` for a user id of up to 100 characters; for a longer one, its
    first characters and a hash of the whole, as long as a channel id may be (longer than
    any of the first kind: distinct users keep distinct channels)."""
    if len(user_id) <= _LITERAL_CHANNEL_IDS:
        return f"{prefix}-{user_id}"
    digest = hashlib.sha256(user_id.encode()).hexdigest()[:16]
    return f"{prefix}-{user_id[: MAX_ID_LENGTH - len(prefix) - 18]}-{digest}"


ROLES = ("user", "assistant", "system")  # the chat roles, stored as the same event roles


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str
    content: str


def chat_messages(raw: list[dict[str, Any]]) -> list[ChatMessage]:
    """Chat messages as OpenAI-style clients send them: a role (user, assistant, system)
    and a content that is text or a list of parts, whose text parts are joined."""
    messages = []
    for i, m in enumerate(raw):
        role, content = m.get("role", "user"), m.get("content")
        if role not in ROLES:
            raise InvalidEdit("role must be user, assistant or system", field=f"messages.{i}.role")
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, dict)]
            content = "\n".join(p for p in parts if isinstance(p, str))
        if not isinstance(content, str):
            raise InvalidEdit("content must be text", field=f"messages.{i}.content")
        messages.append(ChatMessage(role, content))
    return messages


def remember(
    messages: list[ChatMessage],
    channel: str,
    speaker: str,
    assistant: str,
    metadata: dict[str, Any],
    owner: KeyOwner,
    conn: Conn,
    state: ApiState,
    tasks: BackgroundTasks,
) -> EventsOut:
    """Append messages (user turns by ``speaker``) as a session of their own and close it;
    ``metadata`` goes to the memories built from them. The channel must have no open
    session: the messages would join a live chat and close it. A message the ledger
    refuses fails the request (its transaction rolls back)."""
    now = state.clock()
    events = [
        {
            "external_id": f"memory-{uuid.uuid4().hex}",
            "channel_id": channel,
            "role": m.role,
            "actor_id": assistant if m.role == "assistant" else speaker,
            "content": m.content,
            "occurred_at": now,
            "metadata": {MEMORY_METADATA: metadata} if metadata else {},
        }
        for m in messages
    ]
    out, result = _ingest(conn, events, owner, state, tasks)
    for r in out.results:
        if r.status == "rejected":  # the metadata is the request's, the rest each message's
            field = "metadata" if r.field == "metadata" else f"messages.{r.index}.{r.field}"
            raise InvalidEdit(r.reason or "message refused", field=field)
    opened = sorted({r.session_id for r in out.results if r.session_id is not None})
    # Whether the append joined or closed a session it did not open was decided under the
    # ledger lock it holds until this request commits: no chat event slips in between.
    if result is None or not {*opened, *result.closed} <= set(result.opened):
        raise InvalidEdit(
            "the channel has an open session (a live chat): remember into a channel of its own",
            field="channel_id",
        )
    for session_id in opened:
        post_close(session_id, owner, conn, state, tasks)
    return out.model_copy(update={"sessions_closed": sorted({*out.sessions_closed, *opened})})


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
    reproject(state, owner.tenant_id, tasks)
    row = edit_entry(
        conn,
        owner.tenant_id,
        entry_id,
        body.statement,
        embedder=state.embedder,
        actor=owner.actor,
        now=state.clock(),
    )
    return entry_out(row)


@router.delete("/entries/{entry_id}", tags=["memories"])
def delete_one_entry(
    entry_id: RowId, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> DeletedOut:
    """Delete an entry (kept as history: its status becomes deleted)."""
    reproject(state, owner.tenant_id, tasks)
    delete_entry(conn, owner.tenant_id, entry_id, actor=owner.actor, now=state.clock())
    return DeletedOut(deleted=1)


@router.delete("/users/{user_id:path}/entries", tags=["memories"])
def delete_user_entries(
    user_id: PathId, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> DeletedOut:
    """Delete every entry of a user (each kept as history)."""
    reproject(state, owner.tenant_id, tasks)
    n = delete_owner_entries(
        conn, owner.tenant_id, "user", user_id, actor=owner.actor, now=state.clock()
    )
    return DeletedOut(deleted=n)


def reproject(state: ApiState, tenant_id: str, tasks: BackgroundTasks) -> None:
    """Once the request has committed (background tasks run after the response), queue a
    read-model projection: the user profile and skills must drop or change what an edit
    or delete changed. A request that fails queues nothing."""
    tasks.add_task(state.enqueue_projection, tenant_id)


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
        source_entry_ids=list(s.source_entry_ids),
        status=s.status,
        reviewed_by=s.reviewed_by,
        reviewed_at=s.reviewed_at,
        review_reason=s.review_reason,
    )


# ------------------------------------------------------------------------------ operations


class MaintenanceOut(BaseModel):
    job: str
    status: str  # done, or busy (running elsewhere)
    run_id: int | None
    stats: dict[str, Any]


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
    config = consolidation_config(state.settings, state.send_builds)
    with state.connection() as conn:
        # Each step commits on its own, as scheduled runs do: the sweep's closes commit
        # before their builds are handed to the queue (a worker must find them closed).
        conn.autocommit = True
        try:
            scope = JobScope(now=now, tenant_id=owner.tenant_id)
            outcome = run_job(conn, job, config, scope, window=window, clock=state.clock)
        finally:
            conn.autocommit = False
    state.metrics.add([(JOB_RUNS, (job, outcome.status), 1)])
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
