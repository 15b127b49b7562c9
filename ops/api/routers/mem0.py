"""Mem0-compatible routes: what the ``mem0ai`` package's ``MemoryClient(host=, api_key=)``
calls, so existing Mem0 clients work against memledger unchanged.

Mem0's ``user_id`` / ``agent_id`` map onto memledger scopes; ``run_id`` names the channel
added messages go to. Added messages go through the ledger and the builder like every
other ingest: ``add`` answers ``PENDING`` and the memories appear once the session is
built. Memory ids are entry ids (as strings); history comes from the entry history.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Path, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from ledger.db import Conn
from ledger.errors import EntryNotFound
from ledger.scope import ID_PATTERN, check_id
from observations.edits import (
    active,
    entry_history,
    get_entries,
    get_entry,
    list_owner_entries,
    list_owners,
)
from ops.api import idempotency
from ops.api.deps import Owner, State, TenantConn
from ops.api.errors import ERRORS, MEM0_TAG
from ops.api.idempotency import IdempotencyKey
from ops.api.models import Text, UserId
from ops.usecases.edit import edit, forget_entry, forget_owner
from ops.usecases.remember import chat_messages, default_channel, remember
from retrieval.search import InvalidQuery, Scope, search

router = APIRouter(tags=[MEM0_TAG], responses=ERRORS)
_ENTRY_ID = re.compile(r"[0-9]{1,18}")  # a memory id: an entry id, in ASCII digits


class Mem0Body(BaseModel):
    model_config = ConfigDict(extra="allow")  # Mem0 clients send options we ignore


Filters = dict[str, Any]
_ENTITIES = ("user_id", "agent_id", "run_id", "app_id")


class AddIn(Mem0Body):
    messages: list[dict[str, Any]] = Field(min_length=1, max_length=1000)
    user_id: UserId | None = None
    agent_id: UserId | None = None
    run_id: UserId | None = None
    metadata: dict[str, Any] | None = None
    filters: Filters = Field(default_factory=dict)  # where mem0ai 2.x puts the ids


class SearchIn(Mem0Body):
    query: Annotated[Text, Field(min_length=1, max_length=4000)]
    filters: Filters = Field(default_factory=dict)
    top_k: int = Field(default=10, ge=1, le=100, strict=True)  # a JSON integer, as documented


class ListIn(Mem0Body):
    filters: Filters = Field(default_factory=dict)


def entity_ids(filters: Filters, where: str = "filters") -> dict[str, str]:
    """The entity ids a Mem0 filter names: ``{"user_id": …}``, or an ``AND`` of such
    filters. Anything memledger cannot apply (``OR``, ``NOT``, dates, categories,
    metadata, wildcards) is refused naming it, never ignored: ignoring a filter would
    widen the answer to other users' memories."""
    ids: dict[str, str] = {}
    for key, value in filters.items():
        if key == "AND" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
            found = [entity_ids(part, f"{where}.AND.{i}") for i, part in enumerate(value)]
        elif key in _ENTITIES and value != "*":  # Mem0's wildcard: "any"
            found = [{key: check_id(value, f"{where}.{key}")}]
        else:
            raise InvalidQuery(
                f"unsupported filter {key}={value!r:.40}: use user_id, agent_id, run_id, "
                "app_id (no wildcard) or an AND of them",
                field=f"{where}.{key}",
            )
        for part in found:
            for name, id_ in part.items():
                if ids.setdefault(name, id_) != id_:
                    raise InvalidQuery(f"two values for {name}", field=f"{where}.{name}")
    return ids


def _owners(filters: Filters) -> tuple[str | None, str | None]:
    """The user and agent a search or listing is for; one of them is required (as Mem0
    requires), so no request reads a whole tenant by leaving a filter out."""
    ids = entity_ids(filters)
    if "user_id" not in ids and "agent_id" not in ids:
        raise InvalidQuery("filters need a user_id or an agent_id", field="filters")
    return ids.get("user_id"), ids.get("agent_id")


