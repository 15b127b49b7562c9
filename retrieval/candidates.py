"""The candidate lists of a search, from PostgreSQL, inside the tenant's row-level-security
scope:

* vector — cosine similarity of the contextualized query to entry embeddings. A scope is
  one to three owner parts (the user's own entries, the channel entries naming the user,
  the agent's or, with a user, what the agent learnt from that user or alone), each
  counted through an index, and each part's size picks its path: an owner with an HNSW
  index of its own (consolidation's ``owner_indexes`` job builds one for an owner with
  many entries, for a user named by many channel entries, and for what an agent learnt
  from one user when that is much: the agent's own graph, holding what it learnt from
  everyone, never serves that part) is searched through it; a small part is ranked
  exactly over its rows (complete); another large one goes through the table's HNSW
  index with iterative scans, where the filter passes often enough to fill ``limit``.
  Small means below ``exact_scope_cap`` or below the size where the two paths cost the
  same, which grows with the square root of the table (≈ 13,000 entries at 1M). The
  parts' lists are joined and the best ``k`` kept. Vectors are halfvec, compared as
  ``halfvec(dim)`` of the embedder's model; the HNSW indexes hold active entries only, so
  a large part with history takes its active entries from an index and ranks its other
  entries exactly.
* full text — statements matching any of the query's words (``websearch_to_tsquery``),
  at most ``text_scan`` rows; when that cap cuts the set, the statements matching all of
  the words come first. They are ranked by BM25 with the document frequencies of that
  match set (``ts_rank`` has no idf: common words would outweigh the telling ones). For a
  scope past ``text_scope_cap`` the match set is the vector candidates instead: under
  row-level security PostgreSQL cannot use the GIN index for ``@@`` (its function is not
  leakproof), so matching a large scope means reading every row of it (hundreds of ms at
  100,000 rows); BM25 then reranks the semantically close rows by their words. Below
  ``text_scope_cap``, the read that matches the words ranks the scope exactly too, so
  such a scope takes no vector path of its parts: one statement gives both lists' ids,
  and one more fetches the entries kept.

A statement's text depends only on the scope's shape, the paths and the model (every value
is a parameter), so each is composed once. A statement with an HNSW path is planned for its
values every time: a partial index matches only a query whose values the planner sees, and
the right path depends on the scope's size. The others take the owner index (or the
primary key) whatever the owner, so their plans are kept (prepared): with the owners'
partial indexes on the table, planning such a statement costs as much as running it for a
small scope (0.3-1 ms).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql
from psycopg.rows import tuple_row

from ledger.db import Conn
from ledger.owner_indexes import LEARNT, PARTICIPANT, learnt_owner, owner_index_name
from ledger.sqlfile import load_queries
from observations.embed import Embedder
from observations.embed_local import LOCAL_MODELS
from retrieval.bm25 import rank as bm25_rank
from retrieval.types import Candidate, Filters, Scope, SearchSettings

Q = load_queries("retrieval")
WITH_HISTORY = ("active", "superseded", "merged", "archived")
# The local models each have a partial HNSW index (ledger/migrations/0003_halfvec.sql,
# 0004_embedding_models.sql, 0009_minilm_q8row.sql; active entries only); others are
# always ranked exactly.
INDEXED_MODELS = frozenset(LOCAL_MODELS)
_COLUMNS = sql.SQL(
    "id, kind, owner_type, owner_id, key, canonical_statement, valid_from, valid_to, status, "
    "confidence, importance, access_count, last_accessed_at, source_session_id, "
    "source_event_ids, source_external_ids, fields, recorded_at, expired_at, superseded_by"
)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class OwnerPart:
    """One owner condition of a scope: its rows (``condition``) and the ``(owner_type,
    owner_id)`` its own index is named by. A part found through other
    rows (a user's channels) has two more: ``bound``, a condition every row of it meets
    that the owner index alone answers, to count it by; ``indexed``, the part as its own
    index states it (the planner takes that index only for a query that says so)."""

    condition: sql.Composable
    key: tuple[str, str]
    bound: sql.Composable | None = None
    indexed: sql.Composable | None = None


@dataclass(frozen=True, slots=True)
class ScopeSql:
    """The scope as SQL: conditions every row meets, the owner parts (any of, disjoint),
    their parameters, and their shape; ``current``: active entries only (the HNSW indexes
    can serve it)."""

    common: sql.Composable
    owners: tuple[OwnerPart, ...]
    params: dict[str, Any]
    # what the scope's SQL depends on (its values are parameters): the same shape, the
    # same statements
    shape: tuple[bool, ...]
    current: bool = True
    narrowed: bool = False  # by kind or time: fewer rows than the owners hold

    @property
    def where(self) -> sql.Composable:
        if not self.owners:
            return self.common
        either = sql.SQL(" OR ").join(o.condition for o in self.owners)
        return sql.SQL("{} AND ({})").format(self.common, either)


def scope_sql(scope: Scope, filters: Filters) -> ScopeSql:
    """``scope`` and ``filters`` as SQL, with their parameters."""
    # Current entries only: a literal, so the planner can match the partial HNSW index
    # (a parameter would match it only in a custom plan).
    status = "status = ANY(%(statuses)s)" if filters.history else "status = 'active'"
    conds: list[sql.Composable] = [sql.SQL("tenant_id = %(tenant_id)s"), sql.SQL(status)]
    params: dict[str, Any] = {"tenant_id": scope.tenant_id}
    if filters.history:
        params["statuses"] = list(WITH_HISTORY)
    owners: list[OwnerPart] = []
    if scope.user_id is not None:
        mine = sql.SQL("(owner_type = 'user' AND owner_id = %(user_id)s)")
        owners.append(OwnerPart(mine, ("user", scope.user_id)))
        bound, indexed = sql.SQL(Q["channel_part_bound"]), sql.SQL(Q["channel_part_indexed"])
        channels = sql.SQL("({} AND {})").format(bound, indexed)
        owners.append(OwnerPart(channels, (PARTICIPANT, scope.user_id), bound, indexed))
        params["user_id"] = scope.user_id
    if scope.agent_id is not None:
        agent = sql.SQL("(owner_type = 'agent' AND owner_id = %(agent_id)s)")
        if scope.user_id is None:
            owners.append(OwnerPart(agent, ("agent", scope.agent_id)))
        else:  # what the agent learnt from the user or alone: its own index, not the agent's
            learnt = (LEARNT, learnt_owner(scope.agent_id, scope.user_id))
            owners.append(OwnerPart(sql.SQL(Q["agent_part"]), learnt))
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
    narrowing = (bool(filters.kinds), filters.since is not None, filters.until is not None)
    shape = (scope.user_id is not None, scope.agent_id is not None, filters.history, *narrowing)
    common = sql.SQL(" AND ").join(conds)
    return ScopeSql(
        common, tuple(owners), params, shape, current=not filters.history, narrowed=any(narrowing)
    )


def candidate_lists(
    conn: Conn,
    scope: ScopeSql,
    text: str,
    vector: Any,
    embedder: Embedder,
    k: int,
    settings: SearchSettings,
) -> tuple[list[Candidate], list[Candidate]]:
    """The vector list and the full-text list of a search for ``text``, whose embedding by
    ``embedder`` is ``vector``: the ``k`` best of each. Below the full-text cap, one read
    of the scope's rows ranks it exactly and matches its words (``nearest_and_matching``)."""
    parts = _scope_parts(conn, scope, embedder.model, k, settings)
    words = _WORD.findall(text)
    if sum(p.size for p in parts) >= settings.text_scope_cap or not words:
        by_vector = _nearest_by_part(conn, scope, parts, vector, embedder, k)
        return by_vector, bm25_candidates(by_vector, text, k) if words else []
    statement = _composed(
        ("both", scope.shape, embedder.model, embedder.dim),
        lambda: sql.SQL(Q["nearest_and_matching"]).format(
            scope=scope.where, dim=_dim(embedder), model=sql.Literal(embedder.model)
        ),
    )
    scan = settings.text_scan
    args = {**scope.params, "query": vector, "k": k, "text": " or ".join(words), "scan": scan}
    nearest, found = [], {}
    rows = conn.cursor(row_factory=tuple_row)  # up to k + scan rows: no dict for each
    for entry_id, _, matched in rows.execute(statement, args):
        if matched is None:
            nearest.append(entry_id)
        else:
            found[entry_id] = matched
    if len(found) >= scan and len(words) > 1:  # cut: the statements with every word first
        every = _matching(conn, scope, " ".join(words), scan)
        found = every if len(every) >= scan else {**every, **found}
    ids = sorted(found)
    best = [ids[i] for i, _ in bm25_rank([found[i] for i in ids], text, k)]
    fetched = _by_id(conn, scope, [*nearest, *set(best).difference(nearest)], vector, embedder)
    return [fetched[i] for i in nearest if i in fetched], [fetched[i] for i in best if i in fetched]


def vector_list(
    conn: Conn,
    scope: ScopeSql,
    vector: Any,
    embedder: Embedder,
    k: int,
    settings: SearchSettings,
) -> list[Candidate]:
    """The vector list alone: the ``k`` entries of the scope nearest to ``vector``."""
    parts = _scope_parts(conn, scope, embedder.model, k, settings)
    return _nearest_by_part(conn, scope, parts, vector, embedder, k)


def _nearest_by_part(
    conn: Conn,
    scope: ScopeSql,
    parts: Sequence[_Part],
    vector: Any,
    embedder: Embedder,
    k: int,
) -> list[Candidate]:
    """The ``k`` nearest entries, each part by the path its size picks."""
    indexed = embedder.model in INDEXED_MODELS
    paths = [p.path(indexed, scope.current) for p in parts]
    exact = all(path == "vector_exact" for path in paths)
    if exact:  # one scan of the whole scope
        chosen: list[tuple[int, str, bool]] = [(-1, "vector_exact", False)]
    else:
        chosen = [
            (i, path, part.own_index)
            for i, (part, path) in enumerate(zip(parts, paths, strict=True))
            if part.size
        ]
    if not chosen:  # an owner's index left over from entries since deleted, and no other
        return []

    def compose() -> sql.Composable:
        if exact:
            return _vector_statement([(scope.where, scope.where, "vector_exact")], embedder)
        return _vector_statement([parts[i].query(scope, path) for i, path, _ in chosen], embedder)

    key = ("vector", scope.shape, embedder.model, embedder.dim, tuple(chosen))
    statement = _composed(key, compose)
    # An HNSW path is planned for its values: a partial index matches only a query whose
    # values the planner sees. Exact ranking takes the owner index whatever the owner, so
    # its plan can be kept (planning costs about as much as running it for a small scope).
    args = {**scope.params, "query": vector, "k": k}
    rows = conn.execute(statement, args, prepare=None if exact else False).fetchall()
    rows.sort(key=lambda r: (-r["similarity"], r["id"]))  # relaxed order from HNSW
    return [_candidate(r, similarity=float(r["similarity"])) for r in rows[:k]]


@dataclass(frozen=True, slots=True)
class _Part:
    """One owner part of a scope (``None``: the whole scope, which has no owner
    condition): how many rows (counted up to a cap), whether it has an HNSW index of its
    own, and the size below which it is ranked exactly."""

    owner: OwnerPart | None
    size: int
    own_index: bool
    exact_below: int

    def path(self, indexed: bool, current: bool) -> str:
        if not indexed or (self.size < self.exact_below and not self.own_index):
            return "vector_exact"
        return "vector_hnsw" if current else "vector_hnsw_history"

    def query(self, scope: ScopeSql, path: str) -> tuple[sql.Composable, sql.Composable, str]:
        """The part's rows for ``path``'s HNSW half (as its own index states them, when it
        goes through it) and for an exact half, with the path."""
        if self.owner is None:
            return scope.common, scope.common, path
        where = _rows(scope, self.owner.condition)
        if self.own_index and path != "vector_exact" and self.owner.indexed is not None:
            return _rows(scope, self.owner.indexed), where, path
        return where, where, path


def _scope_parts(
    conn: Conn, scope: ScopeSql, model: str, k: int, settings: SearchSettings
) -> list[_Part]:
    """The scope's parts (the whole scope when it has no owner condition), in one round
    trip. See ``scope_size`` in queries.sql: the same statement sets the HNSW scan
    parameters for this transaction, in case a part's size calls for that path. A part
    is counted only as far as its path needs (``owned_count``), and by its bound where
    that decides the same (``bounded_count``): an index-only count, where checking each
    row would read it."""
    names = {  # the parts' own indexes, by parameter
        f"index_{i}": owner_index_name(scope.params["tenant_id"], *owner.key, model)
        for i, owner in enumerate(scope.owners)
    }
    params = {
        **scope.params,
        **names,
        "cap": max(settings.exact_scope_cap, settings.text_scope_cap),
        "ratio": settings.hnsw_cost_ratio,
        "k": k,
        "ef_search": str(max(settings.ef_search, k)),
    }
    row = conn.execute(_size_statement(scope), params).fetchone()
    if row is None:
        return []
    exact_below = max(settings.exact_scope_cap, int(row["crossover"]))
    owners: Sequence[OwnerPart | None] = scope.owners or (None,)
    return [
        _Part(owner, int(n), bool(own), exact_below)
        for owner, n, own in zip(owners, row["counts"], row["owned"], strict=True)
    ]


_STATEMENTS: dict[tuple[Any, ...], bytes] = {}


def _composed(key: tuple[Any, ...], compose: Callable[[], sql.Composable]) -> bytes:
    """The statement ``compose`` makes, composed once per ``key``: everything its text
    depends on (the scope's shape, the paths, the model), its values being parameters."""
    statement = _STATEMENTS.get(key)
    if statement is None:
        statement = _STATEMENTS.setdefault(key, compose().as_bytes(None))
    return statement


def _size_statement(scope: ScopeSql) -> bytes:
    """The ``scope_size`` statement of the scope's shape."""
    return _composed(("size", scope.shape), lambda: _compose_size(scope))


def _compose_size(scope: ScopeSql) -> sql.Composable:
    count, bounded = sql.SQL(Q["scope_count"]), sql.SQL(Q["bounded_count"])

    def counted(condition: sql.Composable) -> sql.Composable:
        return count.format(scope=_rows(scope, condition))

    names = [sql.Placeholder(f"index_{i}") for i in range(len(scope.owners))]
    counts: list[sql.Composable] = []
    owned: list[sql.Composable] = []
    if not scope.owners:  # the whole scope: one part, no owner
        counts.append(count.format(scope=scope.common))
        owned.append(sql.SQL("false"))
    for i, owner in enumerate(scope.owners):
        own = sql.SQL(Q["owner_index_ready"]).format(name=names[i])
        n = counted(owner.condition)
        if owner.bound is not None:
            n = bounded.format(bound=counted(owner.bound), exact=n)
        few = _rows(scope, owner.bound or owner.condition)
        counts.append(sql.SQL(Q["owned_count"]).format(own=own, scope=few, count=n))
        owned.append(own)
    big: sql.Composable = sql.SQL("SELECT false AS at_cap")
    if names and not scope.narrowed:
        regclasses = sql.SQL(", ").join(sql.SQL("to_regclass({})").format(n) for n in names)
        big = sql.SQL(Q["owners_at_cap"]).format(names=regclasses)
    return sql.SQL(Q["scope_size"]).format(
        big=big, counts=sql.SQL(", ").join(counts), owned=sql.SQL(", ").join(owned)
    )


def _rows(scope: ScopeSql, condition: sql.Composable) -> sql.Composable:
    return sql.SQL("{} AND {}").format(scope.common, condition)


def _vector_statement(
    queries: Sequence[tuple[sql.Composable, sql.Composable, str]], embedder: Embedder
) -> sql.Composable:
    """The lists of ``queries`` (each the rows of its scope for an HNSW half and for an
    exact half, and its path) in one statement: the caller keeps the best ``k``."""
    statements = [
        sql.SQL(Q[path]).format(
            columns=_COLUMNS,
            scope=where,
            rest=rest,
            dim=_dim(embedder),
            model=sql.Literal(embedder.model),  # a literal: the partial HNSW index must match
        )
        for where, rest, path in queries
    ]
    if len(statements) == 1:
        return statements[0]
    return sql.SQL(" UNION ALL ").join(sql.SQL("({})").format(s) for s in statements)


def _dim(embedder: Embedder) -> sql.Composable:
    return sql.SQL(str(int(embedder.dim)))


def _matching(conn: Conn, scope: ScopeSql, query: str, scan: int) -> dict[int, str]:
    """The statements of the scope matching the full-text ``query``, at most ``scan``."""
    statement = _composed(
        ("text", scope.shape), lambda: sql.SQL(Q["text_matches"]).format(scope=scope.where)
    )
    rows = conn.execute(statement, {**scope.params, "text": query, "scan": scan})
    return {r["id"]: r["canonical_statement"] for r in rows}


def _by_id(
    conn: Conn, scope: ScopeSql, ids: Sequence[int], vector: Any, embedder: Embedder
) -> dict[int, Candidate]:
    """The scope's entries ``ids``, each with its similarity to ``vector`` (an embedding
    by ``embedder``'s model; None for an entry of another model)."""
    if not ids:
        return {}
    statement = _composed(
        ("by_id", scope.shape, embedder.model, embedder.dim),
        lambda: sql.SQL(Q["entries_by_id"]).format(
            columns=_COLUMNS,
            scope=scope.where,
            dim=_dim(embedder),
            model=sql.Literal(embedder.model),
        ),
    )
    rows = conn.execute(statement, {**scope.params, "ids": list(ids), "query": vector})
    return {r["id"]: _candidate(r, similarity=_similarity(r["similarity"])) for r in rows}


def bm25_candidates(candidates: Sequence[Candidate], text: str, k: int) -> list[Candidate]:
    """The ``k`` best of ``candidates`` by BM25 over their statements (in id order, as for
    the full-text matches)."""
    ordered = sorted(candidates, key=lambda c: c.entry_id)
    return [ordered[i] for i, _ in bm25_rank([c.statement for c in ordered], text, k)]


def _similarity(value: float | None) -> float | None:
    return None if value is None else float(value)


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
        recorded_at=row["recorded_at"],
        expired_at=row["expired_at"],
        superseded_by=row["superseded_by"],
        similarity=similarity,
    )
