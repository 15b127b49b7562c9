"""The consolidation jobs by name, with the configuration they share.

Every job has the same signature — ``(conn, config, scope) -> stats`` — and is idempotent:
run twice over the same state, the second run changes nothing. ``JOBS`` lists them in the
order ``all`` runs them: sweep first (builds are asynchronous anyway), supersede before
merge (only current facts are merged), decay and caps next, digest after every job that
ends entries (it gathers the facts that stay current), all of them before the read models
are resynchronized, then retention, and the owners' own HNSW indexes last (built for
the entries that stay).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from consolidation import entry_jobs, ledger_jobs
from consolidation.decay import RetentionPolicy
from consolidation.digest import DigestPolicy
from consolidation.digest_job import run_digests
from consolidation.ledger_jobs import Enqueue
from consolidation.merge import DEFAULT_THRESHOLD
from consolidation.owner_indexes import OwnerIndexPolicy, run_owner_indexes
from consolidation.owners import Walk
from ledger.db import Conn
from ledger.errors import NotFound
from materializers.skills import SkillPolicy
from observations.embed import Embedder

Stats = dict[str, Any]


class UnknownJob(NotFound):
    """No such consolidation job: use one of the names listed."""


@dataclass(frozen=True, slots=True)
class ConsolidationConfig:
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)
    merge_threshold: float = DEFAULT_THRESHOLD
    retention_days: float = 14
    session_gap: timedelta = timedelta(minutes=30)
    requeue_after: timedelta = timedelta(minutes=10)
    max_build_attempts: int = 5
    walk: Walk = field(default_factory=Walk)
    decay_page: int = 5000
    enqueue: Enqueue | None = None  # queues builds for the sweep; None: only count them
    skills: SkillPolicy = field(default_factory=SkillPolicy)  # for the read models' resync
    digest: DigestPolicy = field(default_factory=DigestPolicy)
    embedder: Embedder | None = None  # for the digests' vectors; None: no digest job
    owner_indexes: OwnerIndexPolicy = field(default_factory=OwnerIndexPolicy)


@dataclass(frozen=True, slots=True)
class JobScope:
    """What one run covers: its time, one tenant or all (None), incremental or full."""

    now: datetime
    tenant_id: str | None = None
    full: bool = False


Job = Callable[[Conn, ConsolidationConfig, JobScope], Stats]


def _supersede(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    job = entry_jobs.supersede_job()
    return entry_jobs.run_entry_job(
        conn, job, scope.tenant_id, now=scope.now, full=scope.full, walk=config.walk
    )


def _merge(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    job = entry_jobs.merge_job(config.merge_threshold)
    return entry_jobs.run_entry_job(
        conn, job, scope.tenant_id, now=scope.now, full=scope.full, walk=config.walk
    )


def _digest(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    if config.embedder is None:
        return {"tenants": 0, "skipped_without_embedder": 1}
    return run_digests(
        conn,
        scope.tenant_id,
        now=scope.now,
        full=scope.full,
        walk=config.walk,
        policy=config.digest,
        embedder=config.embedder,
    )


def _caps(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    job = entry_jobs.caps_job(config.policy, scope.now)
    return entry_jobs.run_entry_job(
        conn, job, scope.tenant_id, now=scope.now, full=scope.full, walk=config.walk
    )


def _decay(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    return entry_jobs.decay(
        conn, scope.tenant_id, now=scope.now, policy=config.policy, page=config.decay_page
    )


def _resync(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    return ledger_jobs.resync(
        conn, scope.tenant_id, now=scope.now, full=scope.full, policy=config.skills
    )


def _sweep(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    return ledger_jobs.sweep(
        conn,
        scope.tenant_id,
        now=scope.now,
        gap=config.session_gap,
        requeue_after=config.requeue_after,
        max_attempts=config.max_build_attempts,
        enqueue=config.enqueue,
    )


def _retention(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    return ledger_jobs.retention(
        conn,
        scope.tenant_id,
        now=scope.now,
        retention_days=config.retention_days,
        full=scope.full,
    )


def _owner_indexes(conn: Conn, config: ConsolidationConfig, scope: JobScope) -> Stats:
    return run_owner_indexes(conn, scope.tenant_id, policy=config.owner_indexes)


JOBS: dict[str, Job] = {
    "sweep": _sweep,
    "supersede": _supersede,
    "merge": _merge,
    "decay": _decay,
    "caps": _caps,
    "digest": _digest,
    "resync": _resync,
    "retention": _retention,
    "owner_indexes": _owner_indexes,
}


def get_job(name: str) -> Job:
    try:
        return JOBS[name]
    except KeyError:
        raise UnknownJob(job=name, known=", ".join(JOBS)) from None
