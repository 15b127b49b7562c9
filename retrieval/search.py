"""The search half of the gateway: candidates from PostgreSQL, ranked by the pure scorer.

Two candidate lists are fetched inside the tenant's row-level-security scope and fused:

* vector — cosine similarity of the contextualized query to entry embeddings. The scope's
  size (counted up to ``exact_scope_cap``) picks the path: a small scope is ranked exactly
  over its rows through the owner index (complete, a few ms); a large one goes through the
  HNSW index with iterative scans, where the filter passes often enough to fill ``limit``.
* full text — statements matching all of the query's words (``websearch_to_tsquery``,
  GIN index), then any of them, at most ``text_scan`` rows, ranked by BM25 with the
  document frequencies of that match set (``ts_rank`` has no idf: common words would
  outweigh the telling ones).

Then :func:`retrieval.scoring.score` and :func:`retrieval.scoring.rerank` order them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from psycopg import sql

from ledger.db import Conn, tenant_scope
from ledger.errors import MemledgerError
from ledger.scope import check_id
from ledger.sqlfile import load_queries
from observations.embed import Embedder, contextualize
from retrieval.bm25 import BM25
from retrieval.scoring import fuse, rerank, score
from retrieval.types import Candidate, RetrievalWeights, Scored

Q = load_queries("retrieval")
CURRENT = ("active",)
WITH_HISTORY = ("active", "superseded", "merged")
# Models that have a partial HNSW index in schema.sql; others are always ranked exactly.
INDEXED_MODELS = frozenset({"all-MiniLM-L6-v2-int8"})
_COLUMNS = sql.SQL(
    "id, kind, owner_type, owner_id, key, canonical_statement, valid_from, valid_to, status, "
    "confidence, importance, access_count, last_accessed_at, source_session_id, "
    "source_event_ids, source_external_ids, fields"
)
_WORD = re.compile(r"[^\W_]+")


class InvalidQuery(MemledgerError):
    """A search request that cannot be run: the message names the parameter."""


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memory to search: a tenant (always), and optionally a user and/or an agent.

    With a user, the user's own entries and the summaries of sessions they took part in;
    with an agent, the agent's entries; with both, either; with neither, the whole tenant.
    """

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None

    def __post_init__(self) -> None:
        check_id(self.tenant_id, "tenant_id")
        for name in ("user_id", "agent_id"):
            if getattr(self, name) is not None:
                check_id(getattr(self, name), name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    kinds: tuple[str, ...] = ()
    since: datetime | None = None  # valid_from at or after
    until: datetime | None = None  # valid_from before
    history: bool = False  # include superseded and merged entries


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    candidates: int = 50  # per list, before fusion
    exact_scope_cap: int = 5000  # scopes up to this size are ranked exactly
    ef_search: int = 100
    text_scan: int = 2000  # matching rows ranked by BM25 per query


def search(
    conn: Conn,
    scope: Scope,
    query: str,
    *,
    embedder: Embedder,
    now: datetime,
    limit: int = 10,
    filters: Filters = Filters(),
    settings: SearchSettings = SearchSettings(),
    owner_name: str | None = None,
) -> list[Scored]:
    """The best ``limit`` entries for ``query`` within ``scope``, each with its explain."""
    if not query.strip():
        raise InvalidQuery("query is empty", field="query")
    if not 1 <= limit <= 1000:
        raise InvalidQuery("limit must be between 1 and 1000", field="limit", limit=limit)
    vector = embedder.embed(
        [contextualize(query, owner=owner_name, when=None, kind=None, topic=None)]
    )[0]
    where, params = _scope_sql(scope, filters)
    k = max(settings.candidates, 2 * limit)
    with tenant_scope(conn, scope.tenant_id):
        by_vector = _vector_candidates(conn, where, params, vector, embedder, k, settings)
        by_text = _text_candidates(conn, where, params, query, k, settings.text_scan)
    fused = fuse(by_vector, by_text, k=settings.weights.rrf_k)
    ranked = score(fused, now=now, weights=settings.weights)
    return rerank(ranked, weights=settings.weights, limit=limit)


def _scope_sql(scope: Scope, filters: Filters) -> tuple[sql.Composable, dict[str, Any]]:
    conds: list[sql.Composable] = [
        sql.SQL("tenant_id = %(tenant_id)s"),
        sql.SQL("status = ANY(%(statuses)s)"),
    ]
    params: dict[str, Any] = {
        "tenant_id": scope.tenant_id,
        "statuses": list(WITH_HISTORY if filters.history else CURRENT),
    }
    owners = []
    if scope.user_id is not None:
        owners += [
            sql.SQL("(owner_type = 'user' AND owner_id = %(user_id)s)"),
            sql.SQL("(owner_type = 'channel' AND fields -> 'participant_ids' ? %(user_id)s)"),
        ]
        params["user_id"] = scope.user_id
    if scope.agent_id is not None:
        owners.append(sql.SQL("(owner_type = 'agent' AND owner_id = %(agent_id)s)"))
        params["agent_id"] = scope.agent_id
    if owners:
        conds.append(sql.SQL("({})").format(sql.SQL(" OR ").join(owners)))
    if filters.kinds:
        conds.append(sql.SQL("kind = ANY(%(kinds)s)"))
        params["kinds"] = list(filters.kinds)
    if filters.since is not None:
        conds.append(sql.SQL("valid_from >= %(since)s"))
        params["since"] = filters.since
    if filters.until is not None:
        conds.append(sql.SQL("valid_from < %(until)s"))
        params["until"] = filters.until
    return sql.SQL(" AND ").join(conds), params


def _vector_candidates(
    conn: Conn,
    where: sql.Composable,
    params: dict[str, Any],
    vector: Any,
    embedder: Embedder,
    k: int,
    settings: SearchSettings,
) -> list[Candidate]:
    indexed = embedder.model in INDEXED_MODELS
    exact = not indexed or _scope_size(conn, where, params, settings.exact_scope_cap) < (
        settings.exact_scope_cap
    )
    if not exact:
        conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            " set_config('hnsw.ef_search', %s, true)",
            [str(max(settings.ef_search, k))],
        )
    query = sql.SQL(Q["vector_exact" if exact else "vector_hnsw"]).format(
        columns=_COLUMNS,
        scope=where,
        dim=sql.SQL(str(int(embedder.dim))),
        model=sql.Literal(embedder.model),  # a literal: the partial HNSW index must match
    )
    rows = conn.execute(query, {**params, "query": vector, "k": k}).fetchall()
    rows.sort(key=lambda r: (-r["similarity"], r["id"]))  # relaxed order from HNSW
    return [_candidate(r, similarity=float(r["similarity"])) for r in rows]


