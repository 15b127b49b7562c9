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


# Lower-cases ASCII letters and turns every other ASCII byte that is not a letter or digit
# into a space: on ASCII text, splitting the result on whitespace gives exactly the runs
# `_TOKEN` finds in the lower-cased text.
_ASCII_TERMS = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 else 32 for c in range(256)
)
_STOP_BYTES = frozenset(w.encode() for w in STOP_WORDS)


def rank(
    docs: Sequence[str], query: str, k: int, *, k1: float = 1.5, b: float = 0.75
) -> list[tuple[int, float]]:
    """``BM25(docs, k1=k1, b=b).top(query, k)``, computed for the query's terms only.

    The same scores to the last bit (same formula, same order of additions) and the same
    order, several times faster on a set of statements ranked once: no index of the terms
    the query does not have, and ASCII documents split without a regular expression.
    """
    if k1 < 0 or not 0 <= b <= 1:
        raise ValueError("BM25 needs k1 >= 0 and 0 <= b <= 1")
    query_terms = terms(query)
    wanted = {t.encode() for t in query_terms}
    lengths: list[int] = []
    found: list[dict[bytes, int]] = []
    for doc in docs:
        tokens = _doc_terms(doc)
        lengths.append(len(tokens))
        tf: dict[bytes, int] = {}
        for t in tokens:
            if t in wanted:
                tf[t] = tf.get(t, 0) + 1
        found.append(tf)
    average = sum(lengths) / len(lengths) if lengths and any(lengths) else 1.0
    norms = [k1 * (1 - b + b * length / average) for length in lengths]
    n = len(docs)
    frequency = {t: sum(1 for tf in found if t in tf) for t in wanted}
    totals: dict[int, float] = defaultdict(float)
    weights: dict[bytes, list[tuple[int, float]]] = {}
    for term in (t.encode() for t in query_terms):
        if term not in weights:
            idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
            weights[term] = [
                (i, idf * tf[term] * (k1 + 1) / (tf[term] + norms[i]))
                for i, tf in enumerate(found)
                if term in tf
            ]
        for index, weight in weights[term]:
            totals[index] += weight
    ranked = heapq.nsmallest(k, totals.items(), key=lambda p: (-p[1], p[0]))
    return [(index, score) for index, score in ranked]


def _doc_terms(doc: str) -> list[bytes]:
    if doc.isascii():
        return [t for t in doc.encode().translate(_ASCII_TERMS).split() if t not in _STOP_BYTES]
    return [t.encode() for t in terms(doc)]
