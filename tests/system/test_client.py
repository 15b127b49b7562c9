"""memledger.client against a real server: every /v1 operation typed, the API's errors as
typed exceptions, and retries across a server restart that store nothing twice."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from memledger.client import (
    AsyncClient,
    Client,
    InvalidRequest,
    NotFound,
    Retry,
    Unauthorized,
)
from ops.services import drop_database, recreate_database
from tests.events import sample_events
from tests.system.live_api import Server, api_server

FAST = Retry(attempts=40, backoff=0.05, max_wait=0.25)


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with Client(server.url, server.key("client-a"), retry=FAST) as c:
        yield c


def test_every_operation_answers_typed(server: Server, client: Client) -> None:
    stored = client.append_events(sample_events())
    assert stored.accepted == len(sample_events()) and stored.duplicates == 0
    again = client.append_events(sample_events())
    assert (again.accepted, again.duplicates) == (0, len(sample_events()))
    for session_id in stored.sessions_closed:
        client.close_session(session_id)
    open_sessions = {r.session_id for r in stored.results} - set(stored.sessions_closed)
    for session_id in sorted(s for s in open_sessions if s is not None):
        assert client.close_session(session_id).closed
    server.build_queued()

    hits = client.search("coffee", user_id="maya", limit=5)
    assert hits.results and hits.results[0].entry.owner_id == "maya"
    bundle = client.context("Book me a flight to Berlin", user_id="maya", agent_id="atlas")
    assert "Maya Chen" in bundle.text
    profile = client.profile("maya")
    assert any(row.key.startswith("preference:") for row in profile)
    skills = client.skills("atlas", status="proposed")
    assert skills and all(s.status == "proposed" for s in skills)
    published = client.review_skill(skills[0].id, "publish", "ops-lead", "checked")
    assert published.status == "published"

    entry = client.entry(hits.results[0].entry.id)
    edited = client.edit_entry(entry.id, "Maya Chen drinks her coffee black.")
    assert edited.statement == "Maya Chen drinks her coffee black."
    assert [h.action for h in client.history(entry.id)][-1] == "UPDATE"
    assert client.delete_entry(entry.id).deleted == 1

    remembered = client.remember(
        "nina", [{"role": "user", "content": "I moved to Gdansk last month."}],
        idempotency_key="nina-move",
    )  # fmt: skip
    replay = client.remember(
        "nina", [{"role": "user", "content": "I moved to Gdansk last month."}],
        idempotency_key="nina-move",
    )  # fmt: skip
    assert replay == remembered
    assert client.maintenance("supersede").status in ("done", "busy")
    assert client.forget_user("maya").deleted > 0


def test_the_apis_errors_come_back_typed(server: Server, client: Client) -> None:
    with pytest.raises(NotFound) as missing:
        client.entry(987_654_321)
    assert missing.value.status == 404 and missing.value.error
    with pytest.raises(InvalidRequest) as bad:
        client.append_events([{**sample_events()[0], "role": "robot", "external_id": "bad-1"}])
    assert bad.value.fields["rejected"][0]["field"] == "role"
    with Client(server.url, "ml_unknown", retry=FAST) as stranger, pytest.raises(Unauthorized):
        stranger.profile("maya")


def test_the_async_client_answers_the_same(server: Server) -> None:
    key = server.key("client-async")

    async def run() -> tuple[int, int]:
        async with AsyncClient(server.url, key, retry=FAST) as ml:
            first = await ml.append_events(sample_events()[:3])
            again = await ml.append_events(sample_events()[:3])
            with pytest.raises(NotFound):
                await ml.entry(987_654_321)
            return first.accepted, again.duplicates

    assert asyncio.run(run()) == (3, 3)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_retry_across_a_server_restart_stores_every_event_once(
    admin_url: str, template_db: str, redis: Any
) -> None:
    """The server goes away and comes back on the same port while the client sends: the
    client waits it out, and the batch it may have sent twice is stored once."""
    db_url = recreate_database(admin_url, "memledger_test_client_restart", template_db)
    redis_url = f"unix://{redis.socket_file}"
    port = _free_port()
    events = sample_events()
    try:
        with api_server(db_url, redis_url, port=port) as first:
            key = first.key("restart")
            with Client(first.url, key, retry=FAST) as ml:
                assert ml.append_events(events[:10]).accepted == 10
        # the server is down now; it comes back in a moment, on the same port
        back = threading.Event()

        def restart() -> None:
            time.sleep(1.0)
            with api_server(db_url, redis_url, port=port):
                back.set()
                time.sleep(6)

        thread = threading.Thread(target=restart)
        thread.start()
        try:
            with Client(f"http://127.0.0.1:{port}", key, retry=FAST) as ml:
                out = ml.append_events(events)  # the first ten again, then the rest
                assert back.is_set()
                assert (out.accepted, out.duplicates) == (len(events) - 10, 10)
        finally:
            thread.join()
        with api_server(db_url, redis_url) as check:
            stored = check.rows(
                "SELECT external_id, count(*) AS n FROM memory_session_events"
                " WHERE tenant_id = 'restart' GROUP BY external_id"
            )
        assert len(stored) == len(events) and {r["n"] for r in stored} == {1}
    finally:
        drop_database(admin_url, "memledger_test_client_restart")
