"""The deployment's metrics, kept in one Redis hash that every process adds to.

The API's server processes, the build workers and the schedulers may run as many processes
on many hosts. Each adds its counts to the hash ``memledger:metrics`` (``HINCRBY`` is
atomic), and ``GET /metrics`` on any API process reads the hash whole: the figures are the
deployment's, whichever process answers the scrape. A write that fails is logged and
dropped, and for the next ``RETRY_AFTER_SECONDS`` counts are dropped without trying: counting
never fails, or keeps waiting on, the work it counts. A scrape that cannot read the hash
fails.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import redis
import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

log = structlog.get_logger(__name__)
KEY = "memledger:metrics"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
RETRY_AFTER_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Family:
    """A counter, or a histogram when it has ``buckets`` (upper bounds, seconds)."""

    name: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()


EVENTS = Family("memledger_events_ingested", "Events posted to the API, by outcome", ("status",))
BUILDS = Family(
    "memledger_session_builds", "Session builds by the workers, by outcome", ("outcome",)
)
GATE_DROPS = Family("memledger_gate_drops", "Items the quality gates dropped at build", ("gate",))
JOB_RUNS = Family(
    "memledger_job_runs", "Maintenance job runs, by job and outcome", ("job", "status")
)
LATENCY = Family(
    "memledger_retrieval_seconds", "Search and context latency", ("route",), LATENCY_BUCKETS
)
FAMILIES = (EVENTS, BUILDS, GATE_DROPS, JOB_RUNS, LATENCY)

# (family, label values in the family's order, amount)
Count = tuple[Family, tuple[str, ...], int]


class SharedMetrics:
    """Adds to and reads the deployment's metrics in Redis (``client``); ``timer`` (seconds,
    monotonic) paces the retries after a failed write."""

    def __init__(self, client: redis.Redis, timer: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.registry = CollectorRegistry()
        self.registry.register(_Collector(client))
        self._timer = timer
        self._retry_at = -math.inf

    def add(self, counts: Iterable[Count]) -> None:
        """Add each amount to its counter, in one round trip (zeros are left out)."""
        pipe = self.client.pipeline(transaction=False)
        for family, values, amount in counts:
            if family.buckets:
                raise ValueError(f"{family.name} is a histogram: observe it")
            if amount:
                pipe.hincrby(KEY, _field(family, values), amount)
        self._send(pipe)

    def observe(self, family: Family, values: tuple[str, ...], seconds: float) -> None:
        """Count one observation of ``seconds`` in a histogram, in one round trip."""
        if not family.buckets:
            raise ValueError(f"{family.name} is a counter: add to it")
        bound = next((b for b in family.buckets if seconds <= b), math.inf)
        pipe = self.client.pipeline(transaction=False)
        pipe.hincrby(KEY, _field(family, values, "bucket", bound), 1)
        pipe.hincrbyfloat(KEY, _field(family, values, "sum"), seconds)
        self._send(pipe)

    def _send(self, pipe: redis.client.Pipeline) -> None:
        if not len(pipe) or self._timer() < self._retry_at:
            return
        try:
            pipe.execute()
        except redis.RedisError as exc:
            self._retry_at = self._timer() + RETRY_AFTER_SECONDS
            log.warning("metrics_not_recorded", error=str(exc), retry_in=RETRY_AFTER_SECONDS)


@contextmanager
def shared_metrics(url: str) -> Iterator[SharedMetrics]:
    """The metrics in the Redis at ``url``; the connections are closed at exit."""
    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    try:
        yield SharedMetrics(client)
    finally:
        client.close()


def _field(family: Family, values: tuple[str, ...], part: str = "", bound: float = 0.0) -> str:
    if len(values) != len(family.labels):
        raise ValueError(f"{family.name} takes the labels {family.labels}, got {values}")
    return json.dumps([family.name, list(values), part, bound if part == "bucket" else 0])


class _Collector(Collector):
    """Turns the hash into Prometheus families at scrape time."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Iterator[Metric]:
        raw: Mapping[bytes | str, bytes | str] = self.client.hgetall(KEY)
        counters: dict[str, dict[tuple[str, ...], float]] = {}
        buckets: dict[str, dict[tuple[str, ...], dict[float, float]]] = {}
        sums: dict[str, dict[tuple[str, ...], float]] = {}
        for field, value in raw.items():
            name, values, part, bound = json.loads(field)
            key = tuple(values)
            if part == "bucket":
                series = buckets.setdefault(name, {}).setdefault(key, {})
                series[bound] = float(value)
            elif part == "sum":
                sums.setdefault(name, {})[key] = float(value)
            else:
                counters.setdefault(name, {})[key] = float(value)
        for family in FAMILIES:
            if family.buckets:
                yield _histogram(family, buckets.get(family.name, {}), sums.get(family.name, {}))
            else:
                metric = CounterMetricFamily(family.name, family.help, labels=family.labels)
                for values, total in sorted(counters.get(family.name, {}).items()):
                    metric.add_metric(values, total)
                yield metric


def _histogram(
    family: Family,
    buckets: Mapping[tuple[str, ...], Mapping[float, float]],
    sums: Mapping[tuple[str, ...], float],
) -> HistogramMetricFamily:
    metric = HistogramMetricFamily(family.name, family.help, labels=family.labels)
    for values, counts in sorted(buckets.items()):
        cumulative, total = [], 0.0
        for bound in (*family.buckets, math.inf):
            total += counts.get(bound, 0.0)
            cumulative.append(("+Inf" if bound == math.inf else str(bound), total))
        metric.add_metric(values, cumulative, sums.get(values, 0.0))
    return metric