class UpdateIn(Mem0Body):
    text: Annotated[Text, Field(min_length=1, max_length=10_000)] | None = None
    metadata: dict[str, Any] | None = None


class Memory(BaseModel):
    id: str
    memory: str
    user_id: str | None
    agent_id: str | None
    app_id: str | None = None
    run_id: str | None = None
    hash: str
    metadata: dict[str, Any]
    categories: list[str]
    created_at: str
    updated_at: str
    score: float | None = None


class Page(BaseModel):
    count: int
    next: str | None
    previous: str | None
    results: list[Memory]


class Results(BaseModel):
    results: list[Memory]


class HistoryItem(BaseModel):
    id: str
    memory_id: str
    input: list[dict[str, str]]
    old_memory: str | None
    new_memory: str | None
    user_id: str | None
    event: str
    metadata: dict[str, Any] | None
    created_at: str
    updated_at: str


class Message(BaseModel):
    message: str


class AddOut(BaseModel):
    message: str
    status: str
    event_id: str
    results: list[Memory] = Field(default_factory=list)


class Entity(BaseModel):
    id: str
    name: str
    type: str
    total_memories: int
    created_at: str
    updated_at: str


class Entities(BaseModel):
    count: int
    results: list[Entity]


class Ping(BaseModel):
    status: str
    org_id: str
    project_id: str
    user_email: str | None


@router.get("/v1/ping/")
def ping(owner: Owner) -> Ping:
    """What ``MemoryClient`` checks at start: the key works (org and project = tenant)."""
    return Ping(status="ok", org_id=owner.tenant_id, project_id=owner.tenant_id, user_email=None)


@router.post("/v3/memories/add/", response_model=AddOut)
def add(
    body: AddIn,
    owner: Owner,
    conn: TenantConn,
    state: State,
    tasks: BackgroundTasks,
    idempotency_key: IdempotencyKey = None,
) -> AddOut | Response:
    """Append the messages to the ledger as a session of their own and close it: the
    builder turns them into memories asynchronously. With an ``Idempotency-Key``, a retry
    of the request answers the same and writes nothing."""
    again = idempotency.take(
        conn, owner.tenant_id, idempotency_key, "mem0.add", body, state.clock()
    )
    if again is not None:
        return again
    ids = {**entity_ids(body.filters), **body.model_dump(include=set(_ENTITIES), exclude_none=True)}
    user = ids.get("user_id")
    if user is None:  # memory is learnt from a user's turns; agent_id names the assistant
        raise InvalidQuery("a user_id is required (in filters or at the top)", field="user_id")
    channel = ids.get("run_id") or default_channel("mem0", user)
    remember(
        conn, owner.tenant_id, chat_messages(body.messages), channel=channel, speaker=user,
        assistant=ids.get("agent_id") or "assistant", metadata=body.metadata or {},
        deps=state, defer=tasks.add_task,
    )  # fmt: skip
    event_id = str(uuid.uuid4())
    out = AddOut(message="memory processing queued", status="PENDING", event_id=event_id)
    idempotency.keep(conn, owner.tenant_id, idempotency_key, out)
    return out


@router.post("/v3/memories/search/")
def search_memories(body: SearchIn, owner: Owner, conn: TenantConn, state: State) -> Results:
    """The memories relevant to the query for the user and/or agent in ``filters``."""
    scope = Scope(owner.tenant_id, *_owners(body.filters))
    now = state.clock()
    hits = search(
        conn, scope, body.query, embedder=state.embedder, now=now, limit=body.top_k,
        settings=state.search,
    )  # fmt: skip
    state.access.record(owner.tenant_id, [h.candidate.entry_id for h in hits], now)
    rows = get_entries(conn, owner.tenant_id, [h.candidate.entry_id for h in hits])
    scores = {h.candidate.entry_id: h.score for h in hits}
    return Results(results=[_memory(r).model_copy(update={"score": scores[r["id"]]}) for r in rows])


