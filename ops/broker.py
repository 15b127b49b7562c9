"""Explicit dramatiq broker set-up (Redis) and the in-process worker of the default mode."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker

NAMESPACE = "memledger"


def setup_broker(redis_url: str) -> RedisBroker:
    """A Redis broker for ``redis_url``, made the global dramatiq broker."""
    broker = RedisBroker(url=redis_url, namespace=NAMESPACE)
    dramatiq.set_broker(broker)
    return broker


def start_worker(broker: dramatiq.Broker, threads: int) -> dramatiq.Worker:
    """Worker threads in this process (``memledger run``/``worker``); stop with ``.stop()``."""
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=100)
    worker.start()
    return worker


def close_broker(broker: RedisBroker) -> None:
    """Close the broker and its Redis connections (dramatiq's close() leaves them open,
    which would keep an embedded Redis from stopping when this process exits)."""
    broker.close()
    broker.client.connection_pool.disconnect()
