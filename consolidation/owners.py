"""Owner by owner: how the entry jobs (supersede, merge, caps) walk a tenant.

A **full** pass visits every owner; an **incremental** pass only the owners whose entries
changed since the job's checkpoint — history ids, the same change feed the read models
tail (see :mod:`observations.changes`): the horizon is taken with the writers' lock, so
no change that commits late is skipped. Each job keeps its own checkpoint per tenant in
``consumer_checkpoint`` (consumer ``consolidation:<job>``).

Owners stream from a server-side cursor (``WITH HOLD``: it outlives the short
transactions) in pages. A page is one transaction: the owners' entries are locked in id
order (``lock_timeout`` bounds the wait for a builder in flight), planned by the pure
policy and written set-based. A page whose lock times out is retried owner by owner; an
owner still busy is skipped, and the checkpoint stops before its first change so the next
run visits it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, LiteralString

import psycopg.errors

from consolidation.model import Change, EntryState
from consolidation.store import Owner, Written, lock_entries, owner_arrays, write_changes
from ledger.db import Conn, tenant_scope
from ledger.sqlfile import load_queries
from observations.changes import checkpoint, save_checkpoint

Q = load_queries("consolidation")
Plan = Callable[[list[EntryState]], list[Change]]
_BUSY = (psycopg.errors.LockNotAvailable, psycopg.errors.DeadlockDetected)


@dataclass(frozen=True, slots=True)
class OwnerJob:
    """An entry job: which entries of an owner its policy reads, and the policy."""

    name: str
    statuses: tuple[str, ...]
    kinds: frozenset[str] | None  # None: every kind
    plan: Plan
    skip_kinds: frozenset[str] = frozenset()
    vectors: bool = False
    cap: int | None = None  # caps: only owners with more active entries than this

    @property
    def consumer(self) -> str:
        return f"consolidation:{self.name}"


@dataclass(frozen=True, slots=True)
class Walk:
    page_owners: int = 200
    lock_timeout: timedelta = timedelta(seconds=5)
    work_mem: str = "64MB"  # a page's rows (vectors included) sorted in memory, not on disk


@dataclass(slots=True)
class OwnerStats:
    owners: int = 0
    entries: int = 0
    skipped_owners: int = 0
    written: Written = field(default_factory=Written)

    def as_dict(self) -> dict[str, int]:
        w = self.written
        return {
            "owners": self.owners,
            "entries_read": self.entries,
            "owners_skipped_busy": self.skipped_owners,
            "superseded": w.superseded,
            "merged": w.merged,
            "archived": w.archived,
            "links": w.links,
        }


def tenants_to_visit(
    conn: Conn,
    consumer: str,
    tenant_id: str | None,
    *,
    full: bool,
    horizon: int,
    all_actors: bool = False,
) -> list[str]:
    """The tenant asked for; else every tenant with entries (full) or with changes past
    the consumer's checkpoint (incremental): consolidation's own changes only with
    ``all_actors``."""
    if tenant_id is not None:
        return [tenant_id]
    if full:
        return [r["tenant_id"] for r in conn.execute(Q["entry_tenants"])]
    params = {"tenant_id": None, "consumer": consumer, "upto": horizon, "all_actors": all_actors}
    return [r["tenant_id"] for r in conn.execute(Q["history_tenants_behind"], params)]


def run_owner_job(
    conn: Conn,
    job: OwnerJob,
    tenant_id: str,
    *,
    horizon: int,
    now: datetime,
    full: bool,
    walk: Walk,
    actor: str,
) -> OwnerStats:
    """One pass of ``job`` over the tenant, for the changes up to ``horizon`` (see
    :func:`observations.changes.change_horizon`); advances the job's checkpoint."""
    position = checkpoint(conn, tenant_id, job.consumer)
    stats = OwnerStats()
    first_skipped: int | None = None
    if full or horizon > position:
        for page in _owner_pages(conn, job, tenant_id, position, horizon, full, walk):
            skipped = _run_page(conn, job, tenant_id, page, now, walk, actor, stats)
            for owner in skipped:
                first = int(page[owner])
                first_skipped = first if first_skipped is None else min(first_skipped, first)
    upto = horizon if first_skipped is None else min(horizon, first_skipped - 1)
    save_checkpoint(conn, tenant_id, job.consumer, upto, now=now)
    return stats


