"""Builds a closed session into observations, entries, links and history, written in one
transaction (the extraction before it runs outside any).

``build_session`` is idempotent: a session already built with the same build version is
left as it is. A new build version replaces the session's observations and updates its
entries in place, each change written to the entry history. Entries someone edited or
deleted (through the API) are left as they are: a rebuild neither rewrites nor revives
them. Entries merged into, or superseded by, an entry the rebuild deletes get back the
status they had (their own sessions still say them). A session another builder is building
is skipped (``BuildOutcome.busy``), so no session is built twice at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from typing import Any, Literal, Protocol

import psycopg
from psycopg.types.json import Jsonb

from ledger.db import Conn, announce_entry_changes, pg_array, tenant_scope
from ledger.errors import Conflict, SessionNotFound
from ledger.sqlfile import load_queries
from observations.embed import Embedder, entry_text
from observations.embed_models import reading_embedder, writing_embedder
from observations.entry import PROFILE_KINDS
from observations.extract.base import (
    Extracted,
    Extraction,
    Extractor,
    KnownBelief,
    KnownDay,
    KnownName,
    SessionEvent,
    SessionInput,
)
from observations.gates import (
    DEFAULT_MAX_ITEMS,
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_MIN_SUPPORT,
    apply_gates,
)
from observations.history import HistoryRow, write_history

Q = load_queries("observations")
ACTOR = "builder"
# An event metadata key: an object given to the memories built from such events alone.
MEMORY_METADATA = "memory_metadata"


class SessionNotClosed(Conflict):
    """The session is still open: close it (or wait for the idle sweep) before building."""


@dataclass(frozen=True, slots=True)
class GateConfig:
    min_confidence: float = DEFAULT_MIN_CONFIDENCE
    min_support: float = DEFAULT_MIN_SUPPORT
    max_items: int | None = DEFAULT_MAX_ITEMS


class AfterStore(Protocol):
    """Called in the build's transaction once its entries are written, with the (owner
    type, owner id, key) of every item built — e.g. consolidation's supersede at build
    time (wired by ``ops``: observations does not import consolidation)."""

    def __call__(
        self, conn: Conn, tenant_id: str, items: Sequence[tuple[str, str, str]], *, now: datetime
    ) -> Any: ...


@dataclass(frozen=True, slots=True)
class BuildConfig:
    extractor: Extractor
    embedder: Embedder
    gates: GateConfig = field(default_factory=GateConfig)
    after_store: AfterStore | None = None

    @property
    def build_version(self) -> str:
        return f"{self.extractor.name}-{self.extractor.version}+{self.embedder.model}"


@dataclass(frozen=True, slots=True)
class BuildOutcome:
    # busy: another builder has the session; waiting: an earlier session of its channel
    # is queued to build first
    status: Literal["built", "unchanged", "busy", "waiting", "failed"]
    session_id: int
    entries: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    fallback_reason: str | None = None
    error: str | None = None  # failed: the reason recorded on the session
    attempts: int | None = None  # failed: the session's failed attempts so far


def build_session(
    conn: Conn,
    tenant_id: str,
    session_id: int,
    config: BuildConfig,
    *,
    now: datetime,
    in_order: bool = True,
) -> BuildOutcome:
    """Extract, gate, embed and store one closed session; mark it built.

    The session is read in one transaction and its entries written in another; extraction
    and embedding (an LLM call may take minutes) run between them, holding no lock and
    no transaction open. A session-level advisory lock keeps a second builder of the same
    session out meanwhile: it gets ``busy``. With ``in_order``, a session whose channel has
    an earlier session handed to the build queue and not built yet gets ``waiting``: a
    channel's sessions are built in order, each counting from the days the ones before it
    said ("two days before the wedding"). (Called inside a caller's transaction, the two
    become savepoints of it.)"""
    key = {"tenant_id": tenant_id, "session_id": session_id}
    with tenant_scope(conn, tenant_id):
        row = conn.execute(Q["session_exists_row"], key).fetchone()
        if row is None:
            raise SessionNotFound(tenant_id=tenant_id, session_id=session_id)
        if row["status"] == "open":
            raise SessionNotClosed(tenant_id=tenant_id, session_id=session_id)
        if (
            in_order
            and conn.execute(Q["earlier_build_queued"], {**key, **_channel_start(row)}).fetchone()
        ):
            return BuildOutcome("waiting", session_id)
        claim = conn.execute(Q["claim_build"], key).fetchone()
        if not (claim and claim["claimed"]):
            return BuildOutcome("busy", session_id)
    try:
        return _build(conn, row, config, now)
    finally:
        if conn.info.transaction_status != psycopg.pq.TransactionStatus.INERROR:
            with conn.transaction():
                conn.execute(Q["release_build"], key)


def _build(conn: Conn, row: dict[str, Any], config: BuildConfig, now: datetime) -> BuildOutcome:
    tenant_id, session_id = row["tenant_id"], row["id"]
    key = {"tenant_id": tenant_id, "session_id": session_id}
    embedders = config.embedder  # the configured one, which builds the others
    with tenant_scope(conn, tenant_id):
        config = replace(config, embedder=reading_embedder(conn, embedders))
        if row["status"] == "built" and row["build_version"] == config.build_version:
            return BuildOutcome("unchanged", session_id)
        events = conn.execute(Q["session_input_events"], key).fetchall()
        known, names = _earlier(conn, row)
        reads = getattr(config.extractor, "reads_beliefs", False)
        beliefs = _beliefs(conn, row, events) if reads else []
    session = _session_input(row, events, known, names, beliefs)
    extraction = config.extractor.extract(session)
    g = config.gates
    gated = apply_gates(
        extraction,
        session,
        min_confidence=g.min_confidence,
        min_support=g.min_support,
        max_items=g.max_items,
    )
    items = _stamped(gated.items, session)
    vectors = _embedded(config.embedder, items)
    with tenant_scope(conn, tenant_id):
        locked = conn.execute(Q["lock_session"], key).fetchone()
        if locked is None:  # held by a writer that is not a builder (retention, an edit)
            return BuildOutcome("busy", session_id)
        # the model the database reads, held until this build commits (no switch meanwhile)
        writing = writing_embedder(conn, embedders)
        if writing.model != config.embedder.model:  # a re-embed switched models meanwhile
            config = replace(config, embedder=writing)
            vectors = _embedded(writing, items)
        if locked["status"] == "built" and locked["build_version"] == config.build_version:
            return BuildOutcome("unchanged", session_id)
        return _write(conn, locked, config, now, events, extraction, gated.dropped, items, vectors)


def _embedded(embedder: Embedder, items: Sequence[Extracted]) -> Any:
    texts = [
        entry_text(i.statement, model=embedder.model, owner_id=i.owner_id,
                   valid_from=i.valid_from, kind=i.kind, fields=i.fields)
        for i in items
    ]  # fmt: skip
    vectors = embedder.embed(texts)
    if len(vectors) != len(texts):
        raise ValueError(f"embedder returned {len(vectors)} vectors for {len(texts)} texts")
    return vectors


def _write(
    conn: Conn,
    row: dict[str, Any],
    config: BuildConfig,
    now: datetime,
    events: Sequence[dict[str, Any]],
    extraction: Extraction,
    dropped: Mapping[str, int],
    items: list[Extracted],
    vectors: Any,
) -> BuildOutcome:
    tenant_id, session_id = row["tenant_id"], row["id"]
    by_id = {e["id"]: e for e in events}
    base = {"tenant_id": tenant_id, "session_id": session_id, "now": now}
    announce_entry_changes(conn)
    conn.execute(Q["delete_observations"], base)
    entries, revived = _store_items(conn, base, items, vectors, by_id, config, extraction)
    if config.after_store is not None:
        config.after_store(conn, tenant_id, [*map(_ident, items), *revived], now=now)
    stats = {
        "extractor": extraction.extractor,
        "extractor_version": extraction.version,
        "items": len(items),
        "dropped": dropped,
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
    return BuildOutcome("built", session_id, entries, dict(dropped), extraction.fallback_reason)


def _earlier(conn: Conn, row: dict[str, Any]) -> tuple[list[KnownDay], list[KnownName]]:
    """What the channel's earlier sessions left: the days they tied words to, oldest
    first, and the relations named by their given name as of the latest that named any;
    never another channel's, which this one's members may not have seen."""
    params = {"tenant_id": row["tenant_id"], **_channel_start(row)}
    days: list[KnownDay] = []
    names: list[KnownName] = []
    for r in conn.execute(Q["earlier_summaries"], params):
        days += [KnownDay(word, date.fromisoformat(day)) for word, day in (r["days"] or {}).items()]
        names = [KnownName(*n) for n in r["names"]] if r["names"] else names
    return days, names


def _beliefs(
    conn: Conn, row: dict[str, Any], events: Sequence[dict[str, Any]]
) -> list[KnownBelief]:
    """What memory holds as current about the session's users (``current_beliefs``)."""
    users = sorted({e["actor_id"] for e in events if e["role"] == "user"})
    params = {
        "tenant_id": row["tenant_id"],
        "session_id": row["id"],
        "owner_ids": users,
        "kinds": sorted(PROFILE_KINDS),
        **_channel_start(row),
    }
    return [KnownBelief(**r) for r in conn.execute(Q["current_beliefs"], params)]


