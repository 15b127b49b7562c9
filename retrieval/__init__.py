"""Retrieval: candidates fused and scored, reranked, and packed into a context bundle."""

from retrieval.bm25 import BM25
from retrieval.bundle import DEFAULT_SHARES, SECTIONS, ContextBundle, pack, render_text, to_json
from retrieval.items import (
    MemoryItem,
    ProfileItem,
    Provenance,
    RecentMessage,
    SkillItem,
    SummaryItem,
    render_item,
)
from retrieval.scoring import fuse, rerank, score
from retrieval.tokens import TokenCounter, approx_count, wordpiece_counter
from retrieval.types import Candidate, Explain, RetrievalWeights, Scored

__all__ = [
    "BM25",
    "DEFAULT_SHARES",
    "SECTIONS",
    "Candidate",
    "ContextBundle",
    "Explain",
    "MemoryItem",
    "ProfileItem",
    "Provenance",
    "RecentMessage",
    "RetrievalWeights",
    "Scored",
    "SkillItem",
    "SummaryItem",
    "TokenCounter",
    "approx_count",
    "fuse",
    "pack",
    "render_item",
    "render_text",
    "rerank",
    "score",
    "to_json",
    "wordpiece_counter",
]
