"""What the API's handlers share: settings, a connection pool, the embedder, and hooks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import anyio
import psycopg
import redis
import structlog
from psycopg_pool import ConnectionPool

from ledger.db import Conn
from observations.embed import Embedder
from observations.outbox import HandOver, QueueUnavailable, Send, hand_over
from ops.metrics import SharedMetrics
from ops.settings import Settings
from retrieval.access import AccessLog
from retrieval.recent import RecentWindow
from retrieval.search import SearchSettings
from retrieval.tokens import TokenCounter

log = structlog.get_logger(__name__)


@dataclass
class ApiState:
    settings: Settings
    pool: ConnectionPool[Conn]
    embedder: Embedder
    counter: TokenCounter
    search: SearchSettings
    window: RecentWindow | None
    send_builds: Send  # build messages to the queue; raises QueueUnavailable while it is down
    enqueue_projection: Callable[[str], object]  # after entries change outside a build
    clock: Callable[[], datetime]
    redis_ping: Callable[[], bool]
    metrics: SharedMetrics
    access: AccessLog = field(default_factory=AccessLog)
    # whether the queue's Redis restarted since last asked (it may have lost messages);
    # raises redis.RedisError while it is down
    queue_restarted: Callable[[], bool] = field(default=lambda: False)
    # Appends are serialized by the ledger's lock. A process lets one request at a time
    # validate and append a batch: the others wait here, not holding the interpreter
    # from the one whose append holds the ledger.
    appending: threading.Lock = field(default_factory=threading.Lock)
    # Context and search requests compute in at most this many worker threads of the
    # process at once (about one per core); the others wait on the event loop, not in
    # threads taking turns with the interpreter (docs/api.md).
    reads: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(1))
    # builds handed over before this may be lost with a restarted Redis: handed over again
    _lost_before: datetime | None = field(default=None, init=False, repr=False)

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
        tenants, and after a restart of the queue's Redis every one handed over before it
        and not built yet: its message may be lost). Never raises: what cannot be handed
        over now (the queue or the database is down) stays in the outbox for the next
        hand-over. Returns how many were."""
        try:
            if what is None:
                what = self._due_builds()
            with self.connection() as conn:
                handed = hand_over(conn, self.send_builds, what)
        except (QueueUnavailable, redis.RedisError, psycopg.Error) as exc:
            tenant_id = what.tenant_id if what else None
            log.warning("builds_left_in_outbox", tenant_id=tenant_id, error=str(exc))
            return 0
        if not handed and what.stale_before == self._lost_before:
            self._lost_before = None  # every build the restart may have lost is queued again
        return len(handed)

    def _due_builds(self) -> HandOver:
        now = self.clock()
        if self.queue_restarted():
            # handed over before now (the claim compares with <=; times are whole µs)
            self._lost_before = now - timedelta(microseconds=1)
            log.warning("queue_restarted", lost_before=self._lost_before.isoformat())
        max_attempts = self.settings.build_max_attempts
        return HandOver(now, max_attempts, stale_before=self._lost_before)
