"""Retrieval benchmark: latency of search and of the context bundle at scale, with the real
embedder, and filtered completeness for a small user beside the largest one.

Queries are natural questions (:mod:`ops.bench.statements`), each asked for a user picked
by a seeded RNG: a third among the largest users (top 0.1 %), a third among the medium ones
(the next users up to the top 5 %), a third among the rest. Each figure is measured over
a query set of its own (the same mix of users) after a warm-up, the figures taking turns
query by query so that each sees the same machine load, in one process and one connection,
as a caller would see it (transactions and round trips included):

* query embedding alone;
* the vector-and-filter query alone (``vector_search``, the 50 candidates ``search``
  takes from it, the vector given);
* ``search`` (limit 10) with the query embedding, and without it (the vector computed
  beforehand and handed back by a stand-in embedder);
* ``build_context`` (1,000-token budget, the exact WordPiece counter) likewise;
* by tier, ``search`` (vector given) and ``build_context`` (with the embedding) for the
  user with the agent: the scope then holds what the agent learnt from that user too.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial

import numpy as np

from ledger.db import Conn
from observations.embed import Embedder, Vectors, contextualize
from ops.bench.common import peak_rss_mib
from ops.bench.retrieval_load import (
    AGENT,
    TENANT,
    CacheFigures,
    LoadFigures,
    OwnerIndexFigures,
    summaries,
    user_id,
)
from ops.bench.statements import questions
from retrieval.context import ContextRequest, build_context
from retrieval.search import Scope, SearchSettings, search, vector_search
from retrieval.tokens import wordpiece_counter

TIERS = ("large", "medium", "small")
WARM_UP = 20
COMPLETENESS_QUERIES = 50
LIMITS = (10, 50)
PROBE_SIZE = 20


@dataclass(frozen=True, slots=True)
class Latency:
    p50: float
    p95: float
    p99: float  # milliseconds

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Latency:
        ms = sorted(s * 1000 for s in seconds)
        if len(ms) < 2:
            return cls(ms[0], ms[0], ms[0]) if ms else cls(0.0, 0.0, 0.0)
        cuts = statistics.quantiles(ms, n=100, method="inclusive")
        return cls(cuts[49], cuts[94], cuts[98])


@dataclass(frozen=True, slots=True)
class Completeness:
    user: str
    entries: int
    limit: int
    complete: float  # fraction of queries returning min(limit, entries) results


@dataclass(frozen=True, slots=True)
class QueryFigures:
    queries: int
    per_tier: dict[str, int]
    embed: Latency
    vector: Latency  # the vector-and-filter query alone (vector given)
    search: Latency  # query embedding included
    search_vector_given: Latency
    bundle: Latency  # query embedding included
    bundle_vector_given: Latency
    search_by_tier: dict[str, Latency]  # vector given
    bundle_by_tier: dict[str, Latency]  # embedding included
    search_agent_by_tier: dict[str, Latency]  # with the agent, vector given
    bundle_agent_by_tier: dict[str, Latency]  # with the agent, embedding included
    completeness: list[Completeness]
    peak_rss_mib: float


class GivenVectors:
    """An embedder that hands back vectors computed beforehand (the query embedding is
    then out of the measured time); any other text is an error."""

    def __init__(self, embedder: Embedder) -> None:
        self.model, self.dim = embedder.model, embedder.dim
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def query_plan(counts: list[int], n: int, seed: int = 11) -> list[tuple[str, str, str]]:
    """(question, user id, tier) for ``n`` queries, users spread over the three tiers."""
    users = len(counts)
    large = max(1, users // 1000)
    medium = max(large + 1, users // 20)
    ranks = {
        "large": range(1, large + 1),
        "medium": range(large + 1, medium + 1),
        "small": range(medium + 1, users + 1),
    }
    rng = random.Random(seed)
    plan = []
    for question in questions(n, seed=seed):
        tier = rng.choice([t for t in TIERS if ranks[t]])
        plan.append((question, user_id(rng.choice(ranks[tier])), tier))
    return plan


def probe_rank(counts: list[int]) -> int:
    """The rank of the last user (by size) holding exactly 20 entries."""
    for rank in range(len(counts), 0, -1):
        if counts[rank - 1] == PROBE_SIZE:
            return rank
    raise ValueError(f"no user holds exactly {PROBE_SIZE} entries: change --entries/--users")


def run_queries(
    conn: Conn,
    counts: list[int],
    embedder: Embedder,
    settings: SearchSettings,
    *,
    queries: int,
    now: datetime,
) -> QueryFigures:
    given = GivenVectors(embedder)
    counter = wordpiece_counter()

    def run_search(q: str, user: str, e: Embedder, agent: str | None = None) -> object:
        scope = Scope(TENANT, user, agent)
        return search(conn, scope, q, embedder=e, now=now, settings=settings)

    def run_vector(q: str, user: str, e: Embedder) -> object:
        text = contextualize(q, owner=None, when=None, kind=None, topic=None)
        return vector_search(
            conn, Scope(TENANT, user), given.vectors[text], embedder=e, settings=settings
        )

    def run_bundle(q: str, user: str, e: Embedder, agent: str | None = None) -> object:
        request = ContextRequest(scope=Scope(TENANT, user, agent), query=q)
        return build_context(conn, request, embedder=e, counter=counter, now=now, settings=settings)

    measures: tuple[tuple[str, Callable[[str, str, Embedder], object], Embedder], ...] = (
        ("vector", run_vector, given),
        ("search", run_search, embedder),
        ("search_given", run_search, given),
        ("bundle", run_bundle, embedder),
        ("bundle_given", run_bundle, given),
        ("search_agent", partial(run_search, agent=AGENT), given),
        ("bundle_agent", partial(run_bundle, agent=AGENT), embedder),
    )
    # Each figure gets its own queries and users (no page one figure read is warm for the
    # next), and the figures take turns query by query (each sees the same machine load).
    plans = {
        name: query_plan(counts, queries, seed=11 + i) for i, (name, _, _) in enumerate(measures)
    }
    for q, user, _ in plans["bundle"][:WARM_UP]:
        run_bundle(q, user, embedder)
    embed_s = []
    for plan in plans.values():
        for q, _, _ in plan:
            text = contextualize(q, owner=None, when=None, kind=None, topic=None)
            t = time.perf_counter()
            given.vectors[text] = embedder.embed([text])[0]
            embed_s.append(time.perf_counter() - t)
    timings: dict[str, list[float]] = {name: [] for name, _, _ in measures}
    for step in range(queries):
        for name, fn, e in measures:
            q, user, _ = plans[name][step]
            t = time.perf_counter()
            fn(q, user, e)
            timings[name].append(time.perf_counter() - t)
    return QueryFigures(
        queries=queries,
        per_tier={t: sum(1 for p in plans["search"] if p[2] == t) for t in TIERS},
        embed=Latency.of(embed_s),
        vector=Latency.of(timings["vector"]),
        search=Latency.of(timings["search"]),
        search_vector_given=Latency.of(timings["search_given"]),
        bundle=Latency.of(timings["bundle"]),
        bundle_vector_given=Latency.of(timings["bundle_given"]),
        search_by_tier=_by_tier(plans["search_given"], timings["search_given"]),
        bundle_by_tier=_by_tier(plans["bundle"], timings["bundle"]),
        search_agent_by_tier=_by_tier(plans["search_agent"], timings["search_agent"]),
        bundle_agent_by_tier=_by_tier(plans["bundle_agent"], timings["bundle_agent"]),
        completeness=completeness(conn, counts, plans["search"], given, settings, now),
        peak_rss_mib=peak_rss_mib(),
    )


def _by_tier(plan: list[tuple[str, str, str]], seconds: list[float]) -> dict[str, Latency]:
    return {
        tier: Latency.of([s for p, s in zip(plan, seconds, strict=True) if p[2] == tier])
        for tier in TIERS
        if any(p[2] == tier for p in plan)
    }


def completeness(
    conn: Conn,
    counts: list[int],
    plan: list[tuple[str, str, str]],
    embedder: Embedder,
    settings: SearchSettings,
    now: datetime,
) -> list[Completeness]:
    """For the 20-entry probe user and the largest user, at each limit: the fraction of
    queries that return every result the user can have, min(limit, entries in scope: the
    user's own and the summaries naming them)."""
    probe = probe_rank(counts)
    out = []
    for rank in (probe, 1):
        in_scope = counts[rank - 1] + summaries(counts[rank - 1])
        for limit in LIMITS:
            want = min(limit, in_scope)
            got = [
                len(
                    search(
                        conn,
                        Scope(TENANT, user_id(rank)),
                        q,
                        embedder=embedder,
                        now=now,
                        limit=limit,
                        settings=settings,
                    )
                )
                for q, _, _ in plan[:COMPLETENESS_QUERIES]
            ]
            full = sum(1 for n in got if n == want) / len(got)
            out.append(Completeness(user_id(rank), in_scope, limit, full))
    return out


def render(
    counts: list[int],
    load: LoadFigures | None,
    owned: OwnerIndexFigures,
    cache: CacheFigures,
    f: QueryFigures,
    model: str,
) -> str:
    """The benchmark's figures as the lines ``memledger bench retrieval`` prints."""

    def row(name: str, lat: Latency) -> str:
        return f"  {name:<40}{lat.p50:8.2f}{lat.p95:8.2f}{lat.p99:8.2f}"

    lines = [
        f"retrieval: {sum(counts):,} entries of {len(counts):,} users (largest "
        f"{counts[0]:,}, median {sorted(counts)[len(counts) // 2]:,}, smallest {counts[-1]:,}),"
        f" and {sum(map(summaries, counts)):,} summaries of their sessions and as many"
        f" experiences of the agent {AGENT!r}",
    ]
    if load is None:
        lines.append("  load: reused the entries of an earlier run")
    else:
        lines += [
            f"  load: pool of {load.pool_statements:,} statements embedded in "
            f"{load.pool_embed_s:.1f} s; COPY of {load.rows:,} entries in {load.copy_s:.1f} s "
            f"= {load.rows / load.copy_s:,.0f} rows/s; {load.profile_rows:,} profile rows",
            f"  indexes after loading: HNSW {load.hnsw_s:.1f} s; btree + GIN "
            f"{load.indexes_s:.1f} s; VACUUM ANALYZE {load.vacuum_analyze_s:.1f} s",
        ]
    lines.append(
        f"  owners' own HNSW indexes (owners of {owned.min_entries:,} entries or more, "
        f"channel entries naming a user and what the agent learnt from one of "
        f"{owned.min_entries // 2:,}): "
        f"{owned.indexes:,}, {owned.built:,} of them built now in {owned.seconds:.1f} s"
    )
    if not cache.prewarmed:
        warm = "not prewarmed (no pg_prewarm)"
    elif cache.relations_mib <= cache.shared_buffers_mib:
        warm = "prewarmed into them"
    else:
        warm = "larger than them: queries also read pages from the OS cache"
    lines.append(
        f"  cache: shared_buffers {cache.shared_buffers_mib:,.0f} MiB; memory_entries with "
        f"its TOAST table and indexes {cache.relations_mib:,.0f} MiB, {warm}"
    )
    tiers = ", ".join(f"{t} {f.per_tier[t]}" for t in TIERS)
    lines += [
        f"  {f.queries} queries per figure, each figure its own (users for search: {tiers}), "
        f"{model}, limit 10, bundles of 1,000 tokens",
        f"  {'ms':<40}{'p50':>8}{'p95':>8}{'p99':>8}",
        row("query embedding", f.embed),
        row("vector + filter query alone", f.vector),
        row("search, embedding included", f.search),
        row("search, vector given", f.search_vector_given),
        row("bundle, embedding included", f.bundle),
        row("bundle, vector given", f.bundle_vector_given),
    ]
    lines += [row(f"search by tier: {t} (vector given)", v) for t, v in f.search_by_tier.items()]
    lines += [row(f"bundle by tier: {t} (with embedding)", v) for t, v in f.bundle_by_tier.items()]
    lines += [
        row(f"search + agent: {t} (vector given)", v) for t, v in f.search_agent_by_tier.items()
    ]
    lines += [
        row(f"bundle + agent: {t} (with embedding)", v) for t, v in f.bundle_agent_by_tier.items()
    ]
    lines += [
        f"  completeness: {c.user} ({c.entries:,} entries in scope), limit {c.limit}: "
        f"{c.complete:.2f} of queries returned min(limit, entries)"
        for c in f.completeness
    ]
    lines.append(f"  peak RSS {f.peak_rss_mib:.0f} MiB")
    return "\n".join(lines)
