"""The deployment's metrics, kept in one Redis hash that every process adds to.

The API's server processes, the build workers and the schedulers may run as many processes
on many hosts. Each adds its counts to the hash ``memledger:metrics`` (``HINCRBY`` is
atomic), and ``GET /metrics`` on any API process reads the hash whole: the figures are the
deployment's, whichever process answers the scrape.

Counting costs no I/O: counts gather in the process and a background flush writes them
every ``FLUSH_SECONDS`` in one round trip (and at exit); a scrape flushes its own process's
first. A flush that fails keeps its counts for the next one and is logged once, when
writing starts to fail. Each batch of counts is written under a token of its own that
Redis remembers for a day: a batch sent again after a lost reply (Redis may have applied
it) is not counted twice. A scrape that cannot read the hash fails.
"""

from __future__ import annotations

import json
import math
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import redis
import structlog
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ops.broker import redis_client

log = structlog.get_logger(__name__)
KEY = "memledger:metrics"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
FLUSH_SECONDS = 2.0


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

# KEYS[1]: the hash; KEYS[2]: the batch's token. ARGV: (kind, field, amount) triples, kind
# "n" for a whole amount, "s" for seconds. A token already set means the batch was written.
_WRITE = """
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', 86400) then
  for i = 1, #ARGV, 3 do
    if ARGV[i] == 'n' then
      redis.call('HINCRBY', KEYS[1], ARGV[i + 1], ARGV[i + 2])
    else
      redis.call('HINCRBYFLOAT', KEYS[1], ARGV[i + 1], ARGV[i + 2])
    end
  end
end
"""


@dataclass(frozen=True, slots=True)
class _Batch:
    """Counts taken for one write, and the token that makes writing them again a no-op."""

    token: str
    counts: Counter[str]
    seconds: Mapping[str, float]


class SharedMetrics:
    """Counts for the deployment's metrics in Redis (``client``), written by :meth:`flush`."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.registry = CollectorRegistry()
        self.registry.register(_Collector(self))
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()  # hash field -> whole amount
        self._seconds: defaultdict[str, float] = defaultdict(float)  # histogram sum field
        self._unsent: _Batch | None = None  # taken for a write that has not succeeded
        self._failing = False

    def add(self, counts: Iterable[Count]) -> None:
        """Add each amount to its counter (zeros are left out)."""
        fields = []
        for family, values, amount in counts:
            if family.buckets:
                raise ValueError(f"{family.name} is a histogram: observe it")
            fields.append((_field(family, values), amount))
        with self._lock:
            for field, amount in fields:
                if amount:
                    self._counts[field] += amount

    def observe(self, family: Family, values: tuple[str, ...], seconds: float) -> None:
        """Count one observation of ``seconds`` in a histogram."""
        if not family.buckets:
            raise ValueError(f"{family.name} is a counter: add to it")
        bound = next((b for b in family.buckets if seconds <= b), math.inf)
        bucket, total = _field(family, values, "bucket", bound), _field(family, values, "sum")
        with self._lock:
            self._counts[bucket] += 1
            self._seconds[total] += seconds

    def flush(self) -> None:
        """Write the counts gathered since the last flush: first a batch whose write failed
        (under its own token, so never counted twice), then the newer counts. If a write
        fails, its counts wait for the next flush."""
        wrote = False
        for _ in range(2):  # the unsent batch, then what gathered since
            with self._lock:
                if self._unsent is None and (self._counts or self._seconds):
                    self._unsent = _Batch(uuid.uuid4().hex, self._counts, self._seconds)
                    self._counts, self._seconds = Counter(), defaultdict(float)
                batch = self._unsent
            if batch is None:
                break
            try:
                self._write(batch)
            except redis.RedisError as exc:
                if not self._failing:
                    log.warning("metrics_not_written", error=str(exc))
                self._failing = True
                return
            wrote = True
            with self._lock:
                if self._unsent is batch:
                    self._unsent = None
        if wrote and self._failing:
            log.info("metrics_written_again")
            self._failing = False

    def _write(self, batch: _Batch) -> None:
        args: list[str | int | float] = []
        for field, amount in batch.counts.items():
            args += ["n", field, amount]
        for field, total in batch.seconds.items():
            args += ["s", field, repr(total)]
        self.client.eval(_WRITE, 2, KEY, f"{KEY}:batch:{batch.token}", *args)


@contextmanager
def shared_metrics(url: str) -> Iterator[SharedMetrics]:
    """The metrics in the Redis at ``url``, flushed every ``FLUSH_SECONDS`` by a thread of
    their own and once more at exit; the connections are closed then."""
    client = redis_client(url, timeout=0.5)
    metrics = SharedMetrics(client)
    stop = threading.Event()

    def flush_until_stopped() -> None:
        while not stop.wait(FLUSH_SECONDS):
            metrics.flush()

    flusher = threading.Thread(target=flush_until_stopped, name="metrics-flush", daemon=True)
    flusher.start()
    try:
        yield metrics
    finally:
        stop.set()
        flusher.join()
        metrics.flush()
        client.close()


def _field(family: Family, values: tuple[str, ...], part: str = "", bound: float = 0.0) -> str:
    if len(values) != len(family.labels):
        raise ValueError(f"{family.name} takes the labels {family.labels}, got {values}")
    return json.dumps([family.name, list(values), part, bound if part == "bucket" else 0])


class _Collector(Collector):
    """Turns the hash into Prometheus families at scrape time, after flushing this
    process's own counts."""

    def __init__(self, metrics: SharedMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        self.metrics.flush()
        raw: Mapping[bytes | str, bytes | str] = self.metrics.client.hgetall(KEY)
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