def _channel_start(row: dict[str, Any]) -> dict[str, Any]:
    return {"channel_id": row["channel_id"], "started_at": row["started_at"]}


def _session_input(
    row: dict[str, Any],
    events: Sequence[dict[str, Any]],
    known: Sequence[KnownDay] = (),
    names: Sequence[KnownName] = (),
    beliefs: Sequence[KnownBelief] = (),
) -> SessionInput:
    """The session as extractors see it: every time at the offset its event was sent with
    (the session's start and end at their first and last event's), with the days, the
    names and the members' facts memory holds from before it (``known``, ``names``,
    ``beliefs``)."""
    offsets = [e["utc_offset_minutes"] for e in events] or [0]
    return SessionInput(
        tenant_id=row["tenant_id"],
        session_id=row["id"],
        channel_id=row["channel_id"],
        started_at=_local(row["started_at"], offsets[0]),
        ended_at=_local(row["ended_at"] or row["last_event_at"], offsets[-1]),
        events=tuple(
            SessionEvent(
                e["id"],
                e["seq"],
                e["role"],
                e["actor_id"],
                e["actor_name"],
                e["content"],
                _local(e["occurred_at"], e["utc_offset_minutes"]),
                e["metadata"],
            )
            for e in events
        ),
        known_days=tuple(known),
        known_names=tuple(names),
        known_beliefs=tuple(beliefs),
    )


