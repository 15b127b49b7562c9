"""``memledger bench api``'s load against a real server: all it sends is served and stored."""

from __future__ import annotations

from ledger.db import connect
from ops.bench.api import BATCH, WARMUP_BATCHES, WARMUP_CONTEXTS, run_api, stored_bench_events
from tests.system.live_api import Server


def test_the_load_is_stored_whole_and_the_warm_up_is_not_timed(server: Server) -> None:
    figures = run_api(server.url, server.key("bench"), events=250, contexts=8, clients=3)

    assert (figures.events, figures.contexts, figures.clients) == (250, 8, 3)
    assert 0 < figures.context_p50_ms <= figures.context_p95_ms
    with connect(server.db_url, autocommit=True) as conn:
        assert stored_bench_events(conn, "bench") == WARMUP_BATCHES * BATCH + 250
    served = server.state.metrics.registry.get_sample_value(
        "memledger_retrieval_seconds_count", {"route": "context"}
    )
    assert served == WARMUP_CONTEXTS + 8
