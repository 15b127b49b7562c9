"""Thin dramatiq actors: validate the message, take a connection, call the stage, log.

Messages carry ids only. The actors are declared on an explicit broker by :func:`register`
(so importing this module never connects anywhere); their collaborators come from the
:class:`WorkerState` handed to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import dramatiq
import redis
import structlog
from psycopg_pool import ConnectionPool

from ledger.db import Conn
from ledger.errors import MemledgerError, SessionNotFound
from ledger.scope import check_id
from materializers import runner
from observations import builder
from observations.outbox import QueueUnavailable
from ops.metrics import BUILDS, GATE_DROPS, SharedMetrics
from ops.runtime import wall_clock
from ops.settings import Settings

log = structlog.get_logger(__name__)
BUILD_QUEUE = "builds"
READ_MODEL_QUEUE = "read_models"


@dataclass(frozen=True, slots=True)
class WorkerState:
    settings: Settings
    pool: ConnectionPool[Conn]
    config: builder.BuildConfig
    metrics: SharedMetrics


_state: WorkerState | None = None
_projector: dramatiq.Actor[[str], None] | None = None


def build_session(tenant_id: str, session_id: int) -> None:
    """Build one closed session; a failure is recorded on the session for the sweep."""
    check_id(tenant_id, "tenant_id")
    state = _require_state()
    failure: Exception | None = None
    with state.pool.connection() as conn:
        try:
            outcome = builder.build_session(
                conn, tenant_id, int(session_id), state.config, now=wall_clock()
            )
        except (SessionNotFound, builder.SessionNotClosed) as exc:
            log.warning("build_skipped", tenant_id=tenant_id, session_id=session_id, error=str(exc))
            state.metrics.add([(BUILDS, ("skipped",), 1)])
            return
        except Exception as exc:  # any extractor/embedder failure: record it, keep the events
            failure = exc
    if failure is not None:
        # On a connection of its own, once the build's is back in the pool (rolled back,
        # or dropped if the server cut it mid-build: then it cannot record anything).
        with state.pool.connection() as conn:
            _record_failure(conn, state, tenant_id, session_id, failure)
        state.metrics.add([(BUILDS, ("failed",), 1)])
        return
    if outcome.status == "busy":
        raise dramatiq.Retry(delay=1000)
    drops = [(GATE_DROPS, (gate,), n) for gate, n in outcome.dropped.items()]
    state.metrics.add([(BUILDS, (outcome.status,), 1), *drops])
    if outcome.status == "built" and _projector is not None:
        enqueue_projection(tenant_id)
    log.info(
        "session_built",
        tenant_id=tenant_id,
        session_id=session_id,
        status=outcome.status,
        entries=outcome.entries,
        dropped=outcome.dropped,
        fallback_reason=outcome.fallback_reason,
    )


def project_read_models(tenant_id: str) -> None:
    """Apply the tenant's entry changes to its read models; a duplicate message is a no-op."""
    check_id(tenant_id, "tenant_id")
    state = _require_state()
    with state.pool.connection() as conn:
        stats = runner.project(conn, tenant_id, now=wall_clock())
    log.info(
        "read_models_projected",
        tenant_id=tenant_id,
        changes=stats.changes,
        owners=stats.owners,
        profile_rows=stats.profile_rows,
        skill_rows=stats.skill_rows,
        position=stats.position,
    )


def _record_failure(
    conn: Conn, state: WorkerState, tenant_id: str, session_id: int, exc: Exception
) -> None:
    backoff = timedelta(seconds=state.settings.build_backoff_seconds)
    attempts = builder.record_failure(
        conn,
        tenant_id,
        session_id,
        f"{type(exc).__name__}: {exc}",
        now=wall_clock(),
        backoff=backoff,
    )
    conn.commit()
    log.error(
        "session_build_failed",
        tenant_id=tenant_id,
        session_id=session_id,
        attempts=attempts,
        error=repr(exc),
    )


def _require_state() -> WorkerState:
    if _state is None:
        raise MemledgerError("worker state not set: call ops.actors.register() first")
    return _state


def register(
    broker: dramatiq.Broker, state: WorkerState | None
) -> dramatiq.Actor[[str, int], None]:
    """Declare the actors on ``broker`` and return the build actor (it queues projections
    itself); ``state`` is needed where messages are processed."""
    global _state, _projector
    if state is not None:
        _state = state
    retries: dict[str, Any] = {"max_retries": 20, "min_backoff": 500, "max_backoff": 10_000}
    _projector = dramatiq.actor(broker=broker, queue_name=READ_MODEL_QUEUE, **retries)(
        project_read_models
    )
    return dramatiq.actor(broker=broker, queue_name=BUILD_QUEUE, **retries)(build_session)


def enqueue_projection(tenant_id: str) -> None:
    """Queue a read-model projection for the tenant, as a build does: for entries changed
    outside one (edited or deleted through the API). With the queue down it is left to
    the scheduled resync, which projects every tenant whose entries changed."""
    if _projector is None:
        raise MemledgerError("no projection actor: call ops.actors.register() first")
    try:
        _projector.send(tenant_id)
    except (redis.RedisError, dramatiq.errors.BrokerError) as exc:
        log.warning("projection_left_to_resync", tenant_id=tenant_id, error=str(exc))


def enqueue_builds(
    actor: dramatiq.Actor[[str, int], None], sessions: Iterable[tuple[str, int]]
) -> int:
    """Send a build message per session (the outbox's ``Send``); raises
    ``QueueUnavailable`` while the queue's Redis cannot take them."""
    n = 0
    try:
        for tenant_id, session_id in sessions:
            actor.send(tenant_id, session_id)
            n += 1
    except (redis.RedisError, dramatiq.errors.BrokerError) as exc:
        raise QueueUnavailable(error=str(exc), sent=n) from exc
    return n
