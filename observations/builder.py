"""Builds a closed session into observations, entries, links and history — one transaction.

``build_session`` is idempotent: a session already built with the same build version is
left as it is. A new build version replaces the session's observations and updates its
entries in place, each change written to the entry history. A session locked by another
builder is skipped (``BuildOutcome.busy``), so no session is built twice at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from psycopg.types.json import Jsonb

from ledger.db import Conn, tenant_scope
from ledger.errors import MemledgerError, SessionNotFound
from ledger.sqlfile import load_queries
from observations.embed import Embedder, contextualize
from observations.extract.base import Extracted, Extractor, SessionEvent, SessionInput
from observations.gates import (
    DEFAULT_MAX_ITEMS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    apply_gates,
)

Q = load_queries("observations")
ACTOR = "builder"


class SessionNotClosed(MemledgerError):
    """The session is still open: close it (or wait for the idle sweep) before building."""


@dataclass(frozen=True, slots=True)
class GateConfig:
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    min_support: float = DEFAULT_MIN_SUPPORT
    max_items: int | None = DEFAULT_MAX_ITEMS


@dataclass(frozen=True, slots=True)
class BuildConfig:
    extractor: Extractor
    embedder: Embedder
    gates: GateConfig = field(default_factory=GateConfig)

    @property
    def build_version(self) -> str:
        return f"{self.extractor.name}-{self.extractor.version}+{self.embedder.model}"


@dataclass(frozen=True, slots=True)
class BuildOutcome:
    status: Literal["built", "unchanged", "busy"]
    session_id: int
    entries: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    fallback_reason: str | None = None


def build_session(
    conn: Conn, tenant_id: str, session_id: int, config: BuildConfig, *, now: datetime
) -> BuildOutcome:
    """Extract, gate, embed and store one closed session; mark it built."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "session_id": session_id}
        row = conn.execute(Q["lock_session"], params).fetchone()
        if row is None:
            if conn.execute(Q["session_exists"], params).fetchone() is None:
                raise SessionNotFound(tenant_id=tenant_id, session_id=session_id)
            return BuildOutcome("busy", session_id)
        if row["status"] == "open":
            raise SessionNotClosed(tenant_id=tenant_id, session_id=session_id)
        if row["status"] == "built" and row["build_version"] == config.build_version:
            return BuildOutcome("unchanged", session_id)
        return _build(conn, row, config, now)


def _build(conn: Conn, row: dict[str, Any], config: BuildConfig, now: datetime) -> BuildOutcome:
    tenant_id, session_id = row["tenant_id"], row["id"]
    events = conn.execute(
        Q["session_events"], {"tenant_id": tenant_id, "session_id": session_id}
    ).fetchall()
    session = _session_input(row, events)
    extraction = config.extractor.extract(session)
    g = config.gates
    gated = apply_gates(
        extraction,
        session,
        min_confidence=g.min_confidence,
        min_support=g.min_support,
        max_items=g.max_items,
    )
    vectors = config.embedder.embed([_embed_text(item, session) for item in gated.items])
    external = {e["id"]: e["external_id"] for e in events}
    base = {"tenant_id": tenant_id, "session_id": session_id, "now": now}
    conn.execute(Q["delete_observations"], base)
    entries = _store_items(conn, base, gated.items, vectors, external, config, extraction)
    stats = {
        "extractor": extraction.extractor,
        "extractor_version": extraction.version,
        "items": len(gated.items),
        "dropped": gated.dropped,
    }
    conn.execute(
        Q["mark_built"],
        {
            **base,
            "build_version": config.build_version,
            "fallback_reason": extraction.fallback_reason,
            "stats": Jsonb(stats),
        },
    )
    return BuildOutcome(
        "built", session_id, entries, dict(gated.dropped), extraction.fallback_reason
    )


def _session_input(row: dict[str, Any], events: Sequence[dict[str, Any]]) -> SessionInput:
    return SessionInput(
        tenant_id=row["tenant_id"],
        session_id=row["id"],
        channel_id=row["channel_id"],
        started_at=row["started_at"],
        ended_at=row["ended_at"] or row["last_event_at"],
        events=tuple(
            SessionEvent(
                e["id"],
                e["seq"],
                e["role"],
                e["actor_id"],
                e["actor_name"],
                e["content"],
                e["occurred_at"],
                e["metadata"],
            )
            for e in events
        ),
    )


def _embed_text(item: Extracted, session: SessionInput) -> str:
    names = {e.actor_id: e.speaker for e in session.events}
    return contextualize(
        item.statement,
        owner=names.get(item.owner_id, item.owner_id),
        when=item.valid_from.date(),
        kind=item.kind,
        topic=item.fields.get("topic"),
    )


