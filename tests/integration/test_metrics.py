"""The deployment's metrics in a real Redis: what one process adds, another's scrape sees."""

from __future__ import annotations

import pytest
import redis
from prometheus_client import generate_latest
from structlog.testing import capture_logs

from ops.metrics import (
    BUILDS,
    EVENTS,
    GATE_DROPS,
    JOB_RUNS,
    LATENCY,
    SharedMetrics,
    shared_metrics,
)


def test_counts_from_several_processes_add_up_in_one_scrape(redis_url: str) -> None:
    # two clients of their own stand for two processes (an API process and a worker)
    with shared_metrics(redis_url) as api, shared_metrics(redis_url) as worker:
        api.add([(EVENTS, ("accepted",), 98), (EVENTS, ("duplicate",), 2)])
        api.add([(EVENTS, ("accepted",), 100), (EVENTS, ("rejected",), 0)])
        worker.add([(BUILDS, ("built",), 1), (GATE_DROPS, ("low_confidence",), 3)])
        worker.add([(BUILDS, ("built",), 1), (BUILDS, ("failed",), 1)])
        worker.add([(JOB_RUNS, ("merge", "done"), 1)])

        sample = worker.registry.get_sample_value
        assert sample("memledger_events_ingested_total", {"status": "accepted"}) == 198
        assert sample("memledger_events_ingested_total", {"status": "duplicate"}) == 2
        assert sample("memledger_events_ingested_total", {"status": "rejected"}) is None
        assert sample("memledger_session_builds_total", {"outcome": "built"}) == 2
        assert sample("memledger_session_builds_total", {"outcome": "failed"}) == 1
        assert sample("memledger_gate_drops_total", {"gate": "low_confidence"}) == 3
        assert sample("memledger_job_runs_total", {"job": "merge", "status": "done"}) == 1


def test_latency_is_a_histogram_with_cumulative_buckets(redis_url: str) -> None:
    with shared_metrics(redis_url) as one, shared_metrics(redis_url) as other:
        for seconds in (0.004, 0.02, 0.02, 0.3):
            one.observe(LATENCY, ("context",), seconds)
        other.observe(LATENCY, ("context",), 7.0)  # above the last bound
        other.observe(LATENCY, ("search",), 0.01)

        def bucket(route: str, le: str) -> float | None:
            return one.registry.get_sample_value(
                "memledger_retrieval_seconds_bucket", {"route": route, "le": le}
            )

        assert [bucket("context", le) for le in ("0.005", "0.025", "0.25", "0.5", "+Inf")] == [
            1,
            3,
            3,
            4,
            5,
        ]
        assert bucket("search", "0.01") == 1 and bucket("search", "0.005") == 0
        sample = one.registry.get_sample_value
        assert sample("memledger_retrieval_seconds_count", {"route": "context"}) == 5
        total = sample("memledger_retrieval_seconds_sum", {"route": "context"})
        assert total == pytest.approx(7.344)
        text = generate_latest(one.registry).decode()
        assert "# TYPE memledger_retrieval_seconds histogram" in text
        assert "# TYPE memledger_events_ingested_total counter" in text  # declared, even if empty


def test_a_family_takes_its_own_labels_and_kind(redis_url: str) -> None:
    with shared_metrics(redis_url) as metrics:
        with pytest.raises(ValueError, match="labels"):
            metrics.add([(JOB_RUNS, ("merge",), 1)])
        with pytest.raises(ValueError, match="histogram"):
            metrics.add([(LATENCY, ("context",), 1)])
        with pytest.raises(ValueError, match="counter"):
            metrics.observe(EVENTS, ("accepted",), 0.1)


def test_without_redis_counts_are_dropped_and_tried_again_later_and_a_scrape_fails(
    redis_url: str, tmp_path: object
) -> None:
    now = [100.0]
    missing = redis.Redis.from_url(f"unix://{tmp_path}/no-redis.sock")
    metrics = SharedMetrics(missing, timer=lambda: now[0])
    with capture_logs() as logs:
        metrics.add([(EVENTS, ("accepted",), 5)])  # fails: logged, retried in 5 s
        now[0] += 4.9
        metrics.observe(LATENCY, ("context",), 0.1)  # dropped without trying
    assert [(e["event"], e["retry_in"]) for e in logs] == [("metrics_not_recorded", 5.0)]
    with pytest.raises(redis.RedisError):
        generate_latest(metrics.registry)

    # Redis back (here: another client), and the pause over: counted again.
    metrics.client = redis.Redis.from_url(redis_url)
    metrics.add([(EVENTS, ("accepted",), 1)])
    now[0] += 0.2
    metrics.add([(EVENTS, ("accepted",), 2)])
    with shared_metrics(redis_url) as scrape:
        counted = scrape.registry.get_sample_value(
            "memledger_events_ingested_total", {"status": "accepted"}
        )
    metrics.client.close()
    assert counted == 2
