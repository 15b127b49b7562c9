"""The entry jobs — supersede, merge, caps, decay — and supersede at build time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from consolidation.decay import RetentionPolicy, plan_caps, plan_decay
from consolidation.merge import MERGE_EXEMPT, plan_merge
from consolidation.model import EntryState
from consolidation.owners import (
    OwnerJob,
    OwnerStats,
    Walk,
    run_owner_job,
    tenants_to_visit,
)
from consolidation.store import lock_entries, write_changes
from consolidation.supersede import TIMELINE, group_key, plan_supersede
from ledger.db import Conn, announce_entry_changes, tenant_scope
from ledger.sqlfile import load_queries
from materializers.profile import attribute_key
from observations.changes import change_horizon
from observations.entry import ACTIVE, PROFILE_KINDS
from observations.history import HistoryRow, write_history

Q = load_queries("consolidation")
BUILD_ACTOR = "builder"


def actor(job: str) -> str:
    return f"consolidation:{job}"


def tenants(conn: Conn, tenant_id: str | None, query: str = "entry_tenants") -> list[str]:
    """The one tenant asked for, or every tenant the query finds."""
    if tenant_id is not None:
        return [tenant_id]
    return [r["tenant_id"] for r in conn.execute(Q[query]).fetchall()]


def supersede_job() -> OwnerJob:
    return OwnerJob(
        "supersede",
        TIMELINE,
        frozenset(PROFILE_KINDS),
        lambda entries: list(plan_supersede(entries)),
    )


def merge_job(threshold: float) -> OwnerJob:
    return OwnerJob(
        "merge",
        (ACTIVE,),
        None,
        lambda entries: list(plan_merge(entries, threshold=threshold)),
        skip_kinds=MERGE_EXEMPT,
        vectors=True,
    )


def caps_job(policy: RetentionPolicy, now: datetime) -> OwnerJob:
    return OwnerJob(
        "caps",
        (ACTIVE,),
        None,
        lambda entries: list(plan_caps(entries, now=now, policy=policy)),
        cap=policy.max_active_per_owner,
    )


def run_entry_job(
    conn: Conn, job: OwnerJob, tenant_id: str | None, *, now: datetime, full: bool, walk: Walk
) -> dict[str, int]:
    """``job`` over one tenant or all; the stats summed over tenants."""
    totals = Counter({"tenants": 0, **OwnerStats().as_dict()})
    horizon = change_horizon(conn)
    for tenant in tenants_to_visit(conn, job.consumer, tenant_id, full=full, horizon=horizon):
        stats = run_owner_job(
            conn,
            job,
            tenant,
            horizon=horizon,
            now=now,
            full=full,
            walk=walk,
            actor=actor(job.name),
        )
        totals.update(stats.as_dict())
        totals["tenants"] += 1
    return dict(totals)


def supersede_at_build(
    conn: Conn, tenant_id: str, items: Sequence[tuple[str, str, str]], *, now: datetime
) -> int:
    """Supersede older facts on the (owner type, owner id, key) the builder just wrote;
    runs in the builder's transaction. Returns how many entries were superseded."""
    wanted = {(t, o, attribute_key(k)) for t, o, k in items}
    owners = sorted({(t, o) for t, o, _ in wanted})
    if not owners:
        return 0
    with tenant_scope(conn, tenant_id):
        found = lock_entries(conn, tenant_id, owners, statuses=TIMELINE, kinds=PROFILE_KINDS)
        entries = [e for e in found if group_key(e) in wanted]
        changes = plan_supersede(entries)
        written = write_changes(conn, tenant_id, entries, changes, now=now, actor=BUILD_ACTOR)
    return written.superseded


def decay(
    conn: Conn,
    tenant_id: str | None,
    *,
    now: datetime,
    policy: RetentionPolicy,
    page: int = 5000,
) -> dict[str, int]:
    """Archive the entries that decayed, tenant by tenant, a page at a time. An entry used
    or rewritten between the read and the write is left for the next run."""
    totals = Counter({"tenants": 0, "candidates": 0, "archived": 0})
    for tenant in tenants(conn, tenant_id):
        totals["tenants"] += 1
        for rows in _decay_candidates(conn, tenant, now, policy, page):
            totals["candidates"] += len(rows)
            totals["archived"] += _archive_decayed(conn, tenant, rows, now, policy)
    return dict(totals)


def _decay_candidates(
    conn: Conn, tenant_id: str, now: datetime, policy: RetentionPolicy, page: int
) -> Iterator[list[dict[str, Any]]]:
    params = {
        "tenant_id": tenant_id,
        "exempt": sorted(policy.exempt_kinds),
        "min_accesses": policy.min_accesses,
        "cutoff": policy.idle_cutoff(now),
        "half_life_days": policy.half_life_days,
        "threshold": policy.threshold,
    }
    with conn.cursor(name="consolidation_decay", withhold=True) as cur:
        cur.execute(Q["decay_candidates"], params)
        while rows := cur.fetchmany(page):
            yield rows


def _archive_decayed(
    conn: Conn,
    tenant_id: str,
    rows: Sequence[dict[str, Any]],
    now: datetime,
    policy: RetentionPolicy,
) -> int:
    by_id = {int(r["id"]): r for r in rows}
    archives = plan_decay((EntryState.from_row(r) for r in rows), now=now, policy=policy)
    if not archives:
        return 0
    chosen = [by_id[a.id] for a in archives]
    params = {
        "tenant_id": tenant_id,
        "now": now,
        "ids": [r["id"] for r in chosen],
        "access_counts": [r["access_count"] for r in chosen],
        "updated_ats": [r["updated_at"] for r in chosen],
    }
    with tenant_scope(conn, tenant_id):
        announce_entry_changes(conn)
        done = {int(r["id"]) for r in conn.execute(Q["archive_unchanged"], params).fetchall()}
        history = [
            HistoryRow(
                a.id,
                "ARCHIVE",
                by_id[a.id]["canonical_statement"],
                by_id[a.id]["canonical_statement"],
                ACTIVE,
                "archived",
                a.reason,
            )
            for a in archives
            if a.id in done
        ]
        write_history(conn, {"tenant_id": tenant_id, "now": now}, history, actor("decay"))
    return len(done)
