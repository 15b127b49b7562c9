"""Build benchmark: heuristic extraction + gates alone, embedding alone, and end to end.

The sessions are copies of a transcript, each copy in its own channels with its own users,
so the text is realistic and every session has something to extract: the sample transcript
(user facts, small talk, an agent's tool calls) by default, or the sessions of a LoCoMo
file, whole or cut into runs of a given number of turns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from ledger.db import Conn
from ledger.store import append, sweep_idle
from observations.builder import (
    BuildConfig,
    build_session,
    load_session_input,
    sessions_to_build,
)
from observations.embed import Embedder
from observations.embed_base import Vectors
from observations.gates import apply_gates
from ops.bench.common import peak_rss_mib
from ops.samples import sample_path


@dataclass(frozen=True, slots=True)
class BuildFigures:
    sessions: int
    events_per_session: float
    words_per_session: float  # of the users' turns
    extract_sessions_per_s: float  # heuristic extractor + gates: no DB, no embeddings
    embed_sentences_per_s: float
    write_sessions_per_s: float  # build_session with a constant vector: DB + extract + write
    e2e_sessions_per_s: float  # build_session with the configured embedder
    builders: int
    e2e_parallel_sessions_per_s: float  # the same, `builders` at once (as the worker builds)
    items_per_session: float
    peak_rss_mib: float


class ConstantEmbedder:
    """Stands in for an embedder at no cost, to measure everything else of a build."""

    def __init__(self, model: str, dim: int) -> None:
        self.model, self.dim = model, dim
        self._vector = np.full(dim, 1 / np.sqrt(dim), dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.tile(self._vector, (len(texts), 1))


@dataclass(frozen=True, slots=True)
class Transcript:
    """Where a benchmark's sessions come from: copies of these events."""

    events: list[dict[str, Any]]
    sessions: int  # the sessions they make


def sample_transcript() -> Transcript:
    """The sample transcript (user facts, small talk, an agent's tool calls): 5 sessions."""
    sample = [json.loads(line) for line in sample_path().read_text().splitlines() if line]
    return Transcript(sample, 5)


def transcript_of(sessions: list[list[dict[str, Any]]]) -> Transcript:
    """Sessions given as their events, each session in a channel of its own."""
    return Transcript([e for session in sessions for e in session], len(sessions))


def _own(events: list[dict[str, Any]], k: int) -> Iterator[dict[str, Any]]:
    """Copy ``k`` of ``events``, its channels and users its own."""
    speakers = {e["actor_id"] for e in events if e["role"] == "user"}
    for event in events:
        actor = event["actor_id"]
        yield {
            **event,
            "external_id": f"{event['external_id']}-{k}",
            "channel_id": f"{event['channel_id']}-{k}",
            "actor_id": f"{actor}-{k}" if actor in speakers else actor,
        }


def load_sessions(
    conn: Conn, tenant: str, sessions: int, now: datetime, transcript: Transcript | None = None
) -> None:
    """Append copies of the transcript (the sample's by default) until at least ``sessions``
    sessions exist; close them."""
    transcript = transcript or sample_transcript()
    batch: list[dict[str, Any]] = []
    for k in range(-(-sessions // transcript.sessions)):
        for event in _own(transcript.events, k):
            batch.append(event)
            if len(batch) == 1000:
                append(conn, tenant, batch, now=now)
                batch = []
    if batch:
        append(conn, tenant, batch, now=now)
    sweep_idle(conn, now=now + timedelta(days=3650), tenant_id=tenant)
    conn.execute("ANALYZE")  # as autovacuum would have by now on a live database


def _build_all(
    conn: Conn, pending: list[tuple[str, int]], config: BuildConfig, now: datetime
) -> float:
    t = time.perf_counter()
    for tenant, sid in pending:
        build_session(conn, tenant, sid, config, now=now)
    return len(pending) / (time.perf_counter() - t)


def _build_at_once(
    connect: Callable[[], Conn],
    pending: list[tuple[str, int]],
    config: BuildConfig,
    now: datetime,
    builders: int,
) -> float:
    """Sessions/s of ``builders`` threads building ``pending`` at once, each on its own
    connection (as ``memledger worker --threads`` does)."""

    def build(share: list[tuple[str, int]]) -> None:
        with connect() as conn:
            _build_all(conn, share, config, now)

    t = time.perf_counter()
    with ThreadPoolExecutor(builders) as pool:
        list(pool.map(build, [pending[k::builders] for k in range(builders)]))
    return len(pending) / (time.perf_counter() - t)


def run_build(
    conn: Conn,
    connect: Callable[[], Conn],
    config: BuildConfig,
    embedder: Embedder,
    *,
    sessions: int,
    builders: int,
    now: datetime,
    transcript: Transcript | None = None,
) -> BuildFigures:
    tenants = ("bench-write", "bench-e2e", "bench-e2e-parallel")
    for tenant in tenants:
        load_sessions(conn, tenant, sessions, now, transcript)
    pending = sessions_to_build(conn, now=now, limit=None)
    write, e2e, parallel = ([p for p in pending if p[0] == t][:sessions] for t in tenants)
    inputs = [load_session_input(conn, tenant, sid) for tenant, sid in write]
    config.extractor.extract(inputs[0])  # the analysis pipeline loads on first use
    t = time.perf_counter()
    kept = [apply_gates(config.extractor.extract(s), s).items for s in inputs]
    extract_s = time.perf_counter() - t
    texts = [item.statement for items in kept for item in items][:2000]
    t = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - t
    constant = ConstantEmbedder(embedder.model, embedder.dim)
    write_rate = _build_all(conn, write, BuildConfig(config.extractor, constant, config.gates), now)
    e2e_rate = _build_all(conn, e2e, config, now)
    parallel_rate = _build_at_once(connect, parallel, config, now, builders)
    n = len(write)
    return BuildFigures(
        n,
        sum(len(s.events) for s in inputs) / max(n, 1),
        sum(len(e.content.split()) for s in inputs for e in s.events if e.role == "user")
        / max(n, 1),
        n / extract_s,
        len(texts) / embed_s,
        write_rate,
        e2e_rate,
        builders,
        parallel_rate,
        sum(map(len, kept)) / max(n, 1),
        peak_rss_mib(),
    )