def _scope_size(conn: Conn, where: sql.Composable, params: dict[str, Any], cap: int) -> int:
    query = sql.SQL(Q["scope_size"]).format(scope=where)
    row = conn.execute(query, {**params, "cap": cap}).fetchone()
    return int(row["n"]) if row else 0


def _text_candidates(
    conn: Conn, where: sql.Composable, params: dict[str, Any], text: str, k: int, scan: int
) -> list[Candidate]:
    words = _WORD.findall(text)
    if not words:
        return []
    matches = sql.SQL(Q["text_matches"]).format(scope=where)
    args = {**params, "scan": scan}
    found = {
        r["id"]: r["canonical_statement"]
        for r in conn.execute(matches, {**args, "text": " ".join(words)})
    }
    if len(found) < scan and len(words) > 1:
        for r in conn.execute(matches, {**args, "text": " or ".join(words)}):
            found.setdefault(r["id"], r["canonical_statement"])
    if not found:
        return []
    ids = sorted(found)
    best = [ids[i] for i, _ in BM25([found[i] for i in ids]).top(text, k)]
    query = sql.SQL(Q["entries_by_id"]).format(columns=_COLUMNS, scope=where)
    rows = {r["id"]: r for r in conn.execute(query, {**params, "ids": best})}
    return [_candidate(rows[i]) for i in best if i in rows]


def _candidate(row: dict[str, Any], *, similarity: float | None = None) -> Candidate:
    return Candidate(
        entry_id=row["id"],
        kind=row["kind"],
        owner_type=row["owner_type"],
        owner_id=row["owner_id"],
        key=row["key"],
        statement=row["canonical_statement"],
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        status=row["status"],
        confidence=row["confidence"],
        importance=row["importance"],
        access_count=row["access_count"],
        last_accessed_at=row["last_accessed_at"],
        source_session_id=row["source_session_id"],
        source_event_ids=tuple(row["source_event_ids"]),
        source_external_ids=tuple(row["source_external_ids"]),
        fields=row["fields"],
        similarity=similarity,
    )


def external_ids(results: Sequence[Scored]) -> set[str]:
    """Every backend message id the results' provenance names."""
    return {x for s in results for x in s.candidate.source_external_ids}
