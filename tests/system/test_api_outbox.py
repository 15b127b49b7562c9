"""Writes that survive a queue outage and client retries: the build outbox, and
idempotency keys on memory writes (the API on a real socket, real PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import timedelta

import httpx
import pytest

from observations.outbox import QueueUnavailable
from tests.events import says
from tests.system.live_api import NOW, Server
from tests.system.test_api import client_for


@pytest.fixture
def queue_down(server: Server) -> Iterator[None]:
    """The server's queue refuses every message in the block."""

    def refuse(sessions: Sequence[tuple[str, int]]) -> None:
        raise QueueUnavailable(error="Connection refused")

    working = server.state.send_builds
    server.state.send_builds = refuse
    try:
        yield
    finally:
        server.state.send_builds = working


def outbox(server: Server, tenant: str) -> list[int]:
    rows = server.rows(
        "SELECT id FROM memory_sessions WHERE tenant_id = %s AND status = 'closed'"
        " AND build_queued_at IS NULL ORDER BY id",
        tenant,
    )
    return [r["id"] for r in rows]


def test_requests_are_answered_while_the_queue_is_down_and_builds_wait_in_the_outbox(
    server: Server, queue_down: None
) -> None:
    tenant = "tenant-outbox"
    day = NOW - timedelta(days=3)
    with client_for(server, tenant) as client:  # one keep-alive connection
        first = client.post("/v1/events", json={"events": [says(1, "Hi.", day)]})
        later = says(2, "Hello again.", day + timedelta(days=1))  # closes the first session
        second = client.post("/v1/events", json={"events": [later]})
        third = client.post(f"/v1/sessions/{second.json()['results'][0]['session_id']}/close")
        memory = {"user_id": "maya", "messages": [{"role": "user", "content": "I swim."}]}
        fourth = client.post("/v1/memories", json=memory)
    assert [r.status_code for r in (first, second, third, fourth)] == [200] * 4
    closed = [
        *second.json()["sessions_closed"],
        third.json()["session_id"],
        *fourth.json()["sessions_closed"],
    ]
    assert len(closed) == 3 and outbox(server, tenant) == sorted(closed)
    assert server.queued == []

    server.state.send_builds = server.queued.extend  # the queue is back
    assert server.state.drain_outbox() == 3
    assert sorted(s for t, s in server.queued if t == tenant) == sorted(closed)
    assert outbox(server, tenant) == [] and server.state.drain_outbox() == 0
    server.queued.clear()


def memory_count(server: Server, tenant: str) -> int:
    rows = server.rows(
        "SELECT count(*) AS n FROM memory_session_events WHERE tenant_id = %s", tenant
    )
    return int(rows[0]["n"])


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/memories", {"user_id": "maya", "messages": [{"role": "user", "content": "I sail."}]}),
        (
            "/v3/memories/add/",
            {"messages": [{"role": "user", "content": "I sail."}], "user_id": "maya"},
        ),
    ],
)
def test_a_retried_memory_write_with_its_key_stores_once(
    server: Server, path: str, body: dict[str, object]
) -> None:
    tenant = f"tenant-idem-{path.count('/')}"
    key = {"Idempotency-Key": "7b2f0c1e-retry"}
    with client_for(server, tenant) as client:
        first = client.post(path, json=body, headers=key)
        again = client.post(path, json=body, headers=key)
        assert first.status_code == again.status_code == 200, again.text
        assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
        assert memory_count(server, tenant) == 1

        other = client.post(path, json={**body, "user_id": "tom"}, headers=key)
        assert other.status_code == 422 and other.json()["fields"]["field"] == "Idempotency-Key"
        fresh = client.post(path, json=body, headers={"Idempotency-Key": "another"})
        assert fresh.status_code == 200 and memory_count(server, tenant) == 2
        bad = client.post(path, json=body, headers={"Idempotency-Key": "has space"})
        assert bad.status_code == 422 and "Idempotency-Key" in bad.json()["message"]
    server.queued.clear()


def test_concurrent_uses_of_one_key_store_once(server: Server) -> None:
    tenant = "tenant-idem-race"
    body = {"user_id": "maya", "messages": [{"role": "user", "content": "I row."}]}
    answers: list[httpx.Response] = []

    def post() -> None:
        with client_for(server, tenant) as client:
            answers.append(client.post("/v1/memories", json=body, headers={"Idempotency-Key": "k"}))

    threads = [threading.Thread(target=post) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [a.status_code for a in answers] == [200] * 6
    assert len({a.text for a in answers}) == 1 and memory_count(server, tenant) == 1
    server.queued.clear()


def test_a_sweep_while_the_queue_is_down_closes_and_leaves_the_builds_in_the_outbox(
    server: Server, queue_down: None
) -> None:
    tenant = "tenant-outbox-sweep"
    day = NOW - timedelta(days=3)
    with client_for(server, tenant) as client:
        posted = client.post("/v1/events", json={"events": [says(1, "Hi.", day)]})
        session = posted.json()["results"][0]["session_id"]
        with server.at(NOW + timedelta(hours=1)):  # idle on both clocks
            swept = client.post("/v1/maintenance/sweep")
    assert swept.status_code == 200, swept.text
    stats = swept.json()["stats"]
    assert (stats["closed_idle"], stats["queued"], stats["waiting"]) == (1, 0, 1)
    assert outbox(server, tenant) == [session]

    server.state.send_builds = server.queued.extend  # the queue is back
    assert server.state.drain_outbox() == 1 and server.queued == [(tenant, session)]
    server.queued.clear()
