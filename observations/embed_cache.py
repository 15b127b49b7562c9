"""A bounded LRU cache of query vectors, in front of an embedder.

A server embeds the question of every search and context request, and the same questions
come back (an agent asking its memory the same thing turn after turn, a client retrying).
A query's vector depends only on the model and the text, so the vectors of the
``size`` most recently asked texts are kept, keyed by (model, text).

Only :meth:`QueryVectorCache.embed_query` goes through the cache: :meth:`embed` (entries
built or edited, whose texts seldom come back) passes straight to the embedder, so they
never push queries out. A miss is embedded outside the cache's lock by the wrapped
embedder, so concurrent misses still meet in its batches (:mod:`observations.embed_batch`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from observations.embed_base import Embedder, Vectors


class QueryVectorCache:
    """``embedder`` with its query vectors cached: at most ``size`` of them, the least
    recently used dropped first. An :class:`Embedder` itself (its ``embed`` uncached)."""

    def __init__(self, embedder: Embedder, size: int) -> None:
        if size < 1:
            raise ValueError("a query vector cache holds at least one vector")
        self.embedder = embedder
        self.model, self.dim = embedder.model, embedder.dim
        self.size = size
        self._vectors: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """The wrapped embedder's vectors, not cached."""
        return self.embedder.embed(texts)

    def embed_query(self, text: str) -> Vectors:
        """The vector of one query text (read-only), from the cache when it holds it."""
        key = (self.model, text)
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
                self.hits += 1
                return vector
            self.misses += 1
        vector = self.embedder.embed([text])[0].copy()
        vector.flags.writeable = False  # shared by every caller asking the same
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector


def embed_query(embedder: Embedder, text: str) -> Vectors:
    """The vector of one query text: through the embedder's query cache if it has one."""
    if isinstance(embedder, QueryVectorCache):
        return embedder.embed_query(text)
    return embedder.embed([text])[0]


def with_query_cache(embedder: Embedder, size: int) -> Embedder:
    """``embedder`` behind a query vector cache of ``size`` vectors (0: no cache)."""
    return QueryVectorCache(embedder, size) if size > 0 else embedder