def _stamped(items: Sequence[Extracted], session: SessionInput) -> list[Extracted]:
    """Each item's fields name the authors of its source events (``source_actor_ids``:
    deleting a user's memory takes what was built from their words too, whoever owns it)
    and its session (``origin_session_id``: what a skill's evidence counts, still there
    once retention has deleted the session and cleared ``source_session_id``), and its
    owner's display name (``owner_name``: an edit embeds the entry the same way). An item
    whose source events all carry the same ``memory_metadata`` object gets it as its
    ``metadata`` (what a Mem0 ``add`` attaches to the memories it makes)."""
    authors = {e.id: e.actor_id for e in session.events}
    names = {e.actor_id: e.speaker for e in session.events}
    attached = {e.id: e.metadata.get(MEMORY_METADATA) for e in session.events}
    stamped = []
    for i in items:
        fields = {
            **i.fields,
            "source_actor_ids": sorted({authors[e] for e in i.source_event_ids}),
            "origin_session_id": session.session_id,
            "owner_name": names.get(i.owner_id, i.owner_id),
        }
        shared = [attached[e] for e in i.source_event_ids]
        if shared and isinstance(shared[0], dict) and all(m == shared[0] for m in shared):
            fields["metadata"] = shared[0]
        stamped.append(replace(i, fields=fields))
    return stamped


def _local(at: datetime, offset_minutes: int) -> datetime:
    """The instant at the offset it was sent with: "yesterday" said at 21:30 in
    Los Angeles is the day before the local date, whatever the UTC date."""
    return at.astimezone(timezone(timedelta(minutes=offset_minutes))) if offset_minutes else at


