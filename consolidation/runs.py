"""Runs of the jobs: exactly once per schedule window, never two of one job at once.

:func:`run_job` takes the job's Postgres advisory lock (``pg_try_advisory_lock`` on a
per-job key, held on the connection for the whole run): when another scheduler — on any
host — is running the job, this one skips (``busy``). Holding the lock, it claims the
window by inserting the ``consolidation_runs`` row; ``UNIQUE (tenant_id, job,
window_start)`` makes a second claim of the same window find the row taken (``taken``),
so each window runs once however many schedulers fire for it. The row then gets the
run's stats, or its error, and the time it finished.

Schedule windows are aligned to the epoch (:func:`window_for`), so every scheduler agrees
on them whenever it started. A run by hand covers the point window ``[now, now]``.

Call it on an autocommit connection (the claim must be visible to other schedulers at
once). ``now`` is the time the job works with; ``clock`` stamps ``started_at`` and
``finished_at``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import structlog
from psycopg.types.json import Jsonb

from consolidation.jobs import JOBS, ConsolidationConfig, JobScope, Stats, get_job
from ledger.db import Conn
from ledger.sqlfile import load_queries

Q = load_queries("consolidation")
log = structlog.get_logger(__name__)
ALL_TENANTS = "*"
_LOCK_BASE = 0x6D6C_0100  # + the job's position in JOBS (see ledger.db for the others)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Window:
    start: datetime
    end: datetime


@dataclass(frozen=True, slots=True)
class RunOutcome:
    job: str
    status: Literal["done", "busy", "taken"]
    run_id: int | None = None
    stats: Stats = field(default_factory=dict)


def window_for(now: datetime, interval: timedelta) -> Window:
    """The epoch-aligned window of length ``interval`` that contains ``now``."""
    if interval <= timedelta(0):
        raise ValueError("a schedule interval must be positive")
    start = _EPOCH + ((now - _EPOCH) // interval) * interval
    return Window(start, start + interval)


def point_window(now: datetime) -> Window:
    """The window of a run by hand."""
    return Window(now, now)


def lock_key(job: str) -> int:
    get_job(job)
    return _LOCK_BASE + list(JOBS).index(job)


def run_job(
    conn: Conn,
    name: str,
    config: ConsolidationConfig,
    scope: JobScope,
    *,
    window: Window,
    clock: Clock,
) -> RunOutcome:
    """Run job ``name`` for ``window`` unless it is running elsewhere or already ran."""
    job = get_job(name)
    key = lock_key(name)
    tenant = scope.tenant_id or ALL_TENANTS
    locked = conn.execute(Q["try_lock"], {"key": key}).fetchone()
    if not (locked and locked["locked"]):
        log.info("consolidation_job_busy", job=name, window_start=window.start.isoformat())
        return RunOutcome(name, "busy")
    try:
        run_id = _claim(conn, tenant, name, window, clock())
        if run_id is None:
            log.info("consolidation_window_taken", job=name, window_start=window.start.isoformat())
            return RunOutcome(name, "taken")
        try:
            stats = job(conn, config, scope)
        except Exception as exc:  # recorded on the run, then raised to the caller
            _finish(conn, tenant, run_id, {}, f"{type(exc).__name__}: {exc}", clock())
            log.error("consolidation_job_failed", job=name, run_id=run_id, error=repr(exc))
            raise
        _finish(conn, tenant, run_id, stats, None, clock())
        log.info("consolidation_job_finished", job=name, run_id=run_id, tenant_id=tenant, **stats)
        return RunOutcome(name, "done", run_id, stats)
    finally:
        conn.execute(Q["unlock"], {"key": key})


def _claim(conn: Conn, tenant: str, job: str, window: Window, started_at: datetime) -> int | None:
    params = {
        "tenant_id": tenant,
        "job": job,
        "window_start": window.start,
        "window_end": window.end,
        "started_at": started_at,
    }
    with conn.transaction():
        row = conn.execute(Q["claim_run"], params).fetchone()
    return None if row is None else int(row["id"])


def _finish(
    conn: Conn, tenant: str, run_id: int, stats: Stats, error: str | None, at: datetime
) -> None:
    params = {
        "tenant_id": tenant,
        "id": run_id,
        "stats": Jsonb(stats),
        "error": error,
        "finished_at": at,
    }
    with conn.transaction():
        conn.execute(Q["finish_run"], params)


def recent_runs(conn: Conn, *, job: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
    """The latest runs, newest first (every tenant)."""
    return conn.execute(Q["recent_runs"], {"job": job, "limit": limit}).fetchall()
