"""``memledger bench ingest``'s writers: processes of their own, each appending its own
tenant's events, all of them stored."""

from __future__ import annotations

from datetime import UTC, datetime

from ledger.db import connect
from ops.bench.ingest import run_ingest


def test_two_writer_processes_store_every_event_each_in_its_tenant(fresh_db_url: str) -> None:
    figures = run_ingest(
        fresh_db_url,
        events=1200,
        batch_size=100,
        channels=7,
        writers=2,
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    with connect(fresh_db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tenant_id, count(*) AS n FROM memory_session_events GROUP BY tenant_id"
            " ORDER BY tenant_id"
        ).fetchall()
        closed = conn.execute(
            "SELECT count(*) AS n FROM memory_sessions WHERE status = 'closed'"
        ).fetchone()
    assert [(r["tenant_id"], r["n"]) for r in rows] == [("bench-0", 600), ("bench-1", 600)]
    assert figures.events == 1200 and figures.seconds > 0
    assert closed is not None and figures.sessions_closed == closed["n"] > 0
