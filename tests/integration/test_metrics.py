"""The deployment's metrics in a real Redis: what one process adds, another's scrape sees
once it is flushed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis
from prometheus_client import generate_latest
from structlog.testing import capture_logs

from consolidation import ConsolidationConfig
from ops import metrics as metrics_module
from ops.metrics import (
    BUILDS,
    EVENTS,
    GATE_DROPS,
    JOB_RUNS,
    LATENCY,
    SharedMetrics,
    shared_metrics,
)
from ops.worker.scheduler import run_scheduled


@pytest.fixture
def process(redis_url: str) -> Iterator[SharedMetrics]:
    """The metrics of one process (a client of its own), flushed by hand."""
    client = redis.Redis.from_url(redis_url)
    yield SharedMetrics(client)
    client.close()


other_process = process


def accepted(metrics: SharedMetrics) -> float | None:
    return metrics.registry.get_sample_value(
        "memledger_events_ingested_total", {"status": "accepted"}
    )


def test_counts_from_several_processes_add_up_once_flushed(
    process: SharedMetrics, other_process: SharedMetrics
) -> None:
    api, worker = process, other_process
    api.add([(EVENTS, ("accepted",), 98), (EVENTS, ("duplicate",), 2)])
    api.add([(EVENTS, ("accepted",), 100), (EVENTS, ("rejected",), 0)])
    worker.add([(BUILDS, ("built",), 1), (GATE_DROPS, ("low_confidence",), 3)])
    worker.add([(BUILDS, ("built",), 1), (BUILDS, ("failed",), 1)])
    worker.add([(JOB_RUNS, ("merge", "done"), 1)])

    sample = worker.registry.get_sample_value  # a scrape flushes its own process first
    assert sample("memledger_session_builds_total", {"outcome": "built"}) == 2
    assert accepted(worker) is None  # the API process has not flushed yet
    api.flush()
    assert accepted(worker) == 198
    assert sample("memledger_events_ingested_total", {"status": "duplicate"}) == 2
    assert sample("memledger_events_ingested_total", {"status": "rejected"}) is None
    assert sample("memledger_session_builds_total", {"outcome": "failed"}) == 1
    assert sample("memledger_gate_drops_total", {"gate": "low_confidence"}) == 3
    assert sample("memledger_job_runs_total", {"job": "merge", "status": "done"}) == 1
    api.flush()  # nothing new: nothing counted twice
    assert accepted(worker) == 198


def test_latency_is_a_histogram_with_cumulative_buckets(
    process: SharedMetrics, other_process: SharedMetrics
) -> None:
    one, other = process, other_process
    for seconds in (0.004, 0.02, 0.02, 0.3):
        one.observe(LATENCY, ("context",), seconds)
    other.observe(LATENCY, ("context",), 7.0)  # above the last bound
    other.observe(LATENCY, ("search",), 0.01)
    other.flush()

    def bucket(route: str, le: str) -> float | None:
        return one.registry.get_sample_value(
            "memledger_retrieval_seconds_bucket", {"route": route, "le": le}
        )

    bounds = ("0.005", "0.025", "0.25", "0.5", "+Inf")
    assert [bucket("context", le) for le in bounds] == [1, 3, 3, 4, 5]
    assert bucket("search", "0.01") == 1 and bucket("search", "0.005") == 0
    sample = one.registry.get_sample_value
    assert sample("memledger_retrieval_seconds_count", {"route": "context"}) == 5
    total = sample("memledger_retrieval_seconds_sum", {"route": "context"})
    assert total == pytest.approx(7.344)
    text = generate_latest(one.registry).decode()
    assert "# TYPE memledger_retrieval_seconds histogram" in text
    assert "# TYPE memledger_events_ingested_total counter" in text  # declared, even if empty


def test_a_family_takes_its_own_labels_and_kind(process: SharedMetrics) -> None:
    with pytest.raises(ValueError, match="labels"):
        process.add([(JOB_RUNS, ("merge",), 1)])
    with pytest.raises(ValueError, match="histogram"):
        process.add([(LATENCY, ("context",), 1)])
    with pytest.raises(ValueError, match="counter"):
        process.observe(EVENTS, ("accepted",), 0.1)


def test_shared_metrics_flush_in_the_background_and_at_exit(
    process: SharedMetrics, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics_module, "FLUSH_SECONDS", 0.05)
    with shared_metrics(redis_url) as worker:
        worker.add([(EVENTS, ("accepted",), 2)])
        deadline = time.monotonic() + 10
        while (
            process.registry.get_sample_value(
                "memledger_events_ingested_total", {"status": "accepted"}
            )
            != 2
        ):
            assert time.monotonic() < deadline, "never flushed in the background"
            time.sleep(0.02)
        real_flush, slowed = worker.flush, threading.Event()

        def flush_then_look() -> None:
            real_flush()
            if metrics_module.FLUSH_SECONDS == 3600.0:
                slowed.set()  # the flusher reads the interval next: it now waits an hour

        monkeypatch.setattr(worker, "flush", flush_then_look)
        monkeypatch.setattr(metrics_module, "FLUSH_SECONDS", 3600.0)
        assert slowed.wait(10), "the flusher never came round again"
        worker.add([(EVENTS, ("accepted",), 3)])
        assert accepted(process) == 2  # not flushed in the background
    assert accepted(process) == 5  # flushed at exit


def test_without_redis_counts_wait_for_the_next_flush_and_a_scrape_fails(
    redis_url: str, tmp_path: Path
) -> None:
    missing = redis.Redis.from_url(f"unix://{tmp_path}/no-redis.sock")
    metrics = SharedMetrics(missing)
    with capture_logs() as logs:
        metrics.add([(EVENTS, ("accepted",), 5)])
        metrics.flush()  # fails: logged, kept
        metrics.observe(LATENCY, ("context",), 0.1)
        metrics.flush()  # fails again: not logged again
        with pytest.raises(redis.RedisError):
            generate_latest(metrics.registry)
        metrics.client = redis.Redis.from_url(redis_url)  # Redis is back
        metrics.flush()
    assert [e["event"] for e in logs] == ["metrics_not_written", "metrics_written_again"]
    assert accepted(metrics) == 5
    assert (
        metrics.registry.get_sample_value("memledger_retrieval_seconds_count", {"route": "context"})
        == 1
    )
    metrics.client.close()


class LostReply(redis.Redis):
    """A Redis client whose first write (a script or a pipeline) is applied but answered by
    a timeout, as when the reply is lost on the way back."""

    lost = False

    def _lose_once(self, result: Any) -> Any:
        if not self.lost:
            self.lost = True
            raise redis.TimeoutError("Timeout reading from socket")
        return result

    def execute_command(self, *args: Any, **options: Any) -> Any:
        result = super().execute_command(*args, **options)
        return self._lose_once(result) if args[0] in ("EVAL", "EVALSHA") else result

    def pipeline(self, *args: Any, **options: Any) -> Any:
        pipe = super().pipeline(*args, **options)
        execute = pipe.execute
        pipe.execute = lambda *a, **k: self._lose_once(execute(*a, **k))  # type: ignore[method-assign]
        return pipe


def test_a_batch_sent_again_after_a_lost_reply_is_counted_once(redis_url: str) -> None:
    client = LostReply.from_url(redis_url)
    try:
        metrics = SharedMetrics(client)
        before = accepted(metrics) or 0
        metrics.add([(EVENTS, ("accepted",), 5)])
        metrics.flush()  # applied, but the client saw a timeout: kept for the next flush
        metrics.add([(EVENTS, ("accepted",), 2)])
        metrics.flush()  # the kept batch again (a no-op in Redis), then the new counts
        assert accepted(metrics) == before + 7
    finally:
        client.close()


def test_a_scheduled_run_that_fails_is_counted_as_an_error(process: SharedMetrics) -> None:
    unreachable = "postgresql://memledger@127.0.0.1:1/none?connect_timeout=2"
    with pytest.raises(Exception, match=r"127\.0\.0\.1"):
        run_scheduled(unreachable, "decay", timedelta(minutes=5), ConsolidationConfig(), process)
    process.flush()
    runs = process.registry.get_sample_value(
        "memledger_job_runs_total", {"job": "decay", "status": "error"}
    )
    assert runs == 1
