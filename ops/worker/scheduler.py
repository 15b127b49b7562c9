"""The consolidation schedule: apscheduler 3.x running each job at its interval.

Each job fires at the start of its epoch-aligned windows (so schedulers on several hosts
fire together and :func:`consolidation.run_job` lets exactly one of them run each window);
``max_instances=1`` and ``coalesce=True`` keep one process from piling up runs of a slow
job, and the advisory lock keeps two processes from overlapping. Every run opens its own
autocommit connection and reads the wall clock once, as ``now``.
"""

from __future__ import annotations

from datetime import timedelta

import structlog
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from consolidation import (
    JOBS,
    ConsolidationConfig,
    JobScope,
    RunOutcome,
    window_for,
)
from consolidation.ledger_jobs import Enqueue
from ledger.db import connect
from observations.embed import Embedder
from ops.metrics import JOB_RUNS, SharedMetrics
from ops.settings import Settings
from ops.usecases import maintenance
from ops.wiring import consolidation_config, wall_clock

log = structlog.get_logger(__name__)


def intervals(settings: Settings) -> dict[str, timedelta]:
    """Each scheduled job's interval (jobs set to 0 are left out)."""
    seconds = {job: float(getattr(settings, f"schedule_{job}_seconds")) for job in JOBS}
    return {job: timedelta(seconds=s) for job, s in seconds.items() if s > 0}


def run_scheduled(
    database_url: str,
    job: str,
    interval: timedelta,
    config: ConsolidationConfig,
    metrics: SharedMetrics,
) -> RunOutcome:
    """One scheduled firing: the job for the window it falls in, across tenants."""
    now = wall_clock()
    try:
        conn = connect(database_url, autocommit=True)
    except Exception:  # the database cannot be reached: the run failed before it began
        metrics.add([(JOB_RUNS, (job, "error"), 1)])
        raise
    with conn:
        window = window_for(now, interval)
        return maintenance.run(
            conn, job, config, JobScope(now), window=window, clock=wall_clock, metrics=metrics
        )


def make_scheduler(
    database_url: str,
    settings: Settings,
    enqueue: Enqueue | None,
    metrics: SharedMetrics,
    *,
    embedder: Embedder | None = None,
) -> BackgroundScheduler:
    """A scheduler (not started) with every job whose interval is set; each run is counted
    in ``metrics``. ``embedder``: the process's own, if it has one (see
    :func:`ops.wiring.consolidation_config`)."""
    config = consolidation_config(settings, enqueue, embedder=embedder)
    jobs = intervals(settings)
    scheduler = BackgroundScheduler(
        timezone="UTC", executors={"default": ThreadPoolExecutor(max(len(jobs), 1))}
    )
    now = wall_clock()
    for job, interval in jobs.items():
        scheduler.add_job(
            run_scheduled,
            IntervalTrigger(
                seconds=interval.total_seconds(),
                start_date=window_for(now, interval).end,
                timezone="UTC",
            ),
            args=[database_url, job, interval, config, metrics],
            id=job,
            name=f"consolidation:{job}",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(interval.total_seconds())),
        )
    log.info("scheduler_configured", jobs={j: i.total_seconds() for j, i in jobs.items()})
    return scheduler
