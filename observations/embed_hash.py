"""A deterministic embedder for tests: no model, no network, same vector on every machine."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator, Sequence

import numpy as np

from observations.embed_base import Vectors, check_texts, l2_normalize

_WORD = re.compile(r"\w+")
_EMPTY_FEATURE = "empty:"  # so an empty text still gets a unit vector

# Feature weights: shared words dominate, bigrams reward shared phrases, character
# trigrams let "mountain" and "mountains" overlap.
_WORD_WEIGHT = 1.0
_BIGRAM_WEIGHT = 0.5
_TRIGRAM_WEIGHT = 0.25


_NAME = re.compile(r"hash-v1-([1-9][0-9]{0,4})")


def hash_embedder_named(model: str) -> HashEmbedder | None:
    """The hash embedder whose model is called ``model`` (``hash-v1-<dim>``), if any."""
    named = _NAME.fullmatch(model)
    return HashEmbedder(int(named[1])) if named else None


class HashEmbedder:
    """Signed feature hashing of words, word bigrams and character trigrams into `dim`
    buckets, L2-normalized. Texts sharing words score a higher cosine than unrelated
    texts; there is no semantics beyond that. For tests only."""

    def __init__(self, dim: int = 384) -> None:
        if dim < 1:
            raise ValueError("dim must be at least 1")
        self.model = f"hash-v1-{dim}"
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        items = check_texts(texts)
        matrix = np.zeros((len(items), self.dim), dtype=np.float32)
        for row, text in enumerate(items):
            for feature, weight in _features(text):
                digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
                sign = 1.0 if digest & 1 else -1.0
                matrix[row, (digest >> 1) % self.dim] += sign * weight
        return l2_normalize(matrix)


def _features(text: str) -> Iterator[tuple[str, float]]:
    words = _WORD.findall(text.casefold())
    if not words:
        yield _EMPTY_FEATURE, 1.0
    for word in words:
        yield f"w:{word}", _WORD_WEIGHT
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            yield f"c:{padded[i : i + 3]}", _TRIGRAM_WEIGHT
    for first, second in itertools.pairwise(words):
        yield f"b:{first} {second}", _BIGRAM_WEIGHT