def _owner_pages(
    conn: Conn,
    job: OwnerJob,
    tenant_id: str,
    position: int,
    horizon: int,
    full: bool,
    walk: Walk,
) -> Iterator[dict[Owner, int]]:
    """Pages of owners to visit, each owner with its first change id (0 in a full pass)."""
    kinds = None if job.kinds is None else sorted(job.kinds)
    params: dict[str, Any] = {
        "tenant_id": tenant_id,
        "kinds": kinds,
        "skip_kinds": sorted(job.skip_kinds),
        "cap": job.cap,
    }
    query: LiteralString
    if not full:
        query, params = Q["owners_changed"], {**params, "after": position, "upto": horizon}
    elif job.cap is not None:
        query = Q["owners_over_cap"]
    else:
        query = Q["owners_with_kinds"]
    return owner_pages(conn, f"consolidation_{job.name}_owners", query, params, walk)


def owner_pages(
    conn: Conn, cursor: str, query: LiteralString, params: dict[str, Any], walk: Walk
) -> Iterator[dict[Owner, int]]:
    """The owners ``query`` finds, a page at a time, each with its first change id; read
    from a server-side cursor named ``cursor`` that outlives the pages' transactions."""
    with conn.cursor(name=cursor, withhold=True) as cur:
        cur.execute(query, params)
        while rows := cur.fetchmany(walk.page_owners):
            yield {(r["owner_type"], r["owner_id"]): int(r["first_change"]) for r in rows}


def _run_page(
    conn: Conn,
    job: OwnerJob,
    tenant_id: str,
    page: dict[Owner, int],
    now: datetime,
    walk: Walk,
    actor: str,
    stats: OwnerStats,
) -> list[Owner]:
    """Process the page's owners; returns those skipped because they stayed busy."""
    owners = sorted(page)
    try:
        _run_owners(conn, job, tenant_id, owners, now, walk, actor, stats)
        return []
    except _BUSY:
        pass
    skipped = []
    for owner in owners:
        try:
            _run_owners(conn, job, tenant_id, [owner], now, walk, actor, stats)
        except _BUSY:
            skipped.append(owner)
    stats.skipped_owners += len(skipped)
    return skipped


def _run_owners(
    conn: Conn,
    job: OwnerJob,
    tenant_id: str,
    owners: Sequence[Owner],
    now: datetime,
    walk: Walk,
    actor: str,
    stats: OwnerStats,
) -> None:
    with tenant_scope(conn, tenant_id):
        if job.cap is not None:
            owners = _over_cap(conn, tenant_id, owners, job.cap)
            if not owners:
                return
        limit_waits(conn, walk)
        entries = lock_entries(
            conn,
            tenant_id,
            owners,
            statuses=job.statuses,
            kinds=job.kinds,
            skip_kinds=job.skip_kinds,
            vectors=job.vectors,
        )
        changes = job.plan(entries)
        written = write_changes(conn, tenant_id, entries, changes, now=now, actor=actor)
    stats.owners += len(owners)
    stats.entries += len(entries)
    stats.written += written


def limit_waits(conn: Conn, walk: Walk) -> None:
    """The walk's lock timeout and work_mem for the rest of this transaction."""
    conn.execute(
        "SELECT set_config('lock_timeout', %s, true), set_config('work_mem', %s, true)",
        [f"{int(walk.lock_timeout.total_seconds() * 1000)}ms", walk.work_mem],
    )


def _over_cap(conn: Conn, tenant_id: str, owners: Sequence[Owner], cap: int) -> list[Owner]:
    params = {
        "tenant_id": tenant_id,
        **owner_arrays(owners),
        "cap": cap,
    }
    rows = conn.execute(Q["which_over_cap"], params).fetchall()
    return sorted((r["owner_type"], r["owner_id"]) for r in rows)
