"""Builds the stages' collaborators (extractor, embedder, build and search settings)."""

from __future__ import annotations

from consolidation import supersede_at_build
from observations.builder import BuildConfig, GateConfig
from observations.embed import Embedder, LocalEmbedder, make_embedder
from observations.extract.base import Extractor
from observations.extract.heuristic import HeuristicExtractor
from ops.settings import Settings
from retrieval.search import SearchSettings
from retrieval.types import RetrievalWeights


def make_embedder_from(settings: Settings) -> Embedder:
    if settings.embedder == "local":
        return make_embedder(
            "local", threads=settings.embed_threads, batch_size=settings.embed_batch_size
        )
    if settings.embedder == "openai":
        return make_embedder(
            "openai",
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key,
            model=settings.embed_model,
            dim=settings.embed_dim,
            batch_size=settings.embed_batch_size,
        )
    return make_embedder("hash")


def make_extractor_from(settings: Settings) -> Extractor:
    heuristic = HeuristicExtractor()
    if settings.extractor == "heuristic" or settings.llm_base_url is None:  # see Settings
        return heuristic
    from observations.extract.llm import LLMExtractor

    return LLMExtractor(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        model=settings.llm_model,
        timeout=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
        response_format=settings.llm_response_format,
        fallback=heuristic,
    )


def load_model(embedder: Embedder, *, check_only: bool = False) -> None:
    """Load ``embedder``'s model now if it has one (the local model): a process that
    serves or builds calls it at start, so that a missing or damaged model file stops it
    there, and its first requests or builds do not wait for the model. ``check_only``
    verifies the files without loading them, for a process that starts others."""
    if not isinstance(embedder, LocalEmbedder):
        return
    if check_only:
        embedder.check()
    else:
        embedder.load()


def make_build_config(settings: Settings) -> BuildConfig:
    return BuildConfig(
        extractor=make_extractor_from(settings),
        embedder=make_embedder_from(settings),
        gates=GateConfig(min_confidence=settings.min_confidence),
        after_store=supersede_at_build,  # a newer fact ends the older one as it is built
    )


def make_search_settings(settings: Settings) -> SearchSettings:
    return SearchSettings(
        weights=RetrievalWeights(
            similarity=settings.rank_similarity,
            recency=settings.rank_recency,
            access=settings.rank_access,
            recency_tau_days=settings.rank_recency_tau_days,
            fresh_half_life_hours=settings.rank_fresh_half_life_hours,
            summary_bonus=settings.rank_summary_bonus,
        ),
        candidates=settings.search_candidates,
        exact_scope_cap=settings.search_exact_scope_cap,
    )
