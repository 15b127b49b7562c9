"""A real ``memledger worker`` process (dramatiq on a real Redis) building sessions from a
real PostgreSQL: the happy path, a worker SIGKILLed in the middle of a build, and
duplicate messages.

Each test gets its own database; the Redis server is shared by the module and emptied
before each test. The test process enqueues with the same broker set-up the CLI uses;
workers are stopped with SIGTERM (SIGKILL only as a last resort) when the test ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import dramatiq
import dramatiq.broker as dramatiq_broker
import psycopg
import pytest

from ledger import list_sessions
from ledger.db import Conn, connect, make_pool
from materializers import checkpoint, get_profile, list_skills
from observations import builder
from observations.builder import BuildConfig, sessions_to_build
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.broker import setup_broker
from ops.worker import actors
from tests.events import replay, sample_events
from tests.system.processes import CliProcess, counted

MEMLEDGER = Path(sys.executable).parent / "memledger"
BUILD_VERSION = f"heuristic-{HeuristicExtractor.version}+hash-v1-384"
STARTUP_S = 30.0
BUILD_S = 30.0
T = TypeVar("T")
Row = dict[str, Any]
Actor = dramatiq.Actor[[str, int], None]


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture
def build_actor(redis_url: str) -> Iterator[Actor]:
    previous = dramatiq_broker.global_broker
    broker = setup_broker(redis_url)  # also made the global broker
    yield actors.register(broker, None)
    broker.close()
    broker.client.connection_pool.disconnect()  # close() leaves the Redis pool open
    dramatiq_broker.global_broker = previous


def worker_env(db_url: str, redis_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env.update(
        MEMLEDGER_DATABASE_URL=db_url,
        MEMLEDGER_REDIS_URL=redis_url,
        MEMLEDGER_EMBEDDER="hash",
        # above the sample's weakest facts (0.75): the gates have work, counted in metrics
        MEMLEDGER_MIN_CONFIDENCE="0.8",
        MEMLEDGER_HOME=str(home),
        MEMLEDGER_LOG_LEVEL="info",
        PYTHONUNBUFFERED="1",
    )
    return env


class Worker(CliProcess):
    def builds(self, session_id: int) -> list[str]:
        """Statuses of the ``session_built`` log lines for ``session_id``, in order."""
        return [
            r["status"]
            for r in self.logs()
            if r.get("event") == "session_built" and r.get("session_id") == session_id
        ]

    def describe(self) -> str:
        return f"worker exit={self.proc.poll()}\nstderr:\n{self.err.read_text()[-3000:]}"

    def wait_ready(self) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                pytest.fail(f"worker exited during start-up\n{self.describe()}")
            return "worker running" in self.out.read_text()

        wait_for(ready, STARTUP_S, lambda: "the worker to start")


@pytest.fixture
def start_worker(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> Iterator[Callable[[], Worker]]:
    started: list[Worker] = []
    env = worker_env(fresh_db_url, redis_url, tmp_path)

    def start() -> Worker:
        n = len(started)
        out, err = tmp_path / f"worker-{n}.out", tmp_path / f"worker-{n}.err"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                [str(MEMLEDGER), "worker", "--threads", "1"],
                env=env,
                stdout=stdout,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
            )
        worker = Worker(proc, out, err)
        started.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def db(fresh_db_url: str) -> Iterator[Conn]:
    with connect(fresh_db_url, autocommit=True) as conn:
        yield conn


# ------------------------------------------------------------------------------ helpers


def wait_for(probe: Callable[[], T | None], timeout: float, what: Callable[[], str]) -> T:
    """Poll ``probe`` until it returns something truthy, or fail after ``timeout``
    with ``what()`` (evaluated then, so it shows the state at the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what()}")
        time.sleep(0.05)


def ingest_sample(conn: Conn) -> tuple[str, list[int]]:
    """A new tenant with the sample transcript, every session closed; its session ids."""
    tenant = f"tw-{uuid.uuid4().hex[:10]}"
    now = datetime.now(UTC)
    replay(conn, tenant, sample_events(), now=now)
    sessions = list_sessions(conn, tenant)
    assert sessions and {s["status"] for s in sessions} == {"closed"}
    return tenant, sorted(s["id"] for s in sessions)


def select(conn: Conn, query: str, *args: Any) -> list[Row]:
    return conn.execute(query, list(args)).fetchall()


def session_of(conn: Conn, tenant: str, session_id: int) -> Row:
    return select(
        conn, "SELECT * FROM memory_sessions WHERE tenant_id = %s AND id = %s", tenant, session_id
    )[0]


def statuses(conn: Conn, tenant: str) -> dict[int, str]:
    return {s["id"]: s["status"] for s in list_sessions(conn, tenant)}


