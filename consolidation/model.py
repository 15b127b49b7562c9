"""What the consolidation policies see and decide: entry states in, changes out.

An :class:`EntryState` is one row of ``memory_entries`` as plain data. A policy returns
changes — :class:`Supersede`, :class:`Merge`, :class:`Archive` — and :func:`apply` turns
them into the entries' new states, the same way the DB glue writes them. Nothing here
does I/O or reads the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from materializers.facts import EntryFact, normalize
from materializers.profile import profile_key, profile_value
from observations.entry import (
    ACTIVE,
    ARCHIVED,
    MERGED,
    SUPERSEDED,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryState:
    """One memory entry as the policies read it."""

    id: int
    owner_type: str
    owner_id: str
    kind: str
    key: str
    statement: str
    valid_from: datetime
    recorded_at: datetime
    status: str = ACTIVE
    valid_to: datetime | None = None
    expired_at: datetime | None = None
    superseded_by: int | None = None
    confidence: float = 0.5
    importance: float = 0.5
    access_count: int = 0
    last_accessed_at: datetime | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    # a vector (numpy array) or None; not compared: a change never alters it
    embedding: Any = field(default=None, compare=False)
    embedding_model: str | None = None
    source_event_ids: tuple[int, ...] = ()
    source_external_ids: tuple[str, ...] = ()

    @property
    def owner(self) -> tuple[str, str]:
        return (self.owner_type, self.owner_id)

    @property
    def value(self) -> str:
        """The fact's value as the profile compares it (object, else statement; "not …"
        for a dislike), case- and spacing-blind."""
        fact = EntryFact(
            id=self.id,
            owner_type=self.owner_type,
            owner_id=self.owner_id,
            kind=self.kind,
            key=self.key,
            statement=self.statement,
            confidence=self.confidence,
            valid_from=self.valid_from,
            fields=self.fields,
        )
        return normalize(profile_value(fact))

    @property
    def profile_key(self) -> str:
        return profile_key(self.key)

    @property
    def rank(self) -> tuple[datetime, float, int]:
        """Which of two facts is the later one: event time, then confidence, then id —
        the profile's rule for the current fact."""
        return (self.valid_from, self.confidence, self.id)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EntryState:
        return cls(
            id=int(row["id"]),
            owner_type=row["owner_type"],
            owner_id=row["owner_id"],
            kind=row["kind"],
            key=row["key"],
            statement=row["canonical_statement"],
            valid_from=row["valid_from"],
            recorded_at=row["recorded_at"],
            status=row["status"],
            valid_to=row["valid_to"],
            expired_at=row["expired_at"],
            superseded_by=row["superseded_by"],
            confidence=float(row["confidence"]),
            importance=float(row["importance"]),
            access_count=int(row["access_count"]),
            last_accessed_at=row["last_accessed_at"],
            fields=row["fields"] or {},
            embedding=_vector(row.get("embedding")),
            embedding_model=row.get("embedding_model"),
            source_event_ids=tuple(row["source_event_ids"]),
            source_external_ids=tuple(row["source_external_ids"]),
        )


def union_provenance(entries: Iterable[EntryState]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The entries' event ids and external ids together, in event id order, each external
    id beside its event's (as the builder writes them, one per event); lists that do not
    pair up (an entry whose session retention deleted keeps its external ids alone) are
    added unpaired, in sorted order."""
    pairs: dict[int, str] = {}
    events: set[int] = set()
    externals: set[str] = set()
    for e in entries:
        if len(e.source_event_ids) == len(e.source_external_ids):
            pairs.update(zip(e.source_event_ids, e.source_external_ids, strict=True))
        else:
            events.update(e.source_event_ids)
            externals.update(e.source_external_ids)
    if not events and not externals:
        ids = sorted(pairs)
        return tuple(ids), tuple(pairs[i] for i in ids)
    return tuple(sorted(events | set(pairs))), tuple(sorted(externals | set(pairs.values())))


@dataclass(frozen=True, slots=True)
class Supersede:
    """``old`` stops holding at ``valid_to`` (the newer fact's event time)."""

    old: int
    new: int
    valid_to: datetime
    reason: str


@dataclass(frozen=True, slots=True)
class Merge:
    """``merged`` collapse into ``survivor``, which keeps the union of their provenance,
    the highest confidence and importance, and their accesses (the latest use: an access,
    or when a duplicate was recorded)."""

    survivor: int
    merged: tuple[int, ...]
    source_event_ids: tuple[int, ...]
    source_external_ids: tuple[str, ...]
    confidence: float
    importance: float
    access_count: int
    last_accessed_at: datetime | None
    reason: str


@dataclass(frozen=True, slots=True)
class Archive:
    """The entry leaves the current memory (still kept, and found by history queries)."""

    id: int
    score: float
    reason: str


Change = Supersede | Merge | Archive


def apply(
    entries: Iterable[EntryState], changes: Iterable[Change], *, now: datetime
) -> dict[int, EntryState]:
    """The new state of every entry the changes alter; untouched entries are left out."""
    state = {e.id: e for e in entries}
    new: dict[int, EntryState] = {}

    def put(entry: EntryState) -> None:
        if entry != state[entry.id]:
            new[entry.id] = entry
        else:
            new.pop(entry.id, None)
        state[entry.id] = entry

    for change in changes:
        if isinstance(change, Supersede):
            old = state[change.old]
            put(_ended(old, SUPERSEDED, now, valid_to=change.valid_to, by=change.new))
        elif isinstance(change, Merge):
            survivor = state[change.survivor]
            put(
                replace(
                    survivor,
                    source_event_ids=change.source_event_ids,
                    source_external_ids=change.source_external_ids,
                    confidence=change.confidence,
                    importance=change.importance,
                    access_count=change.access_count,
                    last_accessed_at=change.last_accessed_at,
                )
            )
            for merged in change.merged:
                put(_ended(state[merged], MERGED, now))
        else:
            put(_ended(state[change.id], ARCHIVED, now))
    return new


def _ended(
    entry: EntryState,
    status: str,
    now: datetime,
    *,
    valid_to: datetime | None = None,
    by: int | None = None,
) -> EntryState:
    """``entry`` no longer current: ``expired_at`` is the system time it stopped being so
    (kept when it already had one)."""
    return replace(
        entry,
        status=status,
        expired_at=entry.expired_at or now,
        valid_to=valid_to if valid_to is not None else entry.valid_to,
        superseded_by=by if by is not None else entry.superseded_by,
    )


def _vector(value: Any) -> Any:
    """A float32 numpy array from what the driver returns (the column is halfvec: pgvector's
    HalfVector, whose numpy form is float16)."""
    if value is None:
        return None
    array = value if isinstance(value, np.ndarray) else value.to_numpy()
    return np.asarray(array, dtype=np.float32)
