"""Context and search requests compute at most MEMLEDGER_API_READ_CONCURRENCY at a time in
a process; the others wait their turn on the event loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from observations.embed import HashEmbedder
from observations.embed_base import Vectors
from ops.services import drop_database, recreate_database
from tests.system.live_api import Server, api_server


class _Overlaps:
    """The hash embedder, slowed down, counting the calls that run at once."""

    def __init__(self) -> None:
        self._inner = HashEmbedder()
        self.model, self.dim = self._inner.model, self._inner.dim
        self._lock = threading.Lock()
        self._now = 0
        self.most = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self._now += 1
            self.most = max(self.most, self._now)
        time.sleep(0.2)  # long enough for every request to arrive meanwhile
        with self._lock:
            self._now -= 1
        return self._inner.embed(texts)


@pytest.fixture
def database(admin_url: str, template_db: str) -> Iterator[str]:
    name = "memledger_test_api_reads"
    yield recreate_database(admin_url, name, template_db)
    drop_database(admin_url, name)


def _most_at_once(server: Server, route: str) -> int:
    overlaps = _Overlaps()
    server.state.embedder = overlaps
    headers = {"Authorization": f"Bearer {server.key('tenant-r')}"}

    def ask(i: int) -> int:
        body: dict[str, Any] = {"query": f"what does maya like? {i}", "user_id": "maya"}
        return httpx.post(f"{server.url}{route}", json=body, headers=headers).status_code

    with ThreadPoolExecutor(6) as pool:
        assert set(pool.map(ask, range(6))) == {200}
    return overlaps.most


@pytest.mark.parametrize("route", ["/v1/context", "/v1/search"])
def test_reads_compute_at_most_the_configured_number_at_once(
    database: str, redis: Any, route: str
) -> None:
    redis_url = f"unix://{redis.socket_file}"
    with api_server(database, redis_url, api_read_concurrency=1) as server:
        assert _most_at_once(server, route) == 1
    with api_server(database, redis_url, api_read_concurrency=3) as server:
        assert _most_at_once(server, route) == 3