def built_rows(conn: Conn, tenant: str) -> dict[str, list[Row]]:
    """What builds wrote for the tenant (embeddings left out: they are compared by id)."""
    return {
        "observations": select(
            conn,
            "SELECT id, session_id, build_version, owner_type, owner_id, key, statement,"
            " source_event_ids FROM memory_observations WHERE tenant_id = %s ORDER BY id",
            tenant,
        ),
        "entries": select(
            conn,
            "SELECT id, source_session_id, owner_type, owner_id, key, canonical_statement,"
            " status, updated_at, source_event_ids FROM memory_entries"
            " WHERE tenant_id = %s ORDER BY id",
            tenant,
        ),
        "links": select(  # lineage of the read models is the projection's, not the build's
            conn,
            "SELECT id, src_id, relation, dst_id FROM memory_links"
            " WHERE tenant_id = %s AND relation = 'extracted_as' ORDER BY id",
            tenant,
        ),
        "history": select(
            conn,
            "SELECT id, entry_id, action, new_statement FROM memory_entry_history"
            " WHERE tenant_id = %s ORDER BY id",
            tenant,
        ),
    }


def assert_built_exactly_once(conn: Conn, tenant: str, session_id: int) -> None:
    """One build's worth of rows: nothing duplicated, one ADD per entry, one attempt."""
    s = session_of(conn, tenant, session_id)
    assert (s["status"], s["build_version"], s["build_attempts"]) == ("built", BUILD_VERSION, 1)
    rows = built_rows(conn, tenant)
    obs = [o for o in rows["observations"] if o["session_id"] == session_id]
    entries = [e for e in rows["entries"] if e["source_session_id"] == session_id]
    assert entries and len(obs) == len(entries) == s["build_stats"]["items"]
    owner_keys = Counter((e["owner_type"], e["owner_id"], e["key"]) for e in entries)
    assert set(owner_keys.values()) == {1}, owner_keys
    obs_keys = Counter((o["owner_type"], o["owner_id"], o["key"]) for o in obs)
    assert obs_keys == owner_keys
    entry_ids = {e["id"] for e in entries}
    mine = [h for h in rows["history"] if h["entry_id"] in entry_ids]
    adds = Counter(h["entry_id"] for h in mine if h["action"] == "ADD")
    assert adds == Counter(dict.fromkeys(entry_ids, 1))
    # a later session's build may supersede a fact (consolidation at build time)
    assert {h["action"] for h in mine} <= {"ADD", "SUPERSEDE"}
    links = Counter(int(k["dst_id"]) for k in rows["links"] if k["relation"] == "extracted_as")
    assert {i: links[i] for i in entry_ids} == dict.fromkeys(entry_ids, 1)


def lock_waiters(conn: Conn) -> list[Row]:
    """Other backends of this database waiting on a heavyweight lock."""
    return select(
        conn,
        "SELECT pid, query FROM pg_stat_activity"
        " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        " AND pid <> pg_backend_pid()",
    )


def backend_alive(conn: Conn, pid: int) -> bool:
    return bool(select(conn, "SELECT 1 FROM pg_stat_activity WHERE pid = %s", pid))


# ------------------------------------------------------------------------------ tests


def test_worker_builds_enqueued_sessions_and_stops_cleanly(
    db: Conn, redis_url: str, start_worker: Callable[[], Worker], build_actor: Actor
) -> None:
    worker = start_worker()
    tenant, session_ids = ingest_sample(db)
    pending = [p for p in sessions_to_build(db, now=datetime.now(UTC)) if p[0] == tenant]
    assert actors.enqueue_builds(build_actor, pending) == len(session_ids) == 5

    # A build logs session_built after its commit: wait for both.
    wait_for(
        lambda: (
            set(statuses(db, tenant).values()) == {"built"}
            and all(worker.builds(s) for s in session_ids)
        ),
        BUILD_S,
        lambda: f"every session to be built ({statuses(db, tenant)})\n{worker.describe()}",
    )
    events = {
        e["id"]: e
        for e in select(db, "SELECT * FROM memory_session_events WHERE tenant_id = %s", tenant)
    }
    for session_id in session_ids:
        assert_built_exactly_once(db, tenant, session_id)
        assert worker.builds(session_id) == ["built"]
    for entry in select(db, "SELECT * FROM memory_entries WHERE tenant_id = %s", tenant):
        assert entry["source_event_ids"]
        assert {events[i]["session_id"] for i in entry["source_event_ids"]} == {
            entry["source_session_id"]
        }
        assert entry["source_external_ids"] == [
            events[i]["external_id"] for i in entry["source_event_ids"]
        ]
    # Each build queued a projection: the read models catch up with every entry change.
    last = select(db, "SELECT max(id) AS id FROM memory_entry_history WHERE tenant_id = %s", tenant)
    wait_for(
        lambda: checkpoint(db, tenant) == last[0]["id"],
        BUILD_S,
        lambda: f"the read models to catch up\n{worker.describe()}",
    )
    skills = {s.skill_key: s.evidence_count for s in list_skills(db, tenant, agent_id="atlas")}
    assert skills == {"train_search_v2+book_ticket": 2, "flight_search": 1}
    assert {p.key for p in get_profile(db, tenant, "tom")} >= {"constraint:diet"}
    assert worker.stop() == 0, worker.describe()
    # The worker counted its builds, and what each gate dropped, in the shared metrics.
    dropped: Counter[str] = Counter()
    for s in select(db, "SELECT build_stats FROM memory_sessions WHERE tenant_id = %s", tenant):
        dropped.update(s["build_stats"]["dropped"])
    assert +dropped  # the sample gives the gates work
    assert counted(redis_url, "memledger_session_builds_total") == {("built",): 5}
    assert counted(redis_url, "memledger_gate_drops_total") == {
        (gate,): n for gate, n in (+dropped).items()
    }