def _store_items(
    conn: Conn,
    base: dict[str, Any],
    items: Sequence[Extracted],
    vectors: Any,
    events: dict[int, dict[str, Any]],
    config: BuildConfig,
    extraction: Any,
) -> tuple[int, list[tuple[str, str, str]]]:
    """Observations, entries (inserted, or updated in place by owner+key), lineage links and
    history — a handful of set-based statements whatever the number of items. Returns the
    number of items, and the owner and key of each entry revived (see revive_displaced)."""
    rows = conn.execute(Q["session_entries"], base).fetchall()
    curated = {(r["owner_type"], r["owner_id"], r["key"]): r["id"] for r in rows if r["curated"]}
    previous = {(r["owner_type"], r["owner_id"], r["key"]): r for r in rows if not r["curated"]}
    observations = _insert_observations(conn, base, items, config, extraction)
    columns = {**base, "embedding_model": config.embedder.model}
    known = previous.keys() | curated.keys()
    fresh = [i for i, item in enumerate(items) if _ident(item) not in known]
    kept = [i for i, item in enumerate(items) if _ident(item) in previous]
    entry_ids: dict[tuple[str, str, str], int] = dict(curated)  # as someone left them
    history: list[HistoryRow] = []
    if fresh:
        added = [items[i] for i in fresh]
        values = _entry_columns(added, [vectors[i] for i in fresh], events)
        rows = conn.execute(Q["insert_entries"], {**columns, **values}).fetchall()
        entry_ids.update({(r["owner_type"], r["owner_id"], r["key"]): r["id"] for r in rows})
        history += [
            HistoryRow(entry_ids[_ident(i)], "ADD", None, i.statement, None, "active", "extracted")
            for i in added
        ]
    if kept:
        updated = [items[i] for i in kept]
        olds = [previous.pop(_ident(item)) for item in updated]
        values = _entry_columns(updated, [vectors[i] for i in kept], events, olds)
        values["id"] = [o["id"] for o in olds]
        changed = {r["id"] for r in conn.execute(Q["update_entries"], {**columns, **values})}
        entry_ids.update({_ident(item): o["id"] for item, o in zip(updated, olds, strict=True)})
        history += [
            HistoryRow(
                o["id"],
                "UPDATE",
                o["canonical_statement"],
                item.statement,
                o["status"],
                o["status"],
                "rebuilt",
            )
            for item, o in zip(updated, olds, strict=True)
            if o["id"] in changed
        ]
    links = {"src_id": observations, "dst_id": [entry_ids[_ident(i)] for i in items]}
    conn.execute(Q["insert_links"], {**base, **links})
    revived: list[dict[str, Any]] = []
    if previous:  # the new build no longer extracts these
        gone = list(previous.values())
        conn.execute(Q["delete_entries"], {**base, "ids": [o["id"] for o in gone]})
        reason = "no longer extracted by " + config.build_version
        history += [
            HistoryRow(
                o["id"], "DELETE", o["canonical_statement"], None, o["status"], "deleted", reason
            )
            for o in gone
        ]
        revived = conn.execute(
            Q["revive_displaced"], {**base, "ids": [o["id"] for o in gone]}
        ).fetchall()
        history += [_revived(r, reason) for r in revived]
    write_history(conn, base, history, ACTOR)
    return len(items), [(r["owner_type"], r["owner_id"], r["key"]) for r in revived]


def _revived(row: dict[str, Any], reason: str) -> HistoryRow:
    """The history row of an entry active again because the one that absorbed or
    superseded it is gone."""
    how = "absorbed" if row["old_status"] == "merged" else "superseded"
    statement, old, new = row["canonical_statement"], row["old_status"], row["new_status"]
    why = f"revived: entry {row['displaced_by']}, which {how} it, is {reason}"
    return HistoryRow(row["id"], "UPDATE", statement, statement, old, new, why)


def _ident(item: Extracted) -> tuple[str, str, str]:
    return (item.owner_type, item.owner_id, item.key)


def _insert_observations(
    conn: Conn,
    base: dict[str, Any],
    items: Sequence[Extracted],
    config: BuildConfig,
    extraction: Any,
) -> list[int]:
    """The observations' ids, in item order."""
    rows = conn.execute(
        Q["insert_observations"],
        {
            **base,
            "build_version": config.build_version,
            "extractor": extraction.extractor,
            "extractor_version": extraction.version,
            **_item_columns(items),
        },
    ).fetchall()
    ids = {(r["owner_type"], r["owner_id"], r["key"]): r["id"] for r in rows}
    return [ids[_ident(i)] for i in items]


