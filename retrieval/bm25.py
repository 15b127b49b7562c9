"""Okapi BM25 over plain strings: the LoCoMo baseline over raw turns (DESIGN §8).

Deliberately plain: lower-cased alphanumeric tokens, a small English stop-word list, no
stemming, no synonyms. Scoring is Robertson's Okapi BM25 with the usual defaults k1 = 1.5
and b = 0.75, and the non-negative idf Lucene uses, ln(1 + (N - df + 0.5) / (df + 0.5)), so
a term present in most documents still counts a little instead of subtracting. Each
document's per-term weight is computed once at construction; a query only adds them up.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

_TOKEN = re.compile(r"[^\W_]+")

# A small classic list (articles, auxiliaries, pronouns, prepositions, conjunctions) plus
# the fragments left when apostrophes split a word ("she's" → "she", "s").
_STOP_LIST = """
    a an and are as at be been but by can could did do does for from had has have he her
    him his i if in into is it its me my no not of on or our she so than that the their
    them then there these they this those to too us was we were what which who whom will
    with would you your s t d ll m re ve
"""
STOP_WORDS = frozenset(_STOP_LIST.split())


def terms(text: str) -> list[str]:
    """The indexed terms of `text`: lower-cased alphanumeric runs that are not stop words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


class BM25:
    """An in-memory BM25 index over `docs`; `top(query, k)` ranks them for a query."""

    def __init__(self, docs: Sequence[str], *, k1: float = 1.5, b: float = 0.75) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
        counts = [Counter(terms(doc)) for doc in docs]
        lengths = [sum(c.values()) for c in counts]
        average = sum(lengths) / len(lengths) if lengths and any(lengths) else 1.0
        frequency = Counter(term for c in counts for term in c)
        n = len(docs)
        self._weights: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for index, (doc_terms, length) in enumerate(zip(counts, lengths, strict=True)):
            norm = k1 * (1 - b + b * length / average)
            for term, tf in doc_terms.items():
                idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
                self._weights[term].append((index, idf * tf * (k1 + 1) / (tf + norm)))

    def scores(self, query: str) -> dict[int, float]:
        """BM25 score of every document sharing a term with `query` (repeated terms add up)."""
        totals: dict[int, float] = defaultdict(float)
        for term in terms(query):
            for index, weight in self._weights.get(term, ()):
                totals[index] += weight
        return totals

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """The `k` best (doc index, score) pairs, score descending, lower index first on ties.

        Only documents sharing at least one term with the query are returned.
        """
        ranked = heapq.nsmallest(k, self.scores(query).items(), key=lambda p: (-p[1], p[0]))
        return [(index, score) for index, score in ranked]
