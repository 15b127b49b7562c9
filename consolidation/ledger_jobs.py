"""The jobs around the ledger and the read models: sweep, retention, projection resync."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import structlog

from consolidation.entry_jobs import tenants
from ledger.db import Conn
from ledger.sqlfile import load_queries
from ledger.store import sweep_idle
from materializers.runner import CONSUMER as READ_MODELS
from materializers.runner import project, rebuild
from materializers.skills import SkillPolicy
from observations.outbox import HandOver, QueueUnavailable, hand_over
from observations.outbox import Send as Enqueue

log = structlog.get_logger(__name__)
Q = load_queries("consolidation")
_NO_POLICY = SkillPolicy()  # every skill proposal waits for a reviewer
REQUEUE_LIMIT = 10_000  # builds handed to the queue per sweep at most
REQUEUE_PER_TENANT = 1000  # and of one tenant
IDEMPOTENCY_KEYS_KEPT = timedelta(days=1)  # a memory write's key answers retries this long
RETENTION_STATS = ("tenants", "sessions", "events", "observations", "links", "entries_detached")
RESYNC_STATS = ("tenants", "changes", "owners", "profile_rows", "skill_rows")


def sweep(
    conn: Conn,
    tenant_id: str | None,
    *,
    now: datetime,
    gap: timedelta,
    requeue_after: timedelta,
    max_attempts: int,
    enqueue: Enqueue | None,
) -> dict[str, int]:
    """Close idle sessions and hand builds to the queue with ``enqueue`` (None: leave them
    in the outbox): for sessions closed and not yet handed over, those handed over more
    than ``requeue_after`` ago and still unbuilt (a lost message), and failed ones whose
    backoff has passed, up to ``max_attempts``. A session handed over recently is not
    sent again, and one run sends at most ``REQUEUE_PER_TENANT`` of a tenant: sweeping
    twice over a backlog queues each session once. A duplicate build message is a no-op.
    While the queue is unavailable the builds wait in the outbox (``waiting``).
    Idempotency keys older than ``IDEMPOTENCY_KEYS_KEPT`` are forgotten."""
    closed = sweep_idle(conn, now=now, gap=gap, tenant_id=tenant_id)
    queued: list[tuple[str, int]] = []
    if enqueue is not None:
        what = HandOver(
            now=now,
            max_attempts=max_attempts,
            stale_before=now - requeue_after,
            tenant_id=tenant_id,
            per_tenant=REQUEUE_PER_TENANT,
            limit=REQUEUE_LIMIT,
        )
        try:
            queued = hand_over(conn, enqueue, what)
        except QueueUnavailable as exc:
            log.warning("builds_left_in_outbox", tenant_id=tenant_id, error=str(exc))
    params = {
        "tenant_id": tenant_id,
        "max_attempts": max_attempts,
        "before": now - IDEMPOTENCY_KEYS_KEPT,
    }
    waiting = conn.execute(Q["count_outbox"], params).fetchone()
    expired = conn.execute(Q["expire_idempotency_keys"], params)
    return {
        "closed_idle": len(closed),
        "queued": len(queued),
        "waiting": int(waiting["n"]) if waiting else 0,
        "idempotency_keys_expired": expired.rowcount,
    }


def retention(
    conn: Conn, tenant_id: str | None, *, now: datetime, retention_days: float, full: bool
) -> dict[str, int]:
    """Delete ledger sessions closed more than ``retention_days`` ago (built or failed
    ones only) with their events and observations, through ``memledger_retention_delete``
    — the one path the append-only trigger allows. Entries survive (their
    ``source_session_id`` becomes NULL), so do read models; the deleted observations'
    lineage links go too (a full pass also sweeps any other orphan link)."""
    before = now - timedelta(days=retention_days)
    totals = Counter(dict.fromkeys(RETENTION_STATS, 0))
    for tenant in tenants(conn, tenant_id, "session_tenants"):
        params = {"tenant_id": tenant, "before": before}
        with conn.transaction():  # as the owner: the app role may not delete ledger rows
            closed = conn.execute(Q["retention_doomed"], params).fetchall()
            doomed = [r for r in closed if r["status"] in ("built", "failed")]
            if doomed:
                ids = [r["id"] for r in doomed]
                observations = [o for r in doomed for o in r["observation_ids"]]
                row = conn.execute(Q["entries_of_sessions"], {**params, "ids": ids}).fetchone()
                totals["entries_detached"] += int(row["n"]) if row else 0
                deleted = conn.execute(Q["retention_delete"], params).fetchone()
                totals["sessions"] += int(deleted["sessions"]) if deleted else 0
                totals["events"] += sum(int(r["event_count"]) for r in doomed)
                totals["observations"] += len(observations)
                links = conn.execute(Q["delete_observation_links"], {**params, "ids": observations})
                totals["links"] += links.rowcount
            if full:
                totals["links"] += conn.execute(Q["delete_orphan_links"], params).rowcount
        totals["tenants"] += 1
    return dict(totals)


def resync(
    conn: Conn,
    tenant_id: str | None,
    *,
    now: datetime,
    full: bool,
    policy: SkillPolicy = _NO_POLICY,
) -> dict[str, int]:
    """Bring the read models up to date where entries changed (the checkpointed runner);
    a full pass rebuilds them from entries alone."""
    totals = Counter(dict.fromkeys(RESYNC_STATS, 0))
    if full:
        results = rebuild(conn, tenant_id, "all", now=now, policy=policy)
    else:
        params = {
            "tenant_id": tenant_id,
            "consumer": READ_MODELS,
            "upto": 2**62,
            "all_actors": True,
        }
        behind = [r["tenant_id"] for r in conn.execute(Q["history_tenants_behind"], params)]
        results = [project(conn, t, now=now, policy=policy) for t in behind]
    for stats in results:
        totals["tenants"] += 1
        totals["changes"] += stats.changes
        totals["owners"] += stats.owners
        totals["profile_rows"] += stats.profile_rows
        totals["skill_rows"] += stats.skill_rows
    return dict(totals)