def _item_columns(items: Sequence[Extracted]) -> dict[str, list[Any]]:
    """The items as parallel arrays, one per column (for ``unnest``). Provenance goes as
    text ('{1,2}'): PostgreSQL arrays cannot be ragged."""
    return {
        "owner_type": [i.owner_type for i in items],
        "owner_id": [i.owner_id for i in items],
        "kind": [i.kind for i in items],
        "key": [i.key for i in items],
        "statement": [i.statement for i in items],
        "fields": [Jsonb(dict(i.fields)) for i in items],
        "confidence": [i.confidence for i in items],
        "importance": [i.importance for i in items],
        "source_event_ids": [pg_array(i.source_event_ids) for i in items],
    }


def _entry_columns(
    items: Sequence[Extracted],
    vectors: Sequence[Any],
    events: dict[int, dict[str, Any]],
    olds: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The items as entry columns. With ``olds`` (the entries a rebuild updates, in item
    order), each keeps the provenance it has from other sessions: a merge survivor's
    absorbed duplicates are not this session's to rebuild."""
    mine = {e["external_id"] for e in events.values()}
    event_ids, external_ids = [], []
    for j, item in enumerate(items):
        ids = list(item.source_event_ids)
        external = [events[e]["external_id"] for e in ids]
        if olds:
            ids += [i for i in olds[j]["source_event_ids"] if i not in events]
            external += [x for x in olds[j]["source_external_ids"] if x not in mine]
        event_ids.append(pg_array(ids))
        external_ids.append(Jsonb(external))
    return {
        **_item_columns(items),
        "source_event_ids": event_ids,
        "embedding": list(vectors),
        "valid_from": [i.valid_from for i in items],
        "source_external_ids": external_ids,
    }


def build_or_record_failure(
    connection: Callable[[], AbstractContextManager[Conn]],
    tenant_id: str,
    session_id: int,
    config: BuildConfig,
    *,
    now: datetime,
    backoff: timedelta,
    in_order: bool = True,
) -> BuildOutcome:
    """Build one closed session, or record on it why the build failed (status ``failed``):
    any extractor, embedder or database failure keeps the events and leaves the session
    to a later attempt (``backoff`` × 2^attempts). The failure is recorded on a connection
    of its own, once the build's is back (rolled back, or dropped if the server cut it
    mid-build: then it could record nothing). A session that is gone or not closed raises
    :class:`SessionNotFound` / :class:`SessionNotClosed`: there is nothing to build."""
    with connection() as conn:
        try:
            return build_session(conn, tenant_id, session_id, config, now=now, in_order=in_order)
        except (SessionNotFound, SessionNotClosed):
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
    with connection() as conn:
        attempts = record_failure(conn, tenant_id, session_id, error, now=now, backoff=backoff)
        conn.commit()
    return BuildOutcome("failed", session_id, error=error, attempts=attempts)


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
    conn: Conn, *, now: datetime, max_attempts: int = 5, limit: int | None = 1000
) -> list[tuple[str, int]]:
    """Sessions waiting for a build, across tenants (runs as the owner role); every one
    with ``limit=None``."""
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
    statuses: tuple[str, ...] = ("active",),
) -> list[dict[str, Any]]:
    """Entries of a tenant in event-time order: the active ones, or those of ``statuses``."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "owner_id": owner_id, "kind": kind, "limit": limit,
                  "statuses": list(statuses)}  # fmt: skip
        return conn.execute(Q["list_entries"], params).fetchall()


def load_session_input(conn: Conn, tenant_id: str, session_id: int) -> SessionInput:
    """A stored session as an extractor sees it."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "session_id": session_id}
        row = conn.execute(Q["session_exists_row"], params).fetchone()
        if row is None:
            raise SessionNotFound(tenant_id=tenant_id, session_id=session_id)
        return _session_input(row, conn.execute(Q["session_input_events"], params).fetchall())
