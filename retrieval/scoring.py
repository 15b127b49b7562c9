"""Pure ranking: fuse the candidate lists, score each entry, rerank with dedupe and a threshold.

Everything here is deterministic: the final order is score descending, then entry id
ascending, so the result never depends on the order the candidates came in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import datetime

from observations.entry import SESSION_SUMMARY
from retrieval.periods import Period, dated_within
from retrieval.types import Candidate, RetrievalWeights, Scored

_WORD = re.compile(r"[^\W_]+")
_DAY = 86_400.0


def fuse(vector: Sequence[Candidate], text: Sequence[Candidate], *, k: int = 10) -> list[Candidate]:
    """Merge the vector and full-text lists (each best first) into one, by reciprocal rank.

    Ranks are the 1-based positions in each list (an entry repeated in a list keeps its
    first position). An entry in both lists gets both ranks and the vector copy's fields,
    similarity included; a text-only entry keeps its own similarity (None unless the text
    query computed one). The result is ordered by RRF (1/(k + rank) summed over the
    lists), then entry id; pass `k=weights.rrf_k` when that setting is changed.
    """
    by_vector, by_text = _first_ranks(vector), _first_ranks(text)
    # one copy per entry: the first in the vector list, else the first in the text list
    copies = {c.entry_id: c for c in [*reversed(text), *reversed(vector)]}
    fused = [
        c.ranked(by_vector.get(entry_id), by_text.get(entry_id)) for entry_id, c in copies.items()
    ]
    return sorted(fused, key=lambda c: (-_rrf(c, k), c.entry_id))


def _first_ranks(candidates: Sequence[Candidate]) -> dict[int, int]:
    ranks: dict[int, int] = {}
    for c in candidates:
        ranks.setdefault(c.entry_id, len(ranks) + 1)
    return ranks


def _rrf(c: Candidate, k: int) -> float:
    return sum(1.0 / (k + rank) for rank in (c.vector_rank, c.text_rank) if rank is not None)


def score(
    candidates: Iterable[Candidate],
    *,
    now: datetime,
    weights: RetrievalWeights,
    periods: Sequence[Period] = (),
) -> list[Scored]:
    """Score every candidate (see RetrievalWeights for the formula), best first; an entry
    dated within one of ``periods`` (the ones the query names) gets the period factor."""
    scored = [_score_one(c, now, weights, periods) for c in candidates]
    return sorted(scored, key=_order)


def _score_one(
    c: Candidate, now: datetime, w: RetrievalWeights, periods: Sequence[Period]
) -> Scored:
    age_days = max(0.0, (now - c.valid_from).total_seconds() / _DAY)
    parts = {
        "similarity": min(1.0, max(0.0, c.similarity or 0.0)),
        "recency": math.exp(-age_days / w.recency_tau_days),
        "access": min(1.0, math.log1p(c.access_count) / math.log1p(w.access_saturation)),
        "rrf": _rrf(c, w.rrf_k) * (w.rrf_k + 1) / 2,  # 1.0 = first in both lists
    }
    base = (
        w.similarity * parts["similarity"]
        + w.recency * parts["recency"]
        + w.access * parts["access"]
        + w.rrf * parts["rrf"]
    )
    factors = {
        "importance_factor": 1 - w.importance_weight + w.importance_weight * c.importance,
        "confidence_factor": 1 - w.confidence_weight + w.confidence_weight * c.confidence,
        "fresh_factor": 1 + w.fresh_boost * 0.5 ** (age_days * 24 / w.fresh_half_life_hours),
        "type_bonus": w.summary_bonus if c.kind == SESSION_SUMMARY else 1.0,
        "period_factor": 1 + w.period_boost if dated_within(c, periods) else 1.0,
    }
    total = base * math.prod(factors.values())
    explain = {"age_days": age_days, **parts, "base": base, **factors, "score": total}
    return Scored(c, total, explain)


def _order(s: Scored) -> tuple[float, int]:
    return (-s.score, s.candidate.entry_id)


def rerank(scored: Iterable[Scored], *, weights: RetrievalWeights, limit: int) -> list[Scored]:
    """The best `limit` items after near-duplicate removal, coverage dedupe and threshold.

    Walking the items best first:
    1. Near-duplicates: an item whose statement's token set has a Jaccard similarity
       ≥ `duplicate_threshold` with an item already kept is dropped.
    2. Coverage: an item whose source events were all shown by items kept above it (a
       session summary that restates them, or entries of the same turns) tells the reader
       nothing new; it is multiplied by `coverage_penalty` (explain: `coverage_penalty`,
       `covered_by`: the first kept item that showed its earliest event); everything kept
       is then re-sorted.
    3. Items scoring below `min_score` are dropped; the first `limit` are returned.
    The walk stops once `limit` unpenalized items above the threshold are kept: nothing
    later can overtake them. Entry ids must be unique (fuse guarantees it).
    """
    ordered = sorted(scored, key=_order)
    if len({s.candidate.entry_id for s in ordered}) != len(ordered):
        raise ValueError("rerank needs unique entry ids; fuse the candidate lists first")
    kept = _Kept(weights)
    for s in ordered:
        if kept.settled >= limit or s.score < weights.min_score:
            break
        kept.offer(s)
    ranked = sorted(kept.items, key=_order)
    return [s for s in ranked if s.score >= weights.min_score][: max(0, limit)]


def normalized_tokens(statement: str) -> frozenset[str]:
    """The lower-cased alphanumeric tokens of a statement, as a set."""
    return frozenset(_WORD.findall(statement.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 1.0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


class _Kept:
    """The items kept so far by rerank's walk, with what dedupe needs to know about them."""

    def __init__(self, weights: RetrievalWeights) -> None:
        self.weights = weights
        self.items: list[Scored] = []
        self.tokens: list[frozenset[str]] = []
        self.shown: dict[int, int] = {}  # source event id → the first kept item showing it
        self.settled = 0  # kept items no later item can overtake

    def offer(self, s: Scored) -> None:
        """Keep `s` unless it nearly repeats a kept item; penalize it if the items kept
        above it already showed all its source events."""
        tokens = normalized_tokens(s.candidate.statement)
        if self._repeats(tokens):
            return
        self.tokens.append(tokens)
        c = s.candidate
        events = c.source_event_ids
        covered = bool(events) and all(e in self.shown for e in events)
        for e in events:
            self.shown.setdefault(e, c.entry_id)
        if not covered:
            self.items.append(s)
            self.settled += 1
        else:
            total = s.score * self.weights.coverage_penalty
            why = {
                "coverage_penalty": self.weights.coverage_penalty,
                "covered_by": self.shown[min(events)],
            }
            self.items.append(Scored(c, total, {**s.explain, **why, "score": total}))

    def _repeats(self, tokens: frozenset[str]) -> bool:
        """Whether ``tokens`` nearly repeat a kept item's. A Jaccard similarity is at most
        the smaller set's size over the larger's: most pairs are settled by their sizes."""
        threshold = self.weights.duplicate_threshold
        n = len(tokens)
        return any(
            threshold * n <= len(other) and threshold * len(other) <= n
            and jaccard(tokens, other) >= threshold
            for other in self.tokens
        )  # fmt: skip
