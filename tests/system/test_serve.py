"""``memledger serve --processes 2`` as a real process tree on loopback: concurrent ingest
is answered event by event, a repeated delivery is a no-op, and the recent-message window
written after each commit reaches the context bundle."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from ledger.db import connect
from ops.api.keys import create_key
from ops.bench.api import Served, serving
from ops.services import drop_database, recreate_database
from tests.events import sample_events

SAMPLE = sample_events()


def _copy(n: int) -> list[dict[str, Any]]:
    """The sample on channels of its own (copy n)."""
    return [
        {**e, "channel_id": f"{e['channel_id']}-{n}", "external_id": f"{e['external_id']}-{n}"}
        for e in SAMPLE
    ]


@pytest.fixture
def served_db(
    admin_url: str, template_db: str, request: pytest.FixtureRequest
) -> Iterator[tuple[str, str]]:
    """A database of the test's own, and an API key of tenant acme on it."""
    name = f"memledger_test_{request.node.name[5:45]}"
    db_url = recreate_database(admin_url, name, template_db)
    try:
        with connect(db_url, autocommit=True) as conn:
            key = create_key(conn, "acme", name="t", now=datetime(2025, 1, 1, tzinfo=UTC))[1]
        yield db_url, key
    finally:
        drop_database(admin_url, name)


@contextmanager
def api(
    served_db: tuple[str, str], redis: Any, **options: Any
) -> Iterator[tuple[Served, httpx.Client]]:
    """``memledger serve`` on the database, and a client with its key."""
    db_url, key = served_db
    with (
        serving(db_url, f"unix://{redis.socket_file}", **options) as served,
        httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {key}"}) as client,
    ):
        yield served, client


def test_several_server_processes_ingest_and_answer(
    served_db: tuple[str, str], redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLEDGER_EMBEDDER", "hash")
    monkeypatch.setenv("MEMLEDGER_LOG_LEVEL", "warning")
    copies = [_copy(n) for n in range(8)]
    with api(served_db, redis, processes=2) as (served, client):
        # the processes serving are children of the one bench api's CPU clock reads
        assert len(served.process.children(recursive=True)) >= 2
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(lambda b: client.post("/v1/events", json={"events": b}), copies)
            )
        assert [a.status_code for a in answers] == [200] * len(copies)
        assert [a.json()["accepted"] for a in answers] == [len(SAMPLE)] * len(copies)
        again = client.post("/v1/events", json={"events": copies[3]}).json()
        assert (again["accepted"], again["duplicates"]) == (0, len(SAMPLE))
        assert client.get("/readyz").json() == {"ready": True, "database": True, "redis": True}

        last = copies[5][-1]
        body = {"query": "hello", "user_id": "maya", "channel_id": last["channel_id"]}
        bundle = client.post("/v1/context", json=body).json()["bundle"]
    with connect(served_db[0]) as conn:
        row = conn.execute("SELECT count(*) AS n FROM memory_session_events").fetchone()
    assert row is not None and row["n"] == len(SAMPLE) * len(copies)
    recent = [m["content"] for m in bundle["recent"]]
    assert recent and recent[-1] == last["content"]


def test_serve_with_workers_runs_the_consolidation_schedule(
    served_db: tuple[str, str], redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLEDGER_EMBEDDER", "hash")
    monkeypatch.setenv("MEMLEDGER_SCHEDULE_SWEEP_SECONDS", "1")
    # a gap of 1.2 s: every message is a session of its own, and the last one is idle on
    # both clocks (its time and its append's) soon after the request
    monkeypatch.setenv("MEMLEDGER_SESSION_GAP_MINUTES", "0.02")
    with api(served_db, redis, processes=1, workers=True) as (_, client):
        out = client.post("/v1/events", json={"events": SAMPLE}).json()
        assert out["accepted"] == len(SAMPLE)
        # the last session stays open: only the schedule's sweep closes it and queues its
        # build
        deadline = time.monotonic() + 60
        while _statuses(served_db[0]) != {"built"} and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _statuses(served_db[0]) == {"built"}


def _statuses(db_url: str) -> set[str]:
    with connect(db_url) as conn:
        rows = conn.execute("SELECT DISTINCT status FROM memory_sessions").fetchall()
    return {r["status"] for r in rows}


def test_serve_builds_in_a_child_process_at_a_lower_priority_that_dies_with_it(
    served_db: tuple[str, str], redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLEDGER_EMBEDDER", "hash")
    monkeypatch.setenv("MEMLEDGER_BUILD_NICE", "7")
    with api(served_db, redis, processes=1, workers=True) as (served, client):
        (builder,) = served.process.children()
        assert "worker" in builder.cmdline()
        deadline = time.monotonic() + 30  # it lowers its priority once it has started
        while builder.nice() == served.process.nice() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert builder.nice() == served.process.nice() + 7
        assert os.sched_getscheduler(builder.pid) == os.SCHED_OTHER  # idle only at 19
        out = client.post("/v1/events", json={"events": SAMPLE}).json()
        for open_session in {r["session_id"] for r in out["results"]} - {*out["sessions_closed"]}:
            client.post(f"/v1/sessions/{open_session}/close").raise_for_status()
        deadline = time.monotonic() + 60
        while _statuses(served_db[0]) != {"built"} and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _statuses(served_db[0]) == {"built"}
        served.process.kill()  # no chance to stop its child: the child stops itself
        builder.wait(timeout=15)


def test_serve_builds_at_idle_priority_by_default(
    served_db: tuple[str, str], redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLEDGER_EMBEDDER", "hash")
    with api(served_db, redis, processes=1, workers=True) as (served, _):
        (builder,) = served.process.children()
        deadline = time.monotonic() + 30  # it lowers its priority once it has started
        while os.sched_getscheduler(builder.pid) != os.SCHED_IDLE and time.monotonic() < deadline:
            time.sleep(0.1)
        assert os.sched_getscheduler(builder.pid) == os.SCHED_IDLE
        assert builder.nice() == 19
