"""The entry-change feed: ``memory_entry_history``, tailed by the read models and by
consolidation's incremental passes, each with a checkpoint of its own.

Every change to an entry — the builder's ADD/UPDATE/DELETE, consolidation's SUPERSEDE,
MERGE and ARCHIVE, an API call — writes exactly one history row, so history ids are the
change log the read-model runner tails with its checkpoint.

History ids come from an identity column, allocated when a row is inserted, not when its
transaction commits: a reader that simply took ``max(id)`` could pass over an id whose
transaction commits later. So:

* **writers** call :func:`announce_entry_changes` in their transaction before the first
  history row (``pg_advisory_xact_lock_shared`` on one constant key, held until commit or
  rollback). Any number of writers hold it at once. Slow work (extraction, embedding) is
  best done before the call, because the runner's horizon step waits for every holder;
* **the runner** finds its horizon with :func:`change_horizon` in a short transaction of
  its own: it takes the same lock exclusively (waiting until no writer is in flight),
  reads ``max(id)`` for the tenant and commits, releasing the lock at once. Every id up to
  the horizon then belongs to a transaction that has committed or rolled back, so the
  runner can process ``(checkpoint, horizon]`` and never skip a late commit.

Consumers keep their position in ``consumer_checkpoint`` (:func:`checkpoint`,
:func:`save_checkpoint`), one row per tenant and consumer.

Call :func:`change_horizon` outside any open transaction (an autocommit or idle
connection) so the lock is released immediately; inside one it holds until that
transaction ends, which is still correct but keeps writers waiting.
"""

from __future__ import annotations

from datetime import datetime

from ledger.db import ENTRY_CHANGES_LOCK, Conn, announce_entry_changes, tenant_scope
from ledger.sqlfile import load_queries

Q = load_queries("observations")

__all__ = [
    "ENTRY_CHANGES_LOCK",
    "announce_entry_changes",
    "change_horizon",
    "checkpoint",
    "save_checkpoint",
]


def change_horizon(conn: Conn, tenant_id: str | None = None) -> int:
    """The last history id (of the tenant, or of any tenant) below which no writer of
    entry changes is still in flight."""
    if tenant_id is None:  # the owner role: the identity's sequence, O(1)
        with conn.transaction():
            conn.execute(Q["lock_changes_exclusive"], {"key": ENTRY_CHANGES_LOCK})
            row = conn.execute(Q["last_history_id"]).fetchone()
    else:
        with tenant_scope(conn, tenant_id):
            conn.execute(Q["lock_changes_exclusive"], {"key": ENTRY_CHANGES_LOCK})
            row = conn.execute(Q["last_tenant_history_id"], {"tenant_id": tenant_id}).fetchone()
    return int(row["id"]) if row and row["id"] is not None else 0


def checkpoint(conn: Conn, tenant_id: str, consumer: str) -> int:
    """The consumer's position in the tenant's changes (0 before its first run)."""
    row = conn.execute(Q["checkpoint"], {"tenant_id": tenant_id, "consumer": consumer}).fetchone()
    return int(row["position"]) if row else 0


def save_checkpoint(
    conn: Conn, tenant_id: str, consumer: str, position: int, *, now: datetime
) -> None:
    """Move the checkpoint forward to ``position`` (never back)."""
    params = {"tenant_id": tenant_id, "consumer": consumer, "position": position, "now": now}
    with conn.transaction():
        conn.execute(Q["save_checkpoint"], params)
