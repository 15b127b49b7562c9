"""Thin dramatiq actors: validate the message, call the stage, count and log.

Messages carry ids only. The actors are declared on an explicit broker by :func:`register`
(so importing this module never connects anywhere) and close over the
:class:`WorkerState` handed to it; building or recording a failed build is the
observations stage's own (:func:`observations.builder.build_or_record_failure`).
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
from ops.settings import Settings
from ops.wiring import make_skill_policy, wall_clock

log = structlog.get_logger(__name__)
BUILD_QUEUE = "builds"
READ_MODEL_QUEUE = "read_models"


@dataclass(frozen=True, slots=True)
class WorkerState:
    settings: Settings
    pool: ConnectionPool[Conn]
    config: builder.BuildConfig
    metrics: SharedMetrics


PROJECT_ACTOR = "project_read_models"
RETRIES: dict[str, Any] = {"max_retries": 20, "min_backoff": 500, "max_backoff": 10_000}
# a build waiting for an earlier session of its channel is sent again this much later, at
# most this many times (10 s); then it is built anyway (that one's message may be lost)
WAIT_MS = 200
WAITS_FOR_EARLIER = 50


def register(
    broker: dramatiq.Broker, state: WorkerState | None
) -> dramatiq.Actor[[str, int], None]:
    """Declare the actors on ``broker`` and return the build actor (it queues projections
    itself); ``state`` is needed where messages are processed, and is what the actors
    close over (no module state). A session that is gone or not closed is one of the
    build's declared ``throws``: logged by dramatiq, never retried."""

    def worker_state() -> WorkerState:
        if state is None:
            raise MemledgerError("this broker's actors only send: no worker state was given")
        return state

    def build_session(tenant_id: str, session_id: int, waited: int = 0) -> None:
        """Build one closed session; a failure is recorded on the session for the sweep.
        One that must wait for an earlier session of its channel is sent again
        (``waited`` times so far), and built anyway once it has waited long enough."""
        check_id(tenant_id, "tenant_id")
        s = worker_state()
        backoff = timedelta(seconds=s.settings.build_backoff_seconds)
        try:
            outcome = builder.build_or_record_failure(
                s.pool.connection, tenant_id, int(session_id), s.config, now=wall_clock(),
                backoff=backoff, in_order=waited < WAITS_FOR_EARLIER,
            )  # fmt: skip
        except (SessionNotFound, builder.SessionNotClosed):
            s.metrics.add([(BUILDS, ("skipped",), 1)])
            raise
        if outcome.status == "busy":
            raise dramatiq.Retry(delay=1000)
        if outcome.status == "waiting":  # sent again later, the thread free meanwhile
            build.send_with_options(
                args=(tenant_id, session_id), kwargs={"waited": waited + 1}, delay=WAIT_MS
            )
            return
        drops = [(GATE_DROPS, (gate,), n) for gate, n in outcome.dropped.items()]
        s.metrics.add([(BUILDS, (outcome.status,), 1), *drops])
        if outcome.status == "built":
            enqueue_projection(build, tenant_id)
        event = "session_build_failed" if outcome.status == "failed" else "session_built"
        (log.error if outcome.status == "failed" else log.info)(
            event,
            tenant_id=tenant_id,
            session_id=session_id,
            status=outcome.status,
            entries=outcome.entries,
            dropped=outcome.dropped,
            fallback_reason=outcome.fallback_reason,
            error=outcome.error,
            attempts=outcome.attempts,
        )

    def project_read_models(tenant_id: str) -> None:
        """Apply the tenant's entry changes to its read models; a duplicate message is a
        no-op."""
        check_id(tenant_id, "tenant_id")
        s = worker_state()
        with s.pool.connection() as conn:
            stats = runner.project(
                conn, tenant_id, now=wall_clock(), policy=make_skill_policy(s.settings)
            )
        log.info(
            "read_models_projected",
            tenant_id=tenant_id,
            changes=stats.changes,
            owners=stats.owners,
            profile_rows=stats.profile_rows,
            skill_rows=stats.skill_rows,
            position=stats.position,
        )

    dramatiq.actor(actor_name=PROJECT_ACTOR, broker=broker, queue_name=READ_MODEL_QUEUE, **RETRIES)(
        project_read_models
    )
    skipped = (SessionNotFound, builder.SessionNotClosed)
    build = dramatiq.actor(
        actor_name="build_session", broker=broker, queue_name=BUILD_QUEUE, throws=skipped,
        **RETRIES,
    )(build_session)  # fmt: skip
    return build


def enqueue_projection(actor: dramatiq.Actor[..., None], tenant_id: str) -> None:
    """Queue a read-model projection for the tenant on ``actor``'s broker, as a build does:
    also for entries changed outside one (edited or deleted through the API). With the
    queue down it is left to the scheduled resync, which projects every tenant whose
    entries changed."""
    try:
        actor.broker.get_actor(PROJECT_ACTOR).send(tenant_id)
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
