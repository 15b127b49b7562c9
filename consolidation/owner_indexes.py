"""The ``owner_indexes`` job: a partial HNSW index of its own for every owner with many
active entries, dropped again when the owner shrinks.

Through the table's HNSW index, a search of one owner's entries visits entries of every
owner and rejects the others' after reading their rows: at a million entries a scope of
10,000 costs tens of milliseconds either through the index or ranked exactly. A partial
index over the owner's own active entries (``WHERE tenant_id = … AND owner_type = … AND
owner_id = … AND embedding_model = … AND status = 'active'``) serves the same search from
a graph that holds nothing else; search picks it by its name
(:func:`ledger.owner_indexes.owner_index_name`) once it is valid.

Two more kinds of owner are indexed by their condition: a user's entries in channels, the
*participant* (the channel entries naming the user in ``fields.participant_ids``: the
summaries of the sessions they took part in), and what an agent learnt from one user or
alone (``learnt_from IN (user, '')``), *learnt*: a user's scope with the agent holds
those, and the agent's own graph, holding what it learnt from everyone, cannot serve it.

An owner gets one at ``min_entries`` active entries of an indexed model and keeps it
until it falls below half of that, so an owner near the line is not rebuilt back and
forth (below its line, an owner without an index takes no room under the cap). A
participant or a learnt part gets its own at half the line: it is searched beside
its user's own entries, a large scope when it is large itself, where a part without an
index is counted and then read row by row (a user's channel entries one channel at a
time). At most ``max_indexes`` owners have one, the largest: the planner weighs every
index of the table for every query on it (≈ 3 µs each), and each insert checks every
index's predicate. Builds and drops are ``CONCURRENTLY``: writes go on meanwhile, and a build that
dies leaves an invalid index, which the next run drops and builds again. Each index's
comment names its owner, so a run for one tenant touches that tenant's indexes only.
Call it on an autocommit connection, as the owner role (it creates indexes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import structlog
from psycopg import sql

from ledger.db import Conn
from ledger.owner_indexes import LEARNT, PARTICIPANT, PREFIX, learnt_owner, owner_index_name
from ledger.sqlfile import load_queries
from observations.embed_local import LOCAL_MODELS, MODEL_DIM

Q = load_queries("consolidation")
log = structlog.get_logger(__name__)
# the models whose entries have HNSW indexes (the two local builds), with their dimension
INDEXED = dict.fromkeys(LOCAL_MODELS, MODEL_DIM)
# what names an owner's index: in its name (hashed) and its comment (JSON)
_KEYS = ("tenant_id", "owner_type", "owner_id", "embedding_model")


@dataclass(frozen=True, slots=True)
class OwnerIndexPolicy:
    """An owner gets its own index at ``min_entries`` active entries (a participant or a
    learnt part at half of that; 0: never); at most
    ``max_indexes`` owners (across tenants), the largest, have one. A concurrent build
    waits for every transaction older than it: one left open longer than ``build_wait``
    fails the run, and the invalid index it leaves is built again by the next."""

    min_entries: int = 2000
    max_indexes: int = 100
    build_wait: timedelta = timedelta(minutes=10)


def run_owner_indexes(
    conn: Conn, tenant_id: str | None, *, policy: OwnerIndexPolicy
) -> dict[str, Any]:
    """Build the missing indexes and drop those no longer wanted."""
    existing = conn.execute(Q["owner_indexes"], {"prefix": f"{PREFIX}%"}).fetchall()
    mine, others = [], 0
    for ix in existing:
        owner = _owner(ix["comment"])
        if tenant_id is None or (owner is not None and owner["tenant_id"] == tenant_id):
            mine.append((ix, owner))
        else:  # another tenant's (or not yet named: a run for every tenant sees to it)
            others += 1
    wanted: dict[str, dict[str, Any]] = {}
    if policy.min_entries > 0:
        # every owner that may keep an index: down to half the lowest line
        least = max(_line(policy, PARTICIPANT) // 2, 1)
        params = {"models": list(INDEXED), "min": least, "tenant_id": tenant_id}
        rows = conn.execute(Q["owners_to_index"], params).fetchall()
        rows += [_learner(r) for r in conn.execute(Q["learners_to_index"], params)]
        has = {ix["name"] for ix, _ in mine if ix["valid"]}
        due = []
        for r in sorted(rows, key=_largest_first):
            name, line = owner_index_name(*(r[k] for k in _KEYS)), _line(policy, r["owner_type"])
            # over its line, or over half of it with an index already: below the line, an
            # owner without one takes no room under the cap
            if r["n"] >= line or (name in has and r["n"] >= max(line // 2, 1)):
                due.append((name, r))
        room = max(policy.max_indexes - others, 0)  # the cap is across tenants
        wanted = dict(due[:room])
    kept, dropped = set(), 0
    for ix, owner in mine:
        if ix["valid"] and ix["name"] in wanted:
            kept.add(ix["name"])
            if owner is None:
                _comment(conn, ix["name"], wanted[ix["name"]])
            continue
        drop = sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}")
        conn.execute(drop.format(sql.Identifier(ix["name"])))
        dropped += 1
    created = 0
    for name, r in wanted.items():  # largest first
        if name in kept:
            continue
        _create(conn, name, r, INDEXED[r["embedding_model"]], policy.build_wait)
        created += 1
    return {"indexes": len(kept) + created, "created": created, "dropped": dropped}


def _line(policy: OwnerIndexPolicy, owner_type: str) -> int:
    """The active entries at which an owner of ``owner_type`` gets its index."""
    if owner_type in (PARTICIPANT, LEARNT):
        return max(policy.min_entries // 2, 1)
    return policy.min_entries


def _learner(row: Mapping[str, Any]) -> dict[str, Any]:
    """A pair of an agent and a user as the owner of what the agent learnt from them."""
    owner = learnt_owner(row["owner_id"], row["learnt_from"])
    return {**row, "owner_type": LEARNT, "owner_id": owner}


def _largest_first(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return -row["n"], *(row[k] for k in _KEYS)


def _create(conn: Conn, name: str, owner: Mapping[str, Any], dim: int, wait: timedelta) -> None:
    milliseconds = max(1, int(wait.total_seconds() * 1000))
    conn.execute(sql.SQL("SET lock_timeout = {}").format(sql.Literal(milliseconds)))
    try:
        _build(conn, name, owner, dim)
    finally:
        conn.execute("RESET lock_timeout")
    _comment(conn, name, owner)
    log.info("owner_index_built", index=name, entries=owner["n"], tenant_id=owner["tenant_id"])


def _build(conn: Conn, name: str, owner: Mapping[str, Any], dim: int) -> None:
    conn.execute(
        sql.SQL(
            "CREATE INDEX CONCURRENTLY {name} ON memory_entries"
            " USING hnsw ((embedding::halfvec({dim})) halfvec_cosine_ops)"
            " WHERE tenant_id = {tenant} AND {whose}"
            " AND embedding_model = {model} AND status = 'active'"
        ).format(
            name=sql.Identifier(name),
            dim=sql.SQL(str(int(dim))),
            tenant=sql.Literal(owner["tenant_id"]),
            whose=_whose(owner["owner_type"], owner["owner_id"]),
            model=sql.Literal(owner["embedding_model"]),
        )
    )


def _whose(owner_type: str, owner_id: str) -> sql.Composable:
    """The owner's entries, stated as the search's scope states that part
    (retrieval/queries.sql: ``channel_part_indexed``, ``agent_part``), so that the planner
    matches the index to it."""
    if owner_type == PARTICIPANT:
        condition = "owner_type = 'channel' AND (fields -> 'participant_ids') ? {}"
        return sql.SQL(condition).format(sql.Literal(owner_id))
    if owner_type == LEARNT:
        agent, user = json.loads(owner_id)  # see learnt_owner
        condition = "owner_type = 'agent' AND owner_id = {} AND learnt_from IN ({}, '')"
        return sql.SQL(condition).format(sql.Literal(agent), sql.Literal(user))
    return sql.SQL("owner_type = {} AND owner_id = {}").format(
        sql.Literal(owner_type), sql.Literal(owner_id)
    )


def _comment(conn: Conn, name: str, owner: Mapping[str, Any]) -> None:
    text = json.dumps({k: owner[k] for k in _KEYS}, ensure_ascii=False)
    conn.execute(
        sql.SQL("COMMENT ON INDEX {} IS {}").format(sql.Identifier(name), sql.Literal(text))
    )


def _owner(comment: str | None) -> dict[str, Any] | None:
    try:
        value = json.loads(comment) if comment else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and "tenant_id" in value else None
