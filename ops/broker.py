"""Explicit dramatiq broker set-up (Redis), the in-process worker of the default mode, and
the Redis clients of every process.

Redis may go away and come back at the same address. Every client here fails fast while it
is down (short timeouts, two quick retries, which also replace a connection a restart
closed) and reconnects by itself once it answers; dramatiq's consumers restart on their
own. What a restart of Redis loses, the database still has: :func:`redis_restarted` tells
the one process that hands builds over to hand over again those that may be lost.
"""

from __future__ import annotations

import threading
from typing import cast

import dramatiq
import redis
import structlog
from dramatiq.brokers.redis import RedisBroker
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

log = structlog.get_logger(__name__)
NAMESPACE = "memledger"
RUN_ID_KEY = f"{NAMESPACE}:redis_run_id"  # the run id of the Redis that holds the queues
# A stopping worker waits this long for its builds to finish. With Redis down, a worker
# thread that has finished one retries its acknowledgement without end: it is left behind
# (a daemon thread), its message redelivered or its build handed over again later.
STOP_SECONDS = 5.0


def redis_client(url: str, *, timeout: float) -> redis.Redis:
    """A client for ``url`` whose commands fail within about three ``timeout`` while Redis
    is unreachable, and that reconnects when it is back."""
    retry = Retry(ExponentialBackoff(cap=0.1, base=0.01), 2)
    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry
    )


def setup_broker(redis_url: str) -> RedisBroker:
    """A Redis broker for ``redis_url``, made the global dramatiq broker."""
    broker = RedisBroker(client=redis_client(redis_url, timeout=2.0), namespace=NAMESPACE)
    dramatiq.set_broker(broker)
    return broker


class _Worker(dramatiq.Worker):
    """dramatiq's worker, whose :meth:`stop` returns within ``STOP_SECONDS`` even while
    Redis is down (dramatiq's own waits for acknowledgements that cannot be sent)."""

    def stop(self, timeout: int = int(STOP_SECONDS * 1000)) -> None:
        stopping = threading.Thread(
            target=self._stop, args=(timeout,), name="worker-stop", daemon=True
        )
        stopping.start()
        stopping.join(timeout / 1000)
        if stopping.is_alive():
            log.warning("worker_stop_abandoned", after_seconds=timeout / 1000)

    def _stop(self, timeout: int) -> None:
        try:
            super().stop(timeout)
        except (redis.RedisError, dramatiq.errors.BrokerError) as exc:  # requeueing on stop
            log.warning("worker_stopped_without_queue", error=str(exc))


def start_worker(broker: dramatiq.Broker, threads: int) -> dramatiq.Worker:
    """Worker threads in this process (``memledger run``/``worker``); stop with ``.stop()``,
    which returns within ``STOP_SECONDS``."""
    worker = _Worker(broker, worker_threads=threads, worker_timeout=100)
    worker.start()
    return worker


def close_broker(broker: RedisBroker) -> None:
    """Close the broker and its Redis connections (dramatiq's close() leaves them open,
    which would keep an embedded Redis from stopping when this process exits)."""
    broker.close()
    broker.client.connection_pool.disconnect()


def redis_restarted(broker: dramatiq.Broker) -> bool:
    """Whether the Redis holding ``broker``'s queues is not the one this deployment last
    saw (its run id differs from the one recorded in it, or none is): it may have lost
    messages. One process learns of each restart (the first to ask after it); raises
    while Redis is down."""
    client = cast(RedisBroker, broker).client
    run_id = str(client.info("server")["run_id"])
    previous = client.set(RUN_ID_KEY, run_id, get=True)
    if isinstance(previous, bytes):
        previous = previous.decode()
    return previous != run_id
