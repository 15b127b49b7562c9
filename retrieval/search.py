"""The search half of the gateway: the candidate lists of :mod:`retrieval.candidates`
(vector and full text, inside the tenant's row-level-security scope), fused by reciprocal
rank, then ordered by :func:`retrieval.scoring.score` and :func:`retrieval.scoring.rerank`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from ledger.db import Conn, tenant_scope
from ledger.errors import InvalidInput
from observations.embed import Embedder, contextualize, embed_query
from observations.embed_models import reading_embedder
from retrieval.candidates import candidate_lists, scope_sql, vector_list
from retrieval.periods import query_periods
from retrieval.scoring import fuse, rerank, score
from retrieval.types import Candidate, Filters, Scope, Scored, SearchSettings

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "Filters",
    "InvalidQuery",
    "Scope",
    "SearchSettings",
    "external_ids",
    "search",
    "search_in_scope",
    "vector_search",
]


_NO_FILTERS = Filters()
_DEFAULT_SETTINGS = SearchSettings()


class InvalidQuery(InvalidInput):
    """A search request that cannot be run: the message names the parameter."""


def search_in_scope(
    conn: Conn,
    scope: Scope,
    query: str,
    *,
    embedder: Embedder,
    now: datetime,
    limit: int = 10,
    filters: Filters = _NO_FILTERS,
    settings: SearchSettings = _DEFAULT_SETTINGS,
    owner_name: str | None = None,
) -> list[Scored]:
    """:func:`search` on a connection already inside ``tenant_scope(conn, scope.tenant_id)``
    (the context bundle reads its other sections in the same scope: entering it again
    costs three statements), best in a snapshot (``snapshot=True``): the query is embedded
    by the model the database reads, and a re-embed's switch then cannot fall between
    reading which model that is and reading the vectors."""
    if not query.strip():
        raise InvalidQuery("query is empty", field="query")
    if not 1 <= limit <= 1000:
        raise InvalidQuery("limit must be between 1 and 1000", field="limit", limit=limit)
    text = contextualize(query, owner=owner_name, when=None, kind=None, topic=None)
    embedder = reading_embedder(conn, embedder)  # the model the scope's vectors are in
    vector = embed_query(embedder, text)  # through the query vector cache, if it has one
    k = max(settings.candidates, 2 * limit)
    where = scope_sql(scope, filters)
    by_vector, by_text = candidate_lists(conn, where, query, vector, embedder, k, settings)
    fused = fuse(by_vector, by_text, k=settings.weights.rrf_k)
    periods = query_periods(query, now)
    ranked = score(fused, now=now, weights=settings.weights, periods=periods)
    return rerank(ranked, weights=settings.weights, limit=limit)


def _in_tenant_scope(
    run: Callable[Concatenate[Conn, Scope, _P], _R],
) -> Callable[Concatenate[Conn, Scope, _P], _R]:
    def scoped(conn: Conn, scope: Scope, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with tenant_scope(conn, scope.tenant_id, snapshot=True):
            return run(conn, scope, *args, **kwargs)

    return scoped


search = _in_tenant_scope(search_in_scope)
"""The best ``limit`` entries for ``query`` within ``scope``, each with its explain (the
arguments of :func:`search_in_scope`), in a transaction under the scope's tenant."""


def vector_search(
    conn: Conn,
    scope: Scope,
    vector: Any,
    *,
    embedder: Embedder,
    k: int = 50,
    filters: Filters = _NO_FILTERS,
    settings: SearchSettings = _DEFAULT_SETTINGS,
) -> list[Candidate]:
    """The vector-and-filter half of :func:`search` alone: the ``k`` entries of ``scope``
    nearest to ``vector`` (an embedding by ``embedder``'s model), most similar first."""
    with tenant_scope(conn, scope.tenant_id):
        return vector_list(conn, scope_sql(scope, filters), vector, embedder, k, settings)


def external_ids(results: Sequence[Scored]) -> set[str]:
    """Every backend message id the results' provenance names."""
    return {x for s in results for x in s.candidate.source_external_ids}
