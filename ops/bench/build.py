"""Build benchmark: heuristic extraction + gates alone, embedding alone, and end to end."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ledger.db import Conn
from ledger.store import append, sweep_idle
from observations.builder import (
    BuildConfig,
    build_session,
    load_session_input,
    sessions_to_build,
)
from observations.embed import Embedder
from observations.gates import apply_gates
from ops.bench.common import peak_rss_mib
from ops.bench.ingest import synthetic_events


@dataclass(frozen=True, slots=True)
class BuildFigures:
    sessions: int
    extract_sessions_per_s: float  # heuristic extractor + gates, no embeddings, no DB
    embed_sentences_per_s: float
    e2e_sessions_per_s: float  # build_session: DB read, extract, gates, embed, write
    items_per_session: float
    peak_rss_mib: float


def load_sessions(conn: Conn, tenant: str, sessions: int, now: datetime) -> None:
    """Append synthetic chats until about ``sessions`` sessions exist, then close them all."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    events = synthetic_events(
        sessions * 12, channels=max(1, sessions // 8), start=start, seed=7, prefix="b"
    )
    batch: list[dict[str, object]] = []
    for event in events:
        batch.append(event)
        if len(batch) == 1000:
            append(conn, tenant, batch, now=now)
            batch = []
    if batch:
        append(conn, tenant, batch, now=now)
    sweep_idle(conn, now=now + timedelta(days=3650), tenant_id=tenant)


def run_build(
    conn: Conn, config: BuildConfig, embedder: Embedder, *, sessions: int, now: datetime
) -> BuildFigures:
    load_sessions(conn, "bench-build", sessions, now)
    pending = sessions_to_build(conn, now=now, limit=sessions)
    inputs = [load_session_input(conn, tenant, sid) for tenant, sid in pending]
    t = time.perf_counter()
    kept = [apply_gates(config.extractor.extract(s), s).items for s in inputs]
    extract_s = time.perf_counter() - t
    texts = [item.statement for items in kept for item in items][:2000]
    t = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - t
    t = time.perf_counter()
    for tenant, sid in pending:
        with conn.transaction():
            build_session(conn, tenant, sid, config, now=now)
    e2e_s = time.perf_counter() - t
    n = len(pending)
    return BuildFigures(
        n,
        n / extract_s,
        len(texts) / embed_s,
        n / e2e_s,
        sum(map(len, kept)) / max(n, 1),
        peak_rss_mib(),
    )
