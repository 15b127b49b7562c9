"""What search works on: the scope and filters of a query, candidates from the search lists,
scored items, and the settings and weights."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledger.scope import check_id

# A score's named components (see scoring.score) and, after reranking, what changed it.
Explain = Mapping[str, float | int]


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One memory entry found by the vector and/or the full-text search.

    `similarity` is the cosine similarity (0..1) when the entry came from the vector list;
    `vector_rank` and `text_rank` are its 1-based ranks in each list (None when absent).
    """

    entry_id: int
    kind: str
    owner_type: str
    owner_id: str
    key: str
    statement: str
    valid_from: datetime
    confidence: float
    importance: float
    valid_to: datetime | None = None
    status: str = "active"
    access_count: int = 0
    last_accessed_at: datetime | None = None
    source_session_id: int | None = None
    source_event_ids: tuple[int, ...] = ()
    source_external_ids: tuple[str, ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)
    recorded_at: datetime | None = None
    expired_at: datetime | None = None
    superseded_by: int | None = None
    similarity: float | None = None
    text_rank: int | None = None
    vector_rank: int | None = None

    def ranked(self, vector_rank: int | None, text_rank: int | None) -> Candidate:
        """This candidate with its ranks in the two lists, as ``dataclasses.replace`` makes
        it, in half the time (fusion copies every candidate of both lists)."""
        new = object.__new__(Candidate)
        for name in _UNRANKED_FIELDS:
            object.__setattr__(new, name, getattr(self, name))
        object.__setattr__(new, "vector_rank", vector_rank)
        object.__setattr__(new, "text_rank", text_rank)
        return new


_UNRANKED_FIELDS = tuple(n for n in Candidate.__slots__ if n not in ("vector_rank", "text_rank"))


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate with its score and the components that made it (`explain`)."""

    candidate: Candidate
    score: float
    explain: Explain


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalWeights:
    """Scoring and reranking settings.

    score = (similarity·sim + recency·exp(-age/τ) + access·acc + rrf·rrf_norm)
            × importance factor × confidence factor × fresh factor × summary bonus
            × period factor
    """

    # Weights of the base blend. Recency is 0.05: on LoCoMo conversations conv-26, conv-44
    # and conv-48, 0.2 gives 0.05 less recall@10 (0.702 against 0.752), since questions ask
    # about any time; a newer fact on the same key supersedes the older one anyway, so
    # recency is not what keeps memory current.
    similarity: float = 0.6
    recency: float = 0.05
    access: float = 0.2
    # Weight of reciprocal-rank fusion, normalized to 0..1 (1 = first in both lists); it is
    # what lets a full-text-only hit, which has no similarity, compete at all.
    rrf: float = 0.3
    # Time constant of the base recency decay exp(-age/τ) on valid_from.
    recency_tau_days: float = 30.0
    # Reranker freshness: × (1 + fresh_boost · 0.5^(age / half-life)); with a 72 h
    # half-life an item from the last few days gets up to 10 % more.
    fresh_half_life_hours: float = 72.0
    fresh_boost: float = 0.1
    # Access count at which the log-scaled access component log1p(n)/log1p(N) reaches 1.
    access_saturation: int = 100
    # Type bonus for session summaries.
    summary_bonus: float = 1.25
    # An entry said within, or about a day within, a period the query names ("in July",
    # "on 3 July 2023") scores × (1 + period_boost). On the LoCoMo development
    # conversations (52 of 464 questions name a period) 0.2 gives temporal recall@10
    # 0.835 against 0.816 without; 0.5 and 1.0 give 0.830.
    period_boost: float = 0.2
    # Importance and confidence scale the score by (1 - w) + w·value: at w = 0.3 a value
    # of 0 costs 30 % and a value of 1 costs nothing.
    importance_weight: float = 0.3
    confidence_weight: float = 0.3
    # RRF constant k: each list adds 1/(k + rank). Cormack et al. (2009) use 60 to fuse
    # long lists of documents; here the fused lists are 50 short statements each and the
    # first few ranks matter most: on the LoCoMo development conversations k = 10 gives
    # recall@10 0.786 against 0.767 at 60 (k = 5: 0.788, 20: 0.779).
    rrf_k: int = 10
    # Token-set Jaccard of normalized statements at or above which the lower-scored of two
    # entries is dropped as a near-duplicate.
    duplicate_threshold: float = 0.8
    # Multiplier for an entry whose source events all lie in a session summary ranked
    # above it (the summary already says it).
    coverage_penalty: float = 0.5
    # Scores below this are dropped after reranking (0 keeps everything).
    min_score: float = 0.05


@dataclass(frozen=True, slots=True)
class Scope:
    """Whose memory to search: a tenant (always), and optionally a user and/or an agent.

    With a user, the user's own entries and the summaries of sessions they took part in;
    with an agent, the agent's entries; with both, either; with neither, the whole tenant.
    """

    tenant_id: str
    user_id: str | None = None
    agent_id: str | None = None

    def __post_init__(self) -> None:
        check_id(self.tenant_id, "tenant_id")
        for name in ("user_id", "agent_id"):
            if getattr(self, name) is not None:
                check_id(getattr(self, name), name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    kinds: tuple[str, ...] = ()
    since: datetime | None = None  # valid_from at or after
    until: datetime | None = None  # valid_from before
    history: bool = False  # include superseded, merged and archived entries


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    candidates: int = 50  # per list, before fusion
    exact_scope_cap: int = 5000  # scopes up to this size are ranked exactly
    # Larger scopes too, up to where a filtered HNSW scan costs as much as the exact scan:
    # its cost per entry the filter rejects over the exact scan's cost per scope row
    # (measured on a 2-core machine at 1M entries, halfvec in the row: ≈ 9.5 µs / 2.7 µs;
    # the two paths cost the same near 13,500 entries).
    hnsw_cost_ratio: float = 3.5
    # Scopes up to this size get full-text matches over all their rows; under row-level
    # security each match reads the scope's rows, so larger ones rerank the vector
    # candidates by BM25 instead.
    text_scope_cap: int = 5000
    ef_search: int = 100
    text_scan: int = 2000  # matching rows ranked by BM25 per query
