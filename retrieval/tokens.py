"""Token counters for the context bundle's budget.

The default, `wordpiece_counter()`, counts exactly the WordPiece tokens of the MiniLM
tokenizer the local embedder uses (its loader, so the same hash-checked file), without
truncation and without [CLS]/[SEP]. The tokenizer costs ≈ 80 µs for a 120-character chat
turn on the 2-core machine, so a text is counted as the sum of its whitespace-separated
words, each word's count memoized (the same words come back in statement after statement:
≈ 3× faster on unseen statements), and each text's count memoized too.
`approx_count` is a dependency-free estimate (≈ 10 µs, ≈ 1.1× WordPiece on LoCoMo turns).

Contract of a counter, which `bundle.pack` relies on: joining texts with whitespace never
costs more than the parts, count(a + "\\n" + b) <= count(a) + count(b). Both counters here
are exactly additive, since neither produces a token that spans whitespace.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cache, lru_cache

from observations.embed_local import MAX_POSITIONS, _load_tokenizer, default_model_files

TokenCounter = Callable[[str], int]

_PIECE = re.compile(r"\w+|[^\w\s]")
_CHARS_PER_PIECE = 6  # a word up to 6 characters is one token, longer ones ⌈len/6⌉


# Characters Python splits words on but BERT's normalizer deletes (control characters):
# a text holding one is counted whole.
_DELETED_SPACES = re.compile("[\x0b\x0c\x1c-\x1f\x85]")


@cache
def wordpiece_counter(cache_size: int = 65_536) -> TokenCounter:
    """The exact MiniLM WordPiece count, memoized for the last `cache_size` texts and words."""
    tokenizer = _load_tokenizer(default_model_files(), MAX_POSITIONS)
    tokenizer.no_truncation()

    @lru_cache(maxsize=cache_size)
    def encoded(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False))

    @lru_cache(maxsize=cache_size)
    def count(text: str) -> int:
        # No token spans whitespace (see the contract above), so the words add up exactly.
        if _DELETED_SPACES.search(text):
            return encoded(text)
        return sum(map(encoded, text.split()))

    return count


def approx_count(text: str) -> int:
    """An estimate of the WordPiece count: words and punctuation marks as BERT splits them,
    a word longer than 6 characters counting ⌈len/6⌉ pieces."""
    return sum(math.ceil(len(p) / _CHARS_PER_PIECE) for p in _PIECE.findall(text))
