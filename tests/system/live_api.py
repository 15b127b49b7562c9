"""A real uvicorn server on loopback for the API tests, with builds run on demand."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import uvicorn

from ledger.db import connect, make_pool
from materializers.runner import project
from observations.builder import BuildConfig, build_session
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.api.app import create_app
from ops.api.keys import create_key
from ops.api.state import ApiState
from ops.metrics import SharedMetrics
from ops.settings import Settings
from ops.wiring import read_concurrency
from retrieval.recent import RecentWindow
from retrieval.search import SearchSettings
from retrieval.tokens import approx_count

NOW = datetime(2025, 10, 7, tzinfo=UTC)


@dataclass
class Server:
    url: str
    db_url: str
    state: ApiState
    queued: list[tuple[str, int]] = field(default_factory=list)
    projections: list[str] = field(default_factory=list)
    clock: list[datetime] = field(default_factory=lambda: [NOW])  # the server's time
    uvicorn: uvicorn.Server | None = None

    def settle(self, timeout: float = 20) -> None:
        """Wait until no request is in flight: a response reaches the client before the
        background tasks of its request (the hand-over of builds and projections) have
        run, and a build started before them would find nothing queued."""
        deadline = time.monotonic() + timeout
        while self.uvicorn is not None and self.uvicorn.server_state.tasks:
            if time.monotonic() > deadline:
                raise TimeoutError("requests still in flight")
            time.sleep(0.005)

    @contextmanager
    def at(self, moment: datetime) -> Iterator[None]:
        """The server's clock shows ``moment`` in the block (else it stands at NOW)."""
        self.clock[0] = moment
        try:
            yield
        finally:
            self.clock[0] = NOW

    def rows(self, query: str, *args: Any) -> list[dict[str, Any]]:
        """What ``query`` reads from the server's database now (as its owner: every tenant)."""
        with connect(self.db_url, autocommit=True) as conn:
            return conn.execute(query, args).fetchall()

    def key(self, tenant: str) -> str:
        with connect(self.db_url, autocommit=True) as conn:
            return create_key(conn, tenant, name=f"test-{tenant}", now=NOW)[1]

    def build_queued(self) -> int:
        """Build what the API queued, then bring the read models up to date."""
        self.settle()
        config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
        done = 0
        with connect(self.db_url, autocommit=True) as conn:
            while self.queued:
                tenant, session_id = self.queued.pop(0)
                build_session(conn, tenant, session_id, config, now=NOW)
                project(conn, tenant, now=NOW)
                done += 1
        return done

    def project_queued(self) -> list[str]:
        """Run the read-model projections the API queued; the tenants, in order."""
        self.settle()
        done = []
        with connect(self.db_url, autocommit=True) as conn:
            while self.projections:
                done.append(self.projections.pop(0))
                project(conn, done[-1], now=NOW)
        return done


@contextmanager
def api_server(db_url: str, redis_url: str, *, port: int = 0, **more: Any) -> Iterator[Server]:
    """The API as ``memledger serve`` makes it, with the settings in ``more``, on ``port``
    (0: any free one)."""
    settings = Settings(database_url=db_url, redis_url=redis_url, embedder="hash", **more)
    with make_pool(db_url, max_size=8, timeout=settings.pool_timeout_seconds) as pool:
        queued: list[tuple[str, int]] = []
        projections: list[str] = []
        clock = [NOW]
        window = RecentWindow.from_url(redis_url)
        state = ApiState(
            settings=settings,
            pool=pool,
            embedder=HashEmbedder(),
            counter=approx_count,
            search=SearchSettings(),
            window=window,
            send_builds=queued.extend,
            enqueue_projection=projections.append,
            clock=lambda: clock[0],
            redis_ping=lambda: bool(window.client.ping()),
            metrics=SharedMetrics(window.client),
            reads=anyio.CapacityLimiter(read_concurrency(settings)),
        )
        server = uvicorn.Server(
            uvicorn.Config(create_app(state), host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield Server(
                f"http://127.0.0.1:{port}", db_url, state, queued, projections, clock, server
            )
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            window.client.close()
            window.client.connection_pool.disconnect()
