"""Maintenance: one consolidation job run now — by the schedule, an API call or the CLI —
recorded in ``consolidation_runs`` (skipped while the same job runs elsewhere, or when
its window already ran) and counted in the job-run metric, failures included."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from consolidation import ConsolidationConfig, JobScope, RunOutcome, Window, run_job
from ledger.db import Conn
from ops.metrics import JOB_RUNS, SharedMetrics


def run(
    conn: Conn,
    job: str,
    config: ConsolidationConfig,
    scope: JobScope,
    *,
    window: Window,
    clock: Callable[[], datetime],
    metrics: SharedMetrics,
) -> RunOutcome:
    """Run ``job`` for ``scope`` in ``window`` on an autocommit connection (each step
    commits on its own)."""
    try:
        outcome = run_job(conn, job, config, scope, window=window, clock=clock)
    except Exception:
        metrics.add([(JOB_RUNS, (job, "error"), 1)])
        raise
    metrics.add([(JOB_RUNS, (job, outcome.status), 1)])
    return outcome