def test_worker_killed_mid_build_leaves_no_half_built_session(
    db: Conn,
    fresh_db_url: str,
    redis_url: str,
    tmp_path: Path,
    start_worker: Callable[[], Worker],
    build_actor: Actor,
) -> None:
    worker = start_worker()
    tenant, session_ids = ingest_sample(db)
    target = session_ids[0]

    with connect(fresh_db_url) as locker:  # holds the lock in an open transaction
        locker.execute("LOCK TABLE memory_entries IN ACCESS EXCLUSIVE MODE")
        build_actor.send(tenant, target)
        waiting = wait_for(
            lambda: lock_waiters(db),
            BUILD_S,
            lambda: f"the worker's build to wait on memory_entries\n{worker.describe()}",
        )
        assert len(waiting) == 1 and "memory_entries" in waiting[0]["query"], waiting
        os.kill(worker.proc.pid, signal.SIGKILL)
        assert worker.proc.wait(timeout=10) == -signal.SIGKILL
        locker.rollback()
    # The orphaned backend runs into the closed socket and its transaction aborts.
    orphan = waiting[0]["pid"]
    wait_for(lambda: not backend_alive(db, orphan), BUILD_S, lambda: "the orphaned backend to end")

    s = session_of(db, tenant, target)
    assert (s["status"], s["build_attempts"], s["build_version"]) == ("closed", 0, None)
    assert built_rows(db, tenant) == {"observations": [], "entries": [], "links": [], "history": []}

    sweep = subprocess.Popen(  # closes idle sessions, queues every pending build
        [str(MEMLEDGER), "sweep"],
        env=worker_env(fresh_db_url, redis_url, tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        start_worker()  # meanwhile
        out, err = sweep.communicate(timeout=60)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.communicate()
    assert sweep.returncode == 0, err
    assert f"queued {len(session_ids)} builds" in out
    wait_for(
        lambda: set(statuses(db, tenant).values()) == {"built"},
        BUILD_S,
        lambda: f"every session to be built ({statuses(db, tenant)})",
    )
    for session_id in session_ids:
        assert_built_exactly_once(db, tenant, session_id)


def test_duplicate_build_messages_are_no_ops(
    db: Conn, redis_url: str, start_worker: Callable[[], Worker], build_actor: Actor
) -> None:
    worker = start_worker()
    tenant, session_ids = ingest_sample(db)
    target = session_ids[-1]

    build_actor.send(tenant, target)
    build_actor.send(tenant, target)
    wait_for(
        lambda: len(worker.builds(target)) == 2,
        BUILD_S,
        lambda: f"both messages to be handled\n{worker.describe()}",
    )
    assert worker.builds(target) == ["built", "unchanged"]
    assert_built_exactly_once(db, tenant, target)
    after_build = built_rows(db, tenant)
    session_after_build = session_of(db, tenant, target)

    build_actor.send(tenant, target)  # redelivered long after the build
    wait_for(
        lambda: len(worker.builds(target)) == 3,
        BUILD_S,
        lambda: f"the late duplicate to be handled\n{worker.describe()}",
    )
    assert worker.builds(target) == ["built", "unchanged", "unchanged"]
    wait_for(  # the worker writes its counts every few seconds
        lambda: (
            counted(redis_url, "memledger_session_builds_total")
            == {("built",): 1, ("unchanged",): 2}
        ),
        BUILD_S,
        lambda: f"the builds to be counted\n{worker.describe()}",
    )
    assert built_rows(db, tenant) == after_build
    assert session_of(db, tenant, target) == session_after_build
    others = {sid: st for sid, st in statuses(db, tenant).items() if sid != target}
    assert set(others.values()) == {"closed"}  # only the enqueued session was built


def test_a_build_whose_connection_the_server_cut_records_its_failure(
    db: Conn, fresh_db_url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build's connection dropped mid-build (an idle-in-transaction timeout during a slow
    model call) could not record the failure: it was retried without end, unrecorded."""
    tenant, session_ids = ingest_sample(db)

    def cut(conn: Conn, *args: Any, **kwargs: Any) -> None:
        conn.execute("SELECT 1")  # mid-transaction
        conn.close()
        raise psycopg.OperationalError("the connection is lost")

    monkeypatch.setattr(builder, "build_session", cut)
    config = BuildConfig(HeuristicExtractor(), HashEmbedder())
    with make_pool(fresh_db_url, max_size=2) as pool:
        now = datetime.now(UTC)
        outcome = builder.build_or_record_failure(
            pool.connection, tenant, session_ids[0], config, now=now, backoff=timedelta(0)
        )
    assert (outcome.status, outcome.attempts) == ("failed", 1)
    session = session_of(db, tenant, session_ids[0])
    assert (session["status"], session["build_attempts"]) == ("failed", 1)
    assert "OperationalError: the connection is lost" in session["last_error"]
