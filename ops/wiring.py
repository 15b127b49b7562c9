"""The composition root: settings → the embedded or configured services → the schema →
a connection, and every stage's collaborators built from the settings (extractor,
embedder, build, search and consolidation settings). The API, the workers and the CLI get
what they run on from here and nowhere else."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psutil
import structlog

from consolidation import ConsolidationConfig, RetentionPolicy, Walk, supersede_at_build
from consolidation.digest import DigestPolicy
from consolidation.ledger_jobs import Enqueue
from consolidation.owner_indexes import OwnerIndexPolicy
from ledger.db import Conn, apply_schema, connect
from materializers.skills import SkillPolicy
from observations.builder import BuildConfig, GateConfig
from observations.embed import (
    Embedder,
    HashEmbedder,
    LocalEmbedder,
    make_embedder,
    with_query_cache,
)
from observations.embed_hash import hash_embedder_named
from observations.embed_local import LOCAL_MODELS
from observations.embed_models import Embedders, record_read_model
from observations.extract.base import Extractor
from observations.extract.heuristic import HeuristicExtractor
from ops.embedded_postgres import MemorySettings, memory_for
from ops.services import ServiceUrls, running_services
from ops.settings import Settings
from retrieval.search import SearchSettings
from retrieval.types import RetrievalWeights

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    urls: ServiceUrls
    conn: Conn  # autocommit: each library call's transaction commits on its own


@contextmanager
def services(settings: Settings, *, redis: bool = True) -> Iterator[ServiceUrls]:
    """The configured servers, or the home's embedded ones started with the tuning below
    (without Redis when ``redis`` is false)."""
    with running_services(
        settings.home, settings.database_url, settings.redis_url, redis=redis,
        postgres_options=server_options(settings),
    ) as urls:  # fmt: skip
        yield urls


def server_memory(settings: Settings, total_bytes: int | None = None) -> MemorySettings:
    """The memory settings for this machine (``total_bytes``, by default its memory),
    each replaced by its ``MEMLEDGER_PG_*`` setting where one is set."""
    total = psutil.virtual_memory().total if total_bytes is None else total_bytes
    computed = memory_for(total)
    return MemorySettings(
        shared_buffers=settings.pg_shared_buffers or computed.shared_buffers,
        effective_cache_size=settings.pg_effective_cache_size or computed.effective_cache_size,
        work_mem=settings.pg_work_mem or computed.work_mem,
        maintenance_work_mem=settings.pg_maintenance_work_mem or computed.maintenance_work_mem,
    )


def server_options(settings: Settings) -> list[str]:
    """The tuning options of the postgres command line: the memory settings, and
    ``pg_prewarm`` preloaded (unless ``MEMLEDGER_PG_PREWARM`` is off) so that its
    autoprewarm worker records which pages are in shared buffers (at shutdown and every
    5 minutes, in ``autoprewarm.blocks``) and reads them back in after the next start."""
    options = server_memory(settings).options()
    if settings.pg_prewarm:
        options += ["-c", "shared_preload_libraries=pg_prewarm"]
    return options


@contextmanager
def open_runtime(settings: Settings, *, init_schema: bool = True) -> Iterator[Runtime]:
    """Start or reach the services, apply the schema (and record the configured embedding
    model as the one reads use, on a database that stores no vector yet), and hold one
    connection."""
    with services(settings) as urls, connect(urls.database_url, autocommit=True) as conn:
        if init_schema:
            apply_schema(conn)
            configured = configured_model(settings)
            reads = record_read_model(conn, configured, now=wall_clock())
            if reads != configured:
                log.warning(
                    "embedding_model_differs",
                    configured=configured,
                    reads=reads,
                    hint=f"memledger reembed --model {configured} switches the database",
                )
        yield Runtime(settings, urls, conn)


def one_blas_thread() -> None:
    """Run numpy's BLAS on one thread in this process. Each memledger process has its own
    parallelism (builder threads, model runs, server processes), and BLAS threads that
    spin between the extractor's small matrix products took CPU from the model runs: a
    LoCoMo session's build cost 380 ms of CPU with two builders instead of 280. Every
    entrypoint calls it first."""
    import numpy  # noqa: F401  (loads the BLAS library, so that the limit reaches it)
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def read_concurrency(settings: Settings) -> int:
    """How many context and search requests one API process computes at once. With the
    local embedder a request is CPU work throughout: about one per core. Another embedder
    waits on the network for each query, so requests overlap as in any worker thread."""
    if settings.api_read_concurrency is not None:
        return settings.api_read_concurrency
    if settings.embedder != "local":
        return 40  # the worker threads a process has for its requests
    return max(1, (os.cpu_count() or 1) // settings.api_processes)


def wall_clock() -> datetime:
    """The current time: read only by entrypoints, passed to the library as ``now``."""
    return datetime.now(UTC)


def make_embedder_from(settings: Settings, *, runs: int | None = None) -> Embedder:
    """The configured embedder, able to build the embedder of another model the database
    may read (see :mod:`observations.embed_models`); a local model runs at most ``runs``
    texts at once (default: half the cores, leaving the others to requests)."""
    configured = embedder_named(settings, configured_model(settings), runs=runs)
    assert configured is not None  # every configurable model has its embedder
    return Embedders(configured, lambda model: embedder_named(settings, model, runs=runs))


def configured_model(settings: Settings) -> str:
    """The name of the configured embedder's model."""
    if settings.embedder == "local":
        return settings.embed_local_model
    if settings.embedder == "openai":
        return settings.embed_model
    return HashEmbedder().model


