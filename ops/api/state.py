"""What the API's handlers share: settings, a connection pool, the embedder, and hooks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Histogram
from psycopg_pool import ConnectionPool

from ledger.db import Conn
from observations.embed import Embedder
from ops.settings import Settings
from retrieval.access import AccessLog
from retrieval.recent import RecentWindow
from retrieval.search import SearchSettings
from retrieval.tokens import TokenCounter


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.events = Counter(
            "memledger_events_ingested", "Events appended through the API", ["status"], registry=r
        )
        self.latency = Histogram(
            "memledger_retrieval_seconds",
            "Search and context latency",
            ["route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=r,
        )


@dataclass
class ApiState:
    settings: Settings
    pool: ConnectionPool[Conn]
    embedder: Embedder
    counter: TokenCounter
    search: SearchSettings
    window: RecentWindow | None
    enqueue_build: Callable[[str, int], object]
    clock: Callable[[], datetime]
    redis_ping: Callable[[], bool]
    access: AccessLog = field(default_factory=AccessLog)
    metrics: Metrics = field(default_factory=Metrics)

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        with self.pool.connection() as conn:
            yield conn
