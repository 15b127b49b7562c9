"""What the API's handlers share: settings, a connection pool, the embedder, and hooks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

import dramatiq
import psycopg
import redis
import structlog
from psycopg_pool import ConnectionPool

from ledger.db import Conn
from observations.embed import Embedder
from observations.outbox import HandOver, Send, hand_over
from ops.metrics import SharedMetrics
from ops.settings import Settings
from retrieval.access import AccessLog
from retrieval.recent import RecentWindow
from retrieval.search import SearchSettings
from retrieval.tokens import TokenCounter

log = structlog.get_logger(__name__)
QUEUE_DOWN = (redis.RedisError, dramatiq.errors.BrokerError)


@dataclass
class ApiState:
    settings: Settings
    pool: ConnectionPool[Conn]
    embedder: Embedder
    counter: TokenCounter
    search: SearchSettings
    window: RecentWindow | None
    send_builds: Send  # build messages to the queue; raises while the queue is down
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

    def queue_builds(self, tenant_id: str, session_ids: Sequence[int]) -> int:
        """Hand the builds of the tenant's sessions just closed to the queue (see
        :meth:`drain_outbox`)."""
        if not session_ids:
            return 0
        what = HandOver(self.clock(), self.settings.build_max_attempts, tenant_id=tenant_id,
                        session_ids=session_ids)  # fmt: skip
        return self.drain_outbox(what)

    def drain_outbox(self, what: HandOver | None = None) -> int:
        """Hand builds waiting in the outbox to the queue (by default every one due, across
        tenants). Never raises: what cannot be handed over now (the queue or the database
        is down) stays in the outbox for the next hand-over. Returns how many were."""
        what = what or HandOver(self.clock(), self.settings.build_max_attempts)
        try:
            with self.connection() as conn:
                return len(hand_over(conn, self.send_builds, what))
        except (*QUEUE_DOWN, psycopg.Error) as exc:
            log.warning("builds_left_in_outbox", tenant_id=what.tenant_id, error=str(exc))
            return 0