def embedder_named(settings: Settings, model: str, *, runs: int | None = None) -> Embedder | None:
    """The embedder of ``model`` with these settings: either local build, the hash
    embedder at any width, the configured OpenAI-compatible model; else ``None``."""
    if model in LOCAL_MODELS:
        return make_embedder(
            "local",
            model=model,
            threads=settings.embed_threads,
            batch_size=settings.embed_batch_size,
            runs=runs,
            cache_dir=settings.home / "models",
        )
    if (hashed := hash_embedder_named(model)) is not None:
        return hashed
    if settings.embedder == "openai" and model == settings.embed_model:
        return make_embedder(
            "openai",
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key,
            model=settings.embed_model,
            dim=settings.embed_dim,
            batch_size=settings.embed_batch_size,
        )
    return None


def query_embedder_from(settings: Settings, embedder: Embedder) -> Embedder:
    """``embedder`` for a server's queries: its query vectors cached (at most
    ``embed_query_cache_size``; 0: none), what else it embeds passed straight through."""
    return with_query_cache(embedder, settings.embed_query_cache_size)


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
    model = embedder.configured if isinstance(embedder, Embedders) else embedder
    if not isinstance(model, LocalEmbedder):
        return
    if check_only:
        model.check()
    else:
        model.load()


# how often a builder thread running Python hands the interpreter lock to one waiting
BUILD_SWITCH_INTERVAL_SECONDS = 0.001


def switch_for_builders() -> None:
    """Switch this process's threads every millisecond instead of Python's 5; called where
    builder threads start. A builder needs the interpreter lock between two model runs (one
    per text) while another runs the extractor's Python, and with 5 ms two builders kept 2
    cores 83–91 % busy. `bench build --locomo`, two builders, three pairs of runs in turn:
    9.5–10.1 sessions/s with 5 ms, 10.0–10.4 with 1 ms. (The API's processes keep 5 ms:
    1 ms cost them ≈ 0.2 ms of CPU a bundle.)"""
    sys.setswitchinterval(BUILD_SWITCH_INTERVAL_SECONDS)


def make_build_config(settings: Settings) -> BuildConfig:
    """What builds run with. Their embedder runs as many texts at once as the machine has
    cores: builds are background work (the server's build process is scheduled as idle),
    and a build thread embedding waits for no other."""
    return BuildConfig(
        extractor=make_extractor_from(settings),
        embedder=make_embedder_from(settings, runs=os.cpu_count() or 1),
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


def consolidation_config(
    settings: Settings, enqueue: Enqueue | None, *, embedder: Embedder | None = None
) -> ConsolidationConfig:
    """The jobs' configuration; ``embedder`` (for the digests' vectors): the caller's, when
    its process has one already (a second would load the model again), else a new one."""
    s = settings
    return ConsolidationConfig(
        policy=RetentionPolicy(
            decay_after_days=s.decay_after_days,
            min_accesses=s.decay_min_accesses,
            half_life_days=s.decay_half_life_days,
            threshold=s.decay_threshold,
            max_active_per_owner=s.max_active_entries,
        ),
        merge_threshold=s.merge_threshold,
        retention_days=s.retention_days,
        session_gap=s.session_gap,
        requeue_after=timedelta(seconds=s.sweep_requeue_after_seconds),
        max_build_attempts=s.build_max_attempts,
        walk=Walk(
            page_owners=s.consolidation_page_owners,
            lock_timeout=timedelta(seconds=s.consolidation_lock_timeout_seconds),
        ),
        enqueue=enqueue,
        skills=make_skill_policy(s),
        digest=DigestPolicy(threshold=s.digest_threshold, size=s.digest_size),
        embedder=make_embedder_from(s) if embedder is None else embedder,
        owner_indexes=make_owner_index_policy(s),
    )


def make_owner_index_policy(settings: Settings) -> OwnerIndexPolicy:
    return OwnerIndexPolicy(
        min_entries=settings.owner_index_min_entries, max_indexes=settings.owner_index_max
    )


def make_skill_policy(settings: Settings) -> SkillPolicy:
    return SkillPolicy(auto_publish_after=settings.skill_auto_publish_after)