@router.post("/v3/memories/")
def get_all(
    body: ListIn,
    owner: Owner,
    conn: TenantConn,
    page: int = Query(default=1, ge=1, le=100_000),
    page_size: int = Query(default=100, ge=1, le=1000),
) -> Page:
    """The current memories of the user and/or agent in ``filters``, a page at a time."""
    user_id, agent_id = _owners(body.filters)
    total, rows = list_owner_entries(
        conn,
        owner.tenant_id,
        user_id=user_id,
        agent_id=agent_id,
        limit=page_size,
        offset=(page - 1) * page_size,
    )
    more = page * page_size < total
    return Page(
        count=total,
        next=f"/v3/memories/?page={page + 1}&page_size={page_size}" if more else None,
        previous=f"/v3/memories/?page={page - 1}&page_size={page_size}" if page > 1 else None,
        results=[_memory(r) for r in rows],
    )


@router.get("/v1/memories/{memory_id}/")
def get_memory(memory_id: str, owner: Owner, conn: TenantConn) -> Memory:
    """A current memory (a deleted or replaced one is gone for Mem0; its history stays)."""
    return _memory(_current(conn, owner.tenant_id, memory_id))


def _current(conn: Conn, tenant_id: str, memory_id: str) -> dict[str, Any]:
    return active(get_entry(conn, tenant_id, _entry_id(tenant_id, memory_id)))


@router.put("/v1/memories/{memory_id}/")
def update_memory(
    memory_id: str,
    body: UpdateIn,
    owner: Owner,
    conn: TenantConn,
    state: State,
    tasks: BackgroundTasks,
) -> Memory:
    """Rewrite a memory's text and/or metadata (re-embedded, kept in its history). Mem0's
    ``timestamp`` and ``expiration_date`` are refused rather than ignored: a memory's
    time is when it was said, and memories here decay instead of expiring on a date."""
    for name in ("timestamp", "expiration_date"):
        if (body.model_extra or {}).get(name) is not None:
            raise InvalidQuery(f"{name} cannot be set here", field=name)
    current = _current(conn, owner.tenant_id, memory_id)
    if body.text is None and body.metadata is None:
        return _memory(current)
    row = edit(
        conn,
        owner.tenant_id,
        current["id"],
        body.text or current["canonical_statement"],
        actor=owner.actor,
        deps=state,
        defer=tasks.add_task,
        fields={"metadata": body.metadata} if body.metadata else None,
    )
    return _memory(row)


@router.delete("/v1/memories/{memory_id}/")
def delete_memory(
    memory_id: str, owner: Owner, conn: TenantConn, state: State, tasks: BackgroundTasks
) -> Message:
    entry_id = _entry_id(owner.tenant_id, memory_id)
    defer = tasks.add_task
    forget_entry(conn, owner.tenant_id, entry_id, actor=owner.actor, deps=state, defer=defer)
    return Message(message="Memory deleted successfully!")


@router.delete("/v1/memories/")
def delete_all(
    request: Request,
    owner: Owner,
    conn: TenantConn,
    state: State,
    tasks: BackgroundTasks,
    user_id: str | None = Query(default=None, pattern=ID_PATTERN, max_length=128),
    agent_id: str | None = Query(default=None, pattern=ID_PATTERN, max_length=128),
) -> Message:
    """Delete every memory of a user or of an agent (kept as history). Mem0 deletes the
    memories matching all the ids it is given; here a memory belongs to one owner, and a
    delete cannot be narrowed by chat or app, so anything but one ``user_id`` or one
    ``agent_id`` is refused rather than read as a wider delete."""
    for name in request.query_params:  # org and project: the key's tenant (see ping)
        if name not in ("user_id", "agent_id", "org_id", "project_id"):
            raise InvalidQuery(f"{name} cannot narrow a delete here", field=name)
    if user_id is not None and agent_id is not None:
        raise InvalidQuery(
            "give user_id or agent_id, not both: a memory belongs to one of them",
            field="agent_id",
        )
    owner_type, owner_id = ("user", user_id) if agent_id is None else ("agent", agent_id)
    if owner_id is None:
        raise InvalidQuery("user_id or agent_id is required", field="user_id")
    forget_owner(
        conn, owner.tenant_id, owner_type, owner_id, actor=owner.actor, deps=state,
        defer=tasks.add_task,
    )  # fmt: skip
    return Message(message="Memories deleted successfully!")


