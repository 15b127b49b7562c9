"""What the API's handlers share: settings, a connection pool, the embedder, and hooks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from psycopg_pool import ConnectionPool

from ledger.db import Conn
from observations.embed import Embedder
from ops.metrics import SharedMetrics
from ops.settings import Settings
from retrieval.access import AccessLog
from retrieval.recent import RecentWindow
from retrieval.search import SearchSettings
from retrieval.tokens import TokenCounter


@dataclass
class ApiState:
    settings: Settings
    pool: ConnectionPool[Conn]
    embedder: Embedder
    counter: TokenCounter
    search: SearchSettings
    window: RecentWindow | None
    enqueue_build: Callable[[str, int], object]
    enqueue_projection: Callable[[str], object]  # after entries change outside a build
    clock: Callable[[], datetime]
    redis_ping: Callable[[], bool]
    metrics: SharedMetrics
    access: AccessLog = field(default_factory=AccessLog)
    # Appends are serialized by the ledger's lock. A process lets one request at a time
    # validate and append a batch: the others wait here, not holding the interpreter
    # from the one whose append holds the ledger.
    appending: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        with self.pool.connection() as conn:
            yield conn
