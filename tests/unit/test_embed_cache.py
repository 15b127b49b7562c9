"""The query vector cache: a repeated query is embedded once, the cache stays within its
size (least recently used out first), entries' texts pass through uncached, and concurrent
callers all get the right vector."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from observations.embed import (
    HashEmbedder,
    QueryVectorCache,
    Vectors,
    embed_query,
    with_query_cache,
)


class Counting:
    """A hash embedder that counts the texts it embedded."""

    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.model, self.dim = self.inner.model, self.inner.dim
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self.texts.extend(texts)
        return self.inner.embed(texts)


def test_a_repeated_query_is_embedded_once() -> None:
    inner = Counting()
    cache = QueryVectorCache(inner, 8)
    first = embed_query(cache, "where does alice work?")
    again = embed_query(cache, "where does alice work?")
    assert inner.texts == ["where does alice work?"]
    assert np.array_equal(first, again)
    assert np.array_equal(first, inner.inner.embed(["where does alice work?"])[0])
    assert (cache.hits, cache.misses) == (1, 1)
    with pytest.raises(ValueError):
        first[0] = 1.0  # shared by every caller: read-only


def test_the_cache_is_bounded_and_drops_the_least_recently_used() -> None:
    inner = Counting()
    cache = QueryVectorCache(inner, 3)
    for text in ["a", "b", "c"]:
        cache.embed_query(text)
    cache.embed_query("a")  # a is now the most recently used
    cache.embed_query("d")  # b goes
    assert len(cache) == 3
    inner.texts.clear()
    for text in ["a", "c", "d"]:
        cache.embed_query(text)
    assert inner.texts == []
    cache.embed_query("b")
    assert inner.texts == ["b"]
    for i in range(100):
        cache.embed_query(f"q{i}")
    assert len(cache) == 3


def test_entries_texts_are_not_cached() -> None:
    inner = Counting()
    cache = QueryVectorCache(inner, 8)
    for _ in range(2):
        cache.embed(["[owner: alice] alice works at the bakery"])
    assert len(inner.texts) == 2
    assert len(cache) == 0
    assert (cache.model, cache.dim) == (inner.model, inner.dim)


def test_size_zero_means_no_cache() -> None:
    inner = Counting()
    assert with_query_cache(inner, 0) is inner
    for _ in range(2):
        embed_query(inner, "q")
    assert inner.texts == ["q", "q"]
    assert isinstance(with_query_cache(inner, 5), QueryVectorCache)


def test_concurrent_callers_each_get_their_own_vector() -> None:
    inner = Counting()
    cache = QueryVectorCache(inner, 16)
    texts = [f"question {i % 40}" for i in range(400)]
    got: dict[int, Vectors] = {}

    def ask(i: int) -> None:
        got[i] = cache.embed_query(texts[i])

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected = inner.inner.embed(texts)
    assert all(np.array_equal(got[i], expected[i]) for i in range(len(texts)))
    assert len(cache) <= 16