@router.delete("/v2/entities/{entity_type}/{entity_id:path}/")
def delete_entity(
    entity_type: Annotated[str, Path(pattern="^(user|agent)$")],
    entity_id: Annotated[str, Path(pattern=ID_PATTERN, max_length=128)],
    owner: Owner,
    conn: TenantConn,
    state: State,
    tasks: BackgroundTasks,
) -> Message:
    """Delete every memory of a user or agent (``delete_users`` and ``reset``; kept as
    history). Apps and runs hold no memories of their own here."""
    forget_owner(
        conn, owner.tenant_id, entity_type, entity_id, actor=owner.actor, deps=state,
        defer=tasks.add_task,
    )  # fmt: skip
    return Message(message="Entity deleted successfully!")


@router.get("/v1/memories/{memory_id}/history/")
def memory_history(memory_id: str, owner: Owner, conn: TenantConn) -> list[HistoryItem]:
    entry_id = _entry_id(owner.tenant_id, memory_id)
    entry = get_entry(conn, owner.tenant_id, entry_id)
    user = entry["owner_id"] if entry["owner_type"] == "user" else None
    return [
        HistoryItem(
            id=str(h["id"]),
            memory_id=str(entry_id),
            input=[],
            old_memory=h["old_statement"],
            new_memory=h["new_statement"],
            user_id=user,
            event=h["action"] if h["action"] in ("ADD", "UPDATE", "DELETE") else "UPDATE",
            metadata={"actor": h["actor"], "reason": h["reason"], "action": h["action"]},
            created_at=h["at"].isoformat(),
            updated_at=h["at"].isoformat(),
        )
        for h in entry_history(conn, owner.tenant_id, entry_id)
    ]


@router.get("/v1/entities/")
def entities(owner: Owner, conn: TenantConn) -> Entities:
    """Users and agents that have memories."""
    rows = list_owners(conn, owner.tenant_id)
    results = [
        Entity(
            id=r["owner_id"],
            name=r["owner_id"],
            type=r["owner_type"],
            total_memories=r["entries"],
            created_at=r["updated_at"].isoformat(),
            updated_at=r["updated_at"].isoformat(),
        )
        for r in rows
    ]
    return Entities(count=len(results), results=results)


def _entry_id(tenant_id: str, memory_id: str) -> int:
    # ASCII digits only: str.isdigit() also passes "²", which int() refuses, and int()
    # would read other scripts' digits ("٣") as an id
    if _ENTRY_ID.fullmatch(memory_id) is None:
        raise EntryNotFound(tenant_id=tenant_id, memory_id=memory_id)
    return int(memory_id)


def _memory(row: dict[str, Any]) -> Memory:
    statement = row["canonical_statement"]
    return Memory(
        id=str(row["id"]),
        memory=statement,
        user_id=row["owner_id"] if row["owner_type"] == "user" else None,
        agent_id=row["owner_id"] if row["owner_type"] == "agent" else None,
        hash=hashlib.md5(statement.encode()).hexdigest(),
        metadata={
            **(row["fields"].get("metadata") or {}),
            "kind": row["kind"],
            "key": row["key"],
            "status": row["status"],
            "valid_from": row["valid_from"].isoformat(),
            "source_external_ids": list(row["source_external_ids"]),
        },
        categories=[row["kind"]],
        created_at=row["recorded_at"].isoformat(),
        updated_at=row["updated_at"].isoformat(),
    )
