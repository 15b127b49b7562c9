"""DB glue shared by the entry jobs: lock and load owners' entries, write changes.

:func:`write_changes` applies a policy's changes with set-based statements — one UPDATE
for every changed entry, one INSERT for the lineage links, one for the history rows (one
row per changed entry) — after announcing the transaction as a writer of entry changes
(see :mod:`observations.changes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from consolidation.model import (
    ARCHIVED,
    MERGED,
    SUPERSEDED,
    Archive,
    Change,
    EntryState,
    Merge,
    Supersede,
    apply,
)
from ledger.db import Conn, announce_entry_changes, pg_array
from ledger.sqlfile import load_queries
from observations.history import HistoryRow, write_history

Q = load_queries("consolidation")
Owner = tuple[str, str]  # owner type, owner id


@dataclass(frozen=True, slots=True)
class Written:
    """What one :func:`write_changes` call changed."""

    superseded: int = 0
    merged: int = 0  # entries merged away (survivors not counted)
    archived: int = 0
    links: int = 0

    def __add__(self, other: Written) -> Written:
        return Written(
            self.superseded + other.superseded,
            self.merged + other.merged,
            self.archived + other.archived,
            self.links + other.links,
        )

    @property
    def entries(self) -> int:
        return self.superseded + self.merged + self.archived


def owner_arrays(owners: Sequence[Owner]) -> dict[str, list[str]]:
    """Owners as the two arrays the owner queries take."""
    return {"owner_types": [o[0] for o in owners], "owner_ids": [o[1] for o in owners]}


def lock_entries(
    conn: Conn,
    tenant_id: str,
    owners: Sequence[Owner],
    *,
    statuses: Sequence[str],
    kinds: Iterable[str] | None = None,
    skip_kinds: Iterable[str] = (),
    vectors: bool = False,
    lock: bool = True,
) -> list[EntryState]:
    """The owners' entries in ``statuses`` (and ``kinds``, never ``skip_kinds``), locked
    until the transaction ends (read only, without ``lock``). Vectors come binary when
    asked for."""
    params = {
        "tenant_id": tenant_id,
        **owner_arrays(owners),
        "statuses": list(statuses),
        "kinds": None if kinds is None else sorted(kinds),
        "skip_kinds": sorted(skip_kinds),
        "vectors": vectors,
    }
    query = Q["owner_entries"] + " FOR UPDATE OF e" if lock else Q["owner_entries"]
    rows = conn.execute(query, params, binary=vectors).fetchall()
    return [EntryState.from_row(r) for r in rows]


def write_changes(
    conn: Conn,
    tenant_id: str,
    entries: Iterable[EntryState],
    changes: Sequence[Change],
    *,
    now: datetime,
    actor: str,
) -> Written:
    """Apply ``changes`` to ``entries`` (their current states) in the database."""
    if not changes:
        return Written()
    before = {e.id: e for e in entries}
    after = apply(before.values(), changes, now=now)
    if not after:
        return Written()
    base = {"tenant_id": tenant_id, "now": now}
    announce_entry_changes(conn)
    conn.execute(Q["update_entry_states"], {**base, **_columns([after[i] for i in sorted(after)])})
    links = _links(changes, after)
    if links:
        stale = [c for c in changes if isinstance(c, Supersede) and c.old in after]
        conn.execute(
            Q["delete_stale_supersedes"],
            {**base, "old": [c.old for c in stale], "new": [c.new for c in stale]},
        )
        conn.execute(
            Q["insert_entry_links"],
            {
                **base,
                "src_id": [link[0] for link in links],
                "relation": [link[1] for link in links],
                "dst_id": [link[2] for link in links],
            },
        )
    write_history(conn, base, _history(before, after, changes), actor)

    def ended(status: str) -> int:  # a re-pointed supersession counts again
        return sum(
            1
            for i, e in after.items()
            if e.status == status and (status == SUPERSEDED or before[i].status != status)
        )

    return Written(ended(SUPERSEDED), ended(MERGED), ended(ARCHIVED), len(links))


def _columns(states: Sequence[EntryState]) -> dict[str, list[Any]]:
    return {
        "id": [s.id for s in states],
        "status": [s.status for s in states],
        "valid_to": [s.valid_to for s in states],
        "expired_at": [s.expired_at for s in states],
        "superseded_by": [s.superseded_by for s in states],
        "confidence": [s.confidence for s in states],
        "importance": [s.importance for s in states],
        "access_count": [s.access_count for s in states],
        "last_accessed_at": [s.last_accessed_at for s in states],
        "source_event_ids": [pg_array(s.source_event_ids) for s in states],
        "source_external_ids": [Jsonb(list(s.source_external_ids)) for s in states],
    }


def _links(
    changes: Sequence[Change], after: Mapping[int, EntryState]
) -> list[tuple[int, str, int]]:
    links: list[tuple[int, str, int]] = []
    for change in changes:
        if isinstance(change, Supersede) and change.old in after:
            links.append((change.new, "supersedes", change.old))
        elif isinstance(change, Merge):
            links += [(m, "merged_into", change.survivor) for m in change.merged]
    return sorted(set(links))


def _history(
    before: Mapping[int, EntryState], after: Mapping[int, EntryState], changes: Sequence[Change]
) -> list[HistoryRow]:
    """One row per changed entry, in id order, with the change's reason."""
    reasons: dict[int, tuple[str, str]] = {}
    for change in changes:
        if isinstance(change, Supersede):
            reasons[change.old] = ("SUPERSEDE", change.reason)
        elif isinstance(change, Merge):
            absorbed = ", ".join(map(str, change.merged))
            reasons[change.survivor] = ("MERGE", f"absorbed entries {absorbed}: {change.reason}")
            for merged in change.merged:
                reasons[merged] = ("MERGE", f"merged into entry {change.survivor}: {change.reason}")
        elif isinstance(change, Archive):
            reasons[change.id] = ("ARCHIVE", change.reason)
    rows = []
    for entry_id in sorted(after):
        old, new = before[entry_id], after[entry_id]
        action, reason = reasons[entry_id]
        rows.append(
            HistoryRow(
                entry_id, action, old.statement, new.statement, old.status, new.status, reason
            )
        )
    return rows
