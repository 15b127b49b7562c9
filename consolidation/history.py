"""Reading an entry's history back: its current row, every change, its entry lineage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.db import Conn, tenant_scope
from ledger.errors import EntryNotFound
from ledger.sqlfile import load_queries

Q = load_queries("consolidation")


@dataclass(frozen=True, slots=True)
class EntryRecord:
    entry: dict[str, Any]
    changes: list[dict[str, Any]]  # memory_entry_history rows, oldest first
    links: list[dict[str, Any]]  # supersedes / merged_into / contradicts, either direction


def entry_record(conn: Conn, tenant_id: str, entry_id: int) -> EntryRecord:
    """Everything recorded about one entry."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "id": entry_id}
        entry = conn.execute(Q["entry_row"], params).fetchone()
        if entry is None:
            raise EntryNotFound(tenant_id=tenant_id, entry_id=entry_id)
        changes = conn.execute(Q["entry_changes"], params).fetchall()
        links = conn.execute(Q["entry_links"], params).fetchall()
    return EntryRecord(entry, changes, links)
