"""Edit and forget: a client's changes to entries. Each queues a read-model projection for
after the caller commits (the user profile and skills must drop or change what an edit
or delete changed); a request that fails queues nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.db import Conn
from observations.edits import delete_entry, delete_owner_entries, edit_entry
from ops.usecases.base import Defer, Deps


def edit(
    conn: Conn,
    tenant_id: str,
    entry_id: int,
    statement: str,
    *,
    actor: str,
    deps: Deps,
    defer: Defer,
    fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Rewrite an entry's statement (re-embedded; the change is in its history)."""
    defer(deps.enqueue_projection, tenant_id)
    now = deps.clock()
    return edit_entry(
        conn, tenant_id, entry_id, statement, embedder=deps.embedder, actor=actor, now=now,
        fields=fields, limits=deps.settings.limits,
    )  # fmt: skip


def forget_entry(
    conn: Conn, tenant_id: str, entry_id: int, *, actor: str, deps: Deps, defer: Defer
) -> None:
    """Delete an entry (kept as history: its status becomes deleted)."""
    defer(deps.enqueue_projection, tenant_id)
    delete_entry(conn, tenant_id, entry_id, actor=actor, now=deps.clock())


def forget_owner(
    conn: Conn,
    tenant_id: str,
    owner_type: str,
    owner_id: str,
    *,
    actor: str,
    deps: Deps,
    defer: Defer,
) -> int:
    """Delete every entry of a user or agent (each kept as history); how many."""
    defer(deps.enqueue_projection, tenant_id)
    now = deps.clock()
    return delete_owner_entries(conn, tenant_id, owner_type, owner_id, actor=actor, now=now)
