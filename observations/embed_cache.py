"""A bounded LRU cache of query vectors, in front of an embedder.

A server embeds the question of every search and context request, and the same questions
come back (an agent asking its memory the same thing turn after turn, a client retrying).
A query's vector depends only on the model (one per cache) and the text, so the vectors
of the ``size`` most recently asked texts are kept.

Only :meth:`QueryVectorCache.embed_query` goes through the cache: :meth:`embed` (entries
built or edited, whose texts seldom come back) passes straight to the embedder, so they
never push queries out. A miss is embedded by the wrapped embedder outside any lock, so
concurrent misses still meet in its batches (:mod:`observations.embed_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from observations.embed_base import Embedder, Vectors
from observations.embed_models import embedder_for


class QueryVectorCache:
    """``embedder`` with its query vectors cached (``functools.lru_cache``): at most
    ``size`` of them, the least recently used dropped first. An :class:`Embedder` itself
    (its ``embed`` uncached)."""

    def __init__(self, embedder: Embedder, size: int) -> None:
        if size < 1:
            raise ValueError("a query vector cache holds at least one vector")
        self.embedder = embedder
        self.model, self.dim = embedder.model, embedder.dim
        self.embed_query = lru_cache(maxsize=size)(self._embed_one)

    def _embed_one(self, text: str) -> Vectors:
        vector = self.embedder.embed([text])[0].copy()
        vector.flags.writeable = False  # shared by every caller asking the same
        return vector

    @property
    def hits(self) -> int:
        return self.embed_query.cache_info().hits

    @property
    def misses(self) -> int:
        return self.embed_query.cache_info().misses

    def __len__(self) -> int:
        return self.embed_query.cache_info().currsize

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The wrapped embedder's vectors, not cached."""
        return self.embedder.embed(texts)

    def for_model(self, model: str) -> Embedder:
        """The wrapped embedder's sibling for ``model`` (see :mod:`observations.embed_models`),
        itself when ``model`` is this one's; uncached."""
        return self if model == self.model else embedder_for(self.embedder, model)


def embed_query(embedder: Embedder, text: str) -> Vectors:
    """The vector of one query text: through the embedder's query cache if it has one."""
    if isinstance(embedder, QueryVectorCache):
        return embedder.embed_query(text)
    return embedder.embed([text])[0]


def with_query_cache(embedder: Embedder, size: int) -> Embedder:
    """``embedder`` behind a query vector cache of ``size`` vectors (0: no cache)."""
    return QueryVectorCache(embedder, size) if size > 0 else embedder