def _store_items(
    conn: Conn,
    base: dict[str, Any],
    items: Sequence[Extracted],
    vectors: Any,
    external: dict[int, str],
    config: BuildConfig,
    extraction: Any,
) -> int:
    """Observations, entries (insert or update by owner+key), links and history."""
    previous = {
        (r["owner_type"], r["owner_id"], r["key"]): r
        for r in conn.execute(Q["session_entries"], base).fetchall()
    }
    for item, vector in zip(items, vectors, strict=True):
        obs_id = _insert_observation(conn, base, item, config, extraction)
        values = _entry_values(base, item, vector, external, config)
        old = previous.pop((item.owner_type, item.owner_id, item.key), None)
        entry_id = _upsert_entry(conn, base, values, old)
        conn.execute(
            Q["insert_link"],
            {
                **base,
                "src_type": "observation",
                "src_id": obs_id,
                "relation": "extracted_as",
                "dst_type": "entry",
                "dst_id": str(entry_id),
            },
        )
    for old in previous.values():  # the new build no longer extracts these
        conn.execute(Q["delete_entry"], {**base, "id": old["id"]})
        _history(
            conn,
            base,
            old["id"],
            "DELETE",
            old["canonical_statement"],
            None,
            old["status"],
            "deleted",
            "no longer extracted by " + config.build_version,
        )
    return len(items)


def _insert_observation(
    conn: Conn, base: dict[str, Any], item: Extracted, config: BuildConfig, extraction: Any
) -> int:
    row = conn.execute(
        Q["insert_observation"],
        {
            **base,
            "build_version": config.build_version,
            "owner_type": item.owner_type,
            "owner_id": item.owner_id,
            "key": item.key,
            "kind": item.kind,
            "extractor": extraction.extractor,
            "extractor_version": extraction.version,
            "statement": item.statement,
            "confidence": item.confidence,
            "importance": item.importance,
            "fields": Jsonb(dict(item.fields)),
            "source_event_ids": list(item.source_event_ids),
        },
    ).fetchone()
    assert row is not None
    return int(row["id"])


def _entry_values(
    base: dict[str, Any],
    item: Extracted,
    vector: Any,
    external: dict[int, str],
    config: BuildConfig,
) -> dict[str, Any]:
    return {
        **base,
        "owner_type": item.owner_type,
        "owner_id": item.owner_id,
        "kind": item.kind,
        "key": item.key,
        "statement": item.statement,
        "fields": Jsonb(dict(item.fields)),
        "embedding": vector,
        "embedding_model": config.embedder.model,
        "confidence": item.confidence,
        "importance": item.importance,
        "valid_from": item.valid_from,
        "source_event_ids": list(item.source_event_ids),
        "source_external_ids": [external[i] for i in item.source_event_ids],
    }


def _upsert_entry(
    conn: Conn, base: dict[str, Any], values: dict[str, Any], old: dict[str, Any] | None
) -> int:
    if old is None:
        row = conn.execute(Q["insert_entry"], values).fetchone()
        assert row is not None
        _history(
            conn, base, row["id"], "ADD", None, values["statement"], None, "active", "extracted"
        )
        return int(row["id"])
    conn.execute(Q["update_entry"], {**values, "id": old["id"]})
    if old["canonical_statement"] != values["statement"]:
        _history(
            conn,
            base,
            old["id"],
            "UPDATE",
            old["canonical_statement"],
            values["statement"],
            old["status"],
            old["status"],
            "rebuilt",
        )
    return int(old["id"])


def _history(
    conn: Conn,
    base: dict[str, Any],
    entry_id: int,
    action: str,
    old: str | None,
    new: str | None,
    old_status: str | None,
    new_status: str | None,
    reason: str,
) -> None:
    conn.execute(
        Q["insert_history"],
        {
            **base,
            "entry_id": entry_id,
            "action": action,
            "old_statement": old,
            "new_statement": new,
            "old_status": old_status,
            "new_status": new_status,
            "actor": ACTOR,
            "reason": reason,
        },
    )


def record_failure(
    conn: Conn,
    tenant_id: str,
    session_id: int,
    error: str,
    *,
    now: datetime,
    backoff: timedelta,
) -> int | None:
    """Mark a build failed with its reason; the next attempt waits ``backoff`` × 2^attempts."""
    with tenant_scope(conn, tenant_id):
        row = conn.execute(
            Q["mark_failed"],
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "error": error[:2000],
                "now": now,
                "backoff": backoff,
            },
        ).fetchone()
    return None if row is None else int(row["build_attempts"])


def sessions_to_build(
    conn: Conn, *, now: datetime, max_attempts: int = 5, limit: int = 1000
) -> list[tuple[str, int]]:
    """Sessions waiting for a build, across tenants (runs as the owner role)."""
    rows = conn.execute(
        Q["sessions_to_build"], {"now": now, "max_attempts": max_attempts, "limit": limit}
    ).fetchall()
    return [(r["tenant_id"], r["id"]) for r in rows]


def waiting_builds(conn: Conn) -> int:
    """How many closed sessions wait for a build, across tenants."""
    row = conn.execute(Q["count_waiting_builds"]).fetchone()
    return int(row["n"]) if row else 0


def list_entries(
    conn: Conn,
    tenant_id: str,
    *,
    owner_id: str | None = None,
    kind: str | None = None,
    limit: int = 1000,
) -> list[dict[str, Any]]:
    """Active entries of a tenant in event-time order."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "owner_id": owner_id, "kind": kind, "limit": limit}
        return conn.execute(Q["list_entries"], params).fetchall()


def load_session_input(conn: Conn, tenant_id: str, session_id: int) -> SessionInput:
    """A stored session as an extractor sees it."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "session_id": session_id}
        row = conn.execute(Q["session_exists_row"], params).fetchone()
        if row is None:
            raise SessionNotFound(tenant_id=tenant_id, session_id=session_id)
        return _session_input(row, conn.execute(Q["session_events"], params).fetchall())
