"""``memledger bench api --backlog N``: context latency while the server's workers build.

Two runs of the same timed context bundles against ``memledger serve --workers`` (its build
process at the lower CPU priority the embedded default gives it): one with nothing to build,
then one with at least N sessions waiting for a build, as a deployment catching up on a
backlog would have. The second run's p95 is reported against the first's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import click

from ledger.db import Conn
from observations.builder import waiting_builds
from ops.bench.api import ContextFigures, Load, scratch_redis, serving, time_contexts
from ops.bench.build import load_sessions
from ops.worker.pipeline import wait_for_builds

BACKLOG_TENANT = "bench-backlog"
START_SECONDS = 120  # for a server's workers to build their first session


@dataclass(frozen=True, slots=True)
class BacklogFigures:
    quiet: ContextFigures  # nothing waiting for a build
    busy: ContextFigures  # the backlog being built meanwhile
    waiting_before: int  # sessions waiting for a build when the busy run's timing began
    waiting_after: int  # and when it ended

    def report(self, with_clients: str) -> str:
        ratio = self.busy.p95_ms / self.quiet.p95_ms
        return (
            f"  context with build workers ({with_clients}):\n"
            f"    nothing to build: p50 {self.quiet.p50_ms:.1f} ms, "
            f"p95 {self.quiet.p95_ms:.1f} ms\n"
            f"    behind a backlog of {self.waiting_before} sessions "
            f"({self.waiting_before - self.waiting_after} built meanwhile): "
            f"p50 {self.busy.p50_ms:.1f} ms, p95 {self.busy.p95_ms:.1f} ms = {ratio:.2f} × "
            f"the p95 with nothing to build"
        )


def run_backlog(
    conn: Conn,
    db_url: str,
    redis_url: str,
    key: str,
    backlog: int,
    contexts: int,
    clients: int,
    processes: int,
    now: datetime,
) -> BacklogFigures:
    """Time ``contexts`` bundles on a server with workers, without then with ``backlog``
    sessions to build (``conn``'s database is the server's; every session in it is built).
    Each run's timing starts once its workers have built a session: they are up."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def timed(sessions: int, start_below: int) -> tuple[ContextFigures, int, int]:
        load_sessions(conn, BACKLOG_TENANT, sessions, now)
        with (
            scratch_redis(redis_url) as scratch,
            serving(db_url, scratch, processes, workers=True) as api,
        ):
            before = wait_for_builds(conn, timeout=START_SECONDS, below=start_below)
            if before >= start_below:
                raise click.ClickException(f"no build finished in {START_SECONDS} s")
            figures = time_contexts(Load(api.url, headers, clients), contexts, api.process)
            return figures, before, waiting_builds(conn)

    quiet, _, _ = timed(1, start_below=1)  # a few sessions, all built before the timing
    busy, before, after = timed(backlog, start_below=backlog)
    if after == 0:
        raise click.ClickException(
            f"the backlog of {before} sessions was built before the timing ended: "
            "give a larger --backlog"
        )
    return BacklogFigures(quiet, busy, before, after)
