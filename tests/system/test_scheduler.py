"""Two real ``memledger scheduler`` processes against one database: every job runs exactly
once per schedule window, runs of a job never overlap, and the work is done once. Also the
``history`` and ``consolidate`` commands over a socket-free subprocess, and a job that
meets an owner locked by a writer: it skips the owner and visits it on the next run.

Each test gets its own database; schedulers are stopped with SIGTERM.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from consolidation import ConsolidationConfig, JobScope, Walk, point_window, run_job
from ledger import list_sessions
from ledger.db import Conn, connect
from observations.builder import BuildConfig, build_session
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from tests.events import replay, says
from tests.system.processes import CliProcess, counted

MEMLEDGER = Path(sys.executable).parent / "memledger"
TENANT = "sched"
INTERVAL_S = 2
WINDOWS = 4  # full windows to watch once both schedulers run
JOBS = (
    "sweep",
    "supersede",
    "merge",
    "decay",
    "caps",
    "digest",
    "resync",
    "retention",
    "owner_indexes",
)
STARTUP_S = 40.0
NOW = datetime(2025, 10, 7, tzinfo=UTC)
DAY1 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
Row = dict[str, Any]


def env_for(db_url: str, redis_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env.update(
        MEMLEDGER_DATABASE_URL=db_url,
        MEMLEDGER_REDIS_URL=redis_url,
        MEMLEDGER_EMBEDDER="hash",
        MEMLEDGER_HOME=str(home),
        MEMLEDGER_TENANT=TENANT,
        PYTHONUNBUFFERED="1",
    )
    env.update({f"MEMLEDGER_SCHEDULE_{job.upper()}_SECONDS": str(INTERVAL_S) for job in JOBS})
    return env


class Scheduler(CliProcess):
    def ready(self) -> bool:
        if self.proc.poll() is not None:
            pytest.fail(f"scheduler exited during start-up:\n{self.err.read_text()[-3000:]}")
        return "scheduler running" in self.out.read_text()


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def schedulers(fresh_db_url: str, redis_url: str, tmp_path: Path) -> Iterator[list[Scheduler]]:
    env = env_for(fresh_db_url, redis_url, tmp_path)
    started = []
    for n in range(2):
        out, err = tmp_path / f"scheduler-{n}.out", tmp_path / f"scheduler-{n}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                [str(MEMLEDGER), "scheduler"],
                env=env,
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
            )
        started.append(Scheduler(proc, out, err))
    try:
        yield started
    finally:
        for s in started:
            s.stop()


def seed(conn: Conn) -> None:
    """Two facts on one key, built without supersede at build time: work for the jobs."""
    events = [
        says(1, "My favorite cryptocurrency is BTC.", DAY1),
        says(2, "My favorite cryptocurrency is ETH now.", DAY1 + timedelta(days=10)),
    ]
    with conn.transaction():
        replay(conn, TENANT, events, now=NOW)
        config = BuildConfig(HeuristicExtractor(), HashEmbedder())
        for s in list_sessions(conn, TENANT):
            build_session(conn, TENANT, s["id"], config, now=NOW)


def test_two_schedulers_run_each_job_once_per_window_without_overlap(
    schedulers: list[Scheduler], fresh_db_url: str, redis_url: str
) -> None:
    with connect(fresh_db_url, autocommit=True) as conn:
        seed(conn)
        wait_for(lambda: all(s.ready() for s in schedulers), STARTUP_S, "both schedulers")
        both_from = datetime.now(UTC)
        time.sleep(INTERVAL_S * (WINDOWS + 1))
        for s in schedulers:
            assert s.stop() == 0, s.err.read_text()[-3000:]
        runs = conn.execute(
            "SELECT * FROM consolidation_runs ORDER BY job, window_start"
        ).fetchall()
        superseded = conn.execute(
            "SELECT count(*) AS n FROM memory_entry_history WHERE action = 'SUPERSEDE'"
        ).fetchone()

    by_job: dict[str, list[Row]] = defaultdict(list)
    for r in runs:
        assert r["tenant_id"] == "*" and r["error"] is None and r["finished_at"] is not None, r
        by_job[r["job"]].append(r)
    assert sorted(by_job) == sorted(JOBS)
    step = timedelta(seconds=INTERVAL_S)
    for job, rows in by_job.items():
        starts = [r["window_start"] for r in rows]
        # one run per window, no window missed while both ran
        assert starts == [starts[0] + i * step for i in range(len(starts))], (job, starts)
        assert sum(1 for s in starts if s >= both_from) >= WINDOWS - 1, (job, starts)
        for r in rows:
            assert r["window_end"] - r["window_start"] == step
            assert r["window_start"] <= r["started_at"] < r["window_end"] + step
        for a, b in itertools.pairwise(rows):  # never two at once
            assert a["finished_at"] <= b["started_at"], (job, a, b)

    fired = [
        [r for r in s.logs() if r.get("event", "").startswith("consolidation_")] for s in schedulers
    ]
    finished = [sum(1 for r in f if r["event"] == "consolidation_job_finished") for f in fired]
    assert sum(finished) == len(runs)
    assert all(n > 0 for n in finished), finished  # both schedulers took part
    skipped = sum(1 for f in fired for r in f if r["event"] != "consolidation_job_finished")
    assert skipped > 0  # and met each other: a window taken or a job busy
    assert superseded is not None and superseded["n"] == 1  # the work was done once
    # Both counted their firings in the deployment's metrics: one run done per window.
    counts = counted(redis_url, "memledger_job_runs_total")
    assert {job: counts[job, "done"] for job in JOBS} == {j: len(r) for j, r in by_job.items()}
    assert sum(counts.values()) == sum(len(f) for f in fired)


def run_cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(MEMLEDGER), *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_consolidate_and_history_commands(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> None:
    env = env_for(fresh_db_url, redis_url, tmp_path)
    with connect(fresh_db_url, autocommit=True) as conn:
        seed(conn)
        out = run_cli(env, "consolidate", "--job", "supersede")
        assert "supersede (run 1): " in out and "superseded 1" in out
        assert counted(redis_url, "memledger_job_runs_total") == {("supersede", "done"): 1}
        [old] = conn.execute("SELECT id FROM memory_entries WHERE status = 'superseded'").fetchall()
    text = run_cli(env, "history", str(old["id"]))
    assert "ADD" in text and "SUPERSEDE" in text and "consolidation:supersede" in text
    assert "active → superseded" in text and "supersedes entry" in text
    assert "supersede" in run_cli(env, "consolidate", "--runs")


def test_an_owner_held_by_a_writer_is_skipped_and_visited_next_run(fresh_db_url: str) -> None:
    config = ConsolidationConfig(walk=Walk(lock_timeout=timedelta(milliseconds=200)))
    with (
        connect(fresh_db_url, autocommit=True) as conn,
        connect(fresh_db_url) as writer,
    ):
        seed(conn)
        writer.execute("SELECT id FROM memory_entries WHERE owner_id = 'maya' FOR UPDATE")

        def run() -> dict[str, Any]:
            now = datetime.now(UTC)
            scope = JobScope(NOW, TENANT)
            outcome = run_job(
                conn, "supersede", config, scope, window=point_window(now), clock=lambda: now
            )
            return outcome.stats

        busy = run()
        assert (busy["owners_skipped_busy"], busy["superseded"]) == (1, 0)
        writer.rollback()  # the writer is done (changing nothing)
        done = run()
        assert (done["owners_skipped_busy"], done["superseded"]) == (0, 1)
        assert run()["owners"] == 0
