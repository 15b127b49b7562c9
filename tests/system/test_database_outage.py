"""The API while its PostgreSQL is killed and after it is back: every request is answered at
once — JSON 503 with Retry-After, or 401 for a key known to be bad — and the same server
answers again once the database returns."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import httpx
import psutil
import pytest

from tests.system.live_api import api_server
from tests.system.own_postgres import OwnPostgres

# Not a measure of "at once" (a loaded machine may take its time) but a bound on a hang: a
# request that waited for the database (a pool's 30 s default, a TCP timeout) fails on it.
HANG_S = 10.0


@pytest.fixture
def postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres.create()
    yield server
    server.remove()


def kill(server: OwnPostgres) -> None:
    """kill -9 of the postmaster; returns once its backends have gone too (they leave when
    they notice it died), as a restarted server requires."""
    postmaster = psutil.Process(server.pid)
    backends = postmaster.children()
    os.kill(postmaster.pid, signal.SIGKILL)
    _, alive = psutil.wait_procs([postmaster, *backends], timeout=30)
    assert not alive, f"PostgreSQL processes left after its postmaster was killed: {alive}"


def test_a_killed_database_is_answered_503_at_once_and_the_same_server_recovers(
    postgres: OwnPostgres, redis_url: str
) -> None:
    db_url = postgres.database("memledger")
    # keys are remembered longer than this test runs, whatever the machine's load
    with (
        api_server(db_url, redis_url, api_key_cache_seconds=600) as server,
        httpx.Client(base_url=server.url, timeout=HANG_S) as api,
    ):
        good, unseen = server.key("acme"), server.key("acme")

        def as_(key: str | None) -> dict[str, str]:
            return {"Authorization": f"Bearer {key}"} if key else {}

        event = {"external_id": "e1", "channel_id": "c", "role": "user", "actor_id": "maya",
                 "content": "I like green tea", "occurred_at": "2025-10-06T10:00:00Z"}  # fmt: skip
        remember = {"messages": [{"role": "user", "content": "I like tea"}], "user_id": "maya"}
        requests: dict[str, Callable[[str | None], httpx.Response]] = {
            "search": lambda k: api.post("/v1/search", json={"query": "tea"}, headers=as_(k)),
            "events": lambda k: api.post("/v1/events", json={"events": [event]}, headers=as_(k)),
            "entry": lambda k: api.get("/v1/entries/1", headers=as_(k)),
            "mem0 add": lambda k: api.post("/v3/memories/add/", json=remember, headers=as_(k)),
        }
        assert requests["events"](good).status_code == 200
        assert requests["search"]("mlk_not-a-key").status_code == 401  # now known to be bad
        assert api.get("/readyz").status_code == 200

        kill(postgres)
        for _ in range(3):  # the pool's broken connections first, then none at all
            for name, request in requests.items():
                response = request(good)
                assert response.status_code == 503, (name, response.text)
                assert response.headers["retry-after"] == "1"
                assert response.json()["error"] == "DatabaseUnavailable"
        for key, status in [("mlk_not-a-key", 401), (None, 401), (unseen, 503)]:
            response = requests["search"](key)
            assert response.status_code == status, (key, response.text)
        ready = api.get("/readyz")
        assert ready.status_code == 503 and ready.json()["database"] is False

        postgres.start()
        deadline = time.monotonic() + 30
        while (response := requests["search"](good)).status_code != 200:
            assert response.status_code == 503, response.text
            assert time.monotonic() < deadline, "the API did not reconnect to PostgreSQL"
            time.sleep(0.1)
        assert requests["events"](unseen).json()["duplicates"] == 1  # the first one stayed
        assert requests["mem0 add"](good).status_code == 200
        assert api.get("/readyz").status_code == 200
