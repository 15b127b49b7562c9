"""The entry history: one row per change to an entry, whoever made it.

Every writer of entries (the builder, consolidation jobs, the API) records its changes
here; ``memledger history ENTRY_ID`` reads them back, and the read-model runner follows
the history ids as its change feed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ledger.db import Conn
from ledger.sqlfile import load_queries

Q = load_queries("observations")


class HistoryRow(NamedTuple):
    entry_id: int
    action: str  # ADD, UPDATE, SUPERSEDE, MERGE, ARCHIVE, DELETE
    old_statement: str | None
    new_statement: str | None
    old_status: str | None
    new_status: str | None
    reason: str | None


def write_history(conn: Conn, base: dict[str, Any], rows: Sequence[HistoryRow], actor: str) -> None:
    """Append ``rows`` for ``base['tenant_id']`` at ``base['now']``, in order, one statement."""
    if not rows:
        return
    columns = {name: [getattr(r, name) for r in rows] for name in HistoryRow._fields}
    conn.execute(
        Q["insert_history"],
        {"tenant_id": base["tenant_id"], "now": base["now"], "actor": actor, **columns},
    )
