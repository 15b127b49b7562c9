"""The search half of the gateway: candidates from PostgreSQL, ranked by the pure scorer.

Two candidate lists are fetched inside the tenant's row-level-security scope and fused:

* vector — cosine similarity of the contextualized query to entry embeddings. The scope's
  size, counted owner by owner through the owner index, picks the path: a small scope is
  ranked exactly over its rows (complete); a large one goes through the HNSW index with
  iterative scans, where the filter passes often enough to fill ``limit``. Small means
  below ``exact_scope_cap`` or below the size where the two paths cost the same, which
  grows with the square root of the table (≈ 10,000 entries at 1M).
* full text — statements matching any of the query's words (``websearch_to_tsquery``),
  at most ``text_scan`` rows; when that cap cuts the set, the statements matching all of
  the words come first. They are ranked by BM25 with the document frequencies of that
  match set (``ts_rank`` has no idf: common words would outweigh the telling ones). For a
  scope past ``text_scope_cap`` the match set is the vector candidates instead: under
  row-level security PostgreSQL cannot use the GIN index for ``@@`` (its function is not
  leakproof), so matching a large scope means reading every row of it (hundreds of ms at
  100,000 rows); BM25 then reranks the semantically close rows by their words.

The vector and full-text queries are planned for their parameters every time (never a
cached generic plan: the right plan depends on the scope's size).

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
from retrieval.bm25 import rank as bm25_rank
from retrieval.scoring import fuse, rerank, score
from retrieval.types import Candidate, RetrievalWeights, Scored

Q = load_queries("retrieval")
CURRENT = ("active",)
WITH_HISTORY = ("active", "superseded", "merged", "archived")
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
    history: bool = False  # include superseded, merged and archived entries


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    candidates: int = 50  # per list, before fusion
    exact_scope_cap: int = 5000  # scopes up to this size are ranked exactly
    # Larger scopes too, up to where a filtered HNSW scan costs as much as the exact scan:
    # its cost per entry the filter rejects over the exact scan's cost per scope row
    # (measured on the 2-core machine at 1M entries, vectors in TOAST: ≈ 12 µs / 6 µs).
    hnsw_cost_ratio: float = 2.0
    # Scopes up to this size get full-text matches over all their rows; under row-level
    # security each match reads the scope's rows, so larger ones rerank the vector
    # candidates by BM25 instead.
    text_scope_cap: int = 5000
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
    where = _scope_sql(scope, filters)
    k = max(settings.candidates, 2 * limit)
    with tenant_scope(conn, scope.tenant_id):
        by_vector, size = _vector_list(conn, where, vector, embedder, k, settings)
        if size < settings.text_scope_cap:
            by_text = _text_candidates(conn, where, query, k, settings.text_scan, known=by_vector)
        else:
            by_text = _bm25(by_vector, query, k)
    fused = fuse(by_vector, by_text, k=settings.weights.rrf_k)
    ranked = score(fused, now=now, weights=settings.weights)
    return rerank(ranked, weights=settings.weights, limit=limit)


def vector_search(
    conn: Conn,
    scope: Scope,
    vector: Any,
    *,
    embedder: Embedder,
    k: int = 50,
    filters: Filters = Filters(),
    settings: SearchSettings = SearchSettings(),
) -> list[Candidate]:
    """The vector-and-filter half of :func:`search` alone: the ``k`` entries of ``scope``
    nearest to ``vector`` (an embedding by ``embedder``'s model), most similar first."""
    with tenant_scope(conn, scope.tenant_id):
        return _vector_list(conn, _scope_sql(scope, filters), vector, embedder, k, settings)[0]


def _vector_list(
    conn: Conn,
    scope: _ScopeSql,
    vector: Any,
    embedder: Embedder,
    k: int,
    settings: SearchSettings,
) -> tuple[list[Candidate], int]:
    """The vector candidates, and the scope's size (counted only as far as it matters)."""
    size, exact_below = _scope_size(conn, scope, k, settings)
    exact = embedder.model not in INDEXED_MODELS or size < exact_below
    return _vector_candidates(conn, scope, vector, embedder, k, exact=exact), size


@dataclass(frozen=True, slots=True)
class _ScopeSql:
    """The scope as SQL: conditions every row meets, and the owner conditions (any of)."""

    common: sql.Composable
    owners: tuple[sql.Composable, ...]
    params: dict[str, Any]

    @property
    def where(self) -> sql.Composable:
        if not self.owners:
            return self.common
        return sql.SQL("{} AND ({})").format(self.common, sql.SQL(" OR ").join(self.owners))


def _scope_sql(scope: Scope, filters: Filters) -> _ScopeSql:
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
    if filters.kinds:
        conds.append(sql.SQL("kind = ANY(%(kinds)s)"))
        params["kinds"] = list(filters.kinds)
    if filters.since is not None:
        conds.append(sql.SQL("valid_from >= %(since)s"))
        params["since"] = filters.since
    if filters.until is not None:
        conds.append(sql.SQL("valid_from < %(until)s"))
        params["until"] = filters.until
    return _ScopeSql(sql.SQL(" AND ").join(conds), tuple(owners), params)


def _scope_size(conn: Conn, scope: _ScopeSql, k: int, settings: SearchSettings) -> tuple[int, int]:
    """The scope's size (counted up to a cap), and the size below which it is ranked exactly.

    See ``scope_size`` in queries.sql. The same statement sets the HNSW scan parameters for
    this transaction, in case the size calls for that path.
    """
    count = sql.SQL(Q["scope_count"])
    parts = [count.format(scope=sql.SQL("{} AND {}").format(scope.common, o)) for o in scope.owners]
    query = sql.SQL(Q["scope_size"]).format(
        counts=sql.SQL(" + ").join(parts or [count.format(scope=scope.common)])
    )
    params = {
        **scope.params,
        "cap": max(settings.exact_scope_cap, settings.text_scope_cap),
        "ratio": settings.hnsw_cost_ratio,
        "k": k,
        "ef_search": str(max(settings.ef_search, k)),
    }
    row = conn.execute(query, params).fetchone()
    crossover = int(row["crossover"]) if row else 0
    return (int(row["n"]) if row else 0), max(settings.exact_scope_cap, crossover)


def _vector_candidates(
    conn: Conn, scope: _ScopeSql, vector: Any, embedder: Embedder, k: int, *, exact: bool
) -> list[Candidate]:
    query = sql.SQL(Q["vector_exact" if exact else "vector_hnsw"]).format(
        columns=_COLUMNS,
        scope=scope.where,
        dim=sql.SQL(str(int(embedder.dim))),
        model=sql.Literal(embedder.model),  # a literal: the partial HNSW index must match
    )
    params = {**scope.params, "query": vector, "k": k}
    rows = conn.execute(query, params, prepare=False).fetchall()
    rows.sort(key=lambda r: (-r["similarity"], r["id"]))  # relaxed order from HNSW
    return [_candidate(r, similarity=float(r["similarity"])) for r in rows]


def _text_candidates(
    conn: Conn,
    scope: _ScopeSql,
    text: str,
    k: int,
    scan: int,
    *,
    known: Sequence[Candidate] = (),
) -> list[Candidate]:
    """The ``k`` best full-text matches by BM25; a candidate already in ``known`` (the
    vector list) is reused rather than fetched again."""
    words = _WORD.findall(text)
    if not words:
        return []
    matches = sql.SQL(Q["text_matches"]).format(scope=scope.where)
    args = {**scope.params, "scan": scan}

    def match(q: str) -> dict[int, str]:
        rows = conn.execute(matches, {**args, "text": q}, prepare=False)
        return {r["id"]: r["canonical_statement"] for r in rows}

    found = match(" or ".join(words))
    if len(found) >= scan and len(words) > 1:  # cut: the statements with every word first
        every = match(" ".join(words))
        found = every if len(every) >= scan else {**every, **found}
    if not found:
        return []
    ids = sorted(found)
    best = [ids[i] for i, _ in bm25_rank([found[i] for i in ids], text, k)]
    have = {c.entry_id: c for c in known}
    missing = [i for i in best if i not in have]
    if missing:
        query = sql.SQL(Q["entries_by_id"]).format(columns=_COLUMNS, scope=scope.where)
        have.update(
            (r["id"], _candidate(r)) for r in conn.execute(query, {**scope.params, "ids": missing})
        )
    return [have[i] for i in best if i in have]


def _bm25(candidates: Sequence[Candidate], text: str, k: int) -> list[Candidate]:
    """The ``k`` best of ``candidates`` by BM25 over their statements (in id order, as for
    the full-text matches)."""
    ordered = sorted(candidates, key=lambda c: c.entry_id)
    return [ordered[i] for i, _ in bm25_rank([c.statement for c in ordered], text, k)]


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
