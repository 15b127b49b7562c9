"""Changes to entries made by a caller (the HTTP API, an operator), each with its history.

Entries are never removed: a delete sets status ``deleted`` (and ``expired_at``), an edit
rewrites the statement in place and re-embeds it. Every change writes one history row
with the caller as actor, and announces itself to the read-model runner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from ledger.db import Conn, announce_entry_changes, tenant_scope
from ledger.errors import EntryNotFound, InvalidInput
from ledger.events import DEFAULT_LIMITS, Limits, check_metadata
from ledger.scope import check_id
from ledger.sqlfile import load_queries
from observations.embed import Embedder, stored_entry_text
from observations.embed_models import reading_embedder, writing_embedder
from observations.history import HistoryRow, write_history

Q = load_queries("observations")


class InvalidEdit(InvalidInput):
    """An edit that cannot be applied: the message names the field."""


def get_entry(conn: Conn, tenant_id: str, entry_id: int) -> dict[str, Any]:
    """One entry of the tenant, whatever its status."""
    with tenant_scope(conn, tenant_id):
        row = conn.execute(Q["entry"], {"tenant_id": tenant_id, "id": entry_id}).fetchone()
    if row is None:
        raise EntryNotFound(tenant_id=tenant_id, entry_id=entry_id)
    return row


def get_entries(conn: Conn, tenant_id: str, entry_ids: Sequence[int]) -> list[dict[str, Any]]:
    """The tenant's entries among ``entry_ids``, in that order, in one query (ids it does
    not have are left out)."""
    with tenant_scope(conn, tenant_id):
        rows = conn.execute(Q["entries"], {"tenant_id": tenant_id, "ids": list(entry_ids)})
        by_id = {r["id"]: r for r in rows}
    return [by_id[i] for i in entry_ids if i in by_id]


def entry_history(conn: Conn, tenant_id: str, entry_id: int) -> list[dict[str, Any]]:
    """The entry's changes, oldest first (EntryNotFound if the tenant has no such entry)."""
    get_entry(conn, tenant_id, entry_id)
    with tenant_scope(conn, tenant_id):
        return conn.execute(Q["entry_history"], {"tenant_id": tenant_id, "id": entry_id}).fetchall()


def edit_entry(
    conn: Conn,
    tenant_id: str,
    entry_id: int,
    statement: str,
    *,
    embedder: Embedder,
    actor: str,
    now: datetime,
    fields: Mapping[str, Any] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    """Rewrite an active entry's statement (re-embedded the way the builder embeds it);
    ``fields`` are merged into the entry's, each held to the rules of event metadata."""
    text = statement.strip() if isinstance(statement, str) else ""
    if not text:
        raise InvalidEdit("statement is empty", field="statement")
    for name, value in (fields or {}).items():
        try:
            check_metadata({name: value}, limits)
        except ValueError as exc:
            raise InvalidEdit(f"{name} {exc}", field=name) from exc
    old = active(get_entry(conn, tenant_id, entry_id))
    used = reading_embedder(conn, embedder)
    vector = used.embed([stored_entry_text(old, used.model, text)])[0]
    params = {
        "tenant_id": tenant_id,
        "id": entry_id,
        "statement": text,
        "fields": Jsonb(dict(fields or {})),
        "now": now,
    }
    with tenant_scope(conn, tenant_id):
        old = active(_locked(conn, tenant_id, entry_id))  # as it is now, not at embedding
        current = writing_embedder(conn, embedder)
        if current.model != used.model:  # a re-embed switched models meanwhile
            vector = current.embed([stored_entry_text(old, current.model, text)])[0]
        params |= {"embedding": vector, "embedding_model": current.model}
        announce_entry_changes(conn)
        row = conn.execute(Q["edit_entry"], params).fetchone()
        assert row is not None  # locked, and active
        change = HistoryRow(
            entry_id, "UPDATE", old["canonical_statement"], text, "active", "active", "edited"
        )
        write_history(conn, {"tenant_id": tenant_id, "now": now}, [change], actor)
    return row


def delete_entry(conn: Conn, tenant_id: str, entry_id: int, *, actor: str, now: datetime) -> None:
    """Mark an entry deleted (idempotent: deleting a deleted entry changes nothing)."""
    with tenant_scope(conn, tenant_id):
        old = _locked(conn, tenant_id, entry_id)
        if old["status"] == "deleted":
            return
        announce_entry_changes(conn)
        conn.execute(Q["delete_entries"], {"tenant_id": tenant_id, "ids": [entry_id], "now": now})
        change = HistoryRow(
            entry_id, "DELETE", old["canonical_statement"], None, old["status"], "deleted",
            "deleted by request",
        )  # fmt: skip
        write_history(conn, {"tenant_id": tenant_id, "now": now}, [change], actor)


def _locked(conn: Conn, tenant_id: str, entry_id: int) -> dict[str, Any]:
    row = conn.execute(Q["lock_entry"], {"tenant_id": tenant_id, "id": entry_id}).fetchone()
    if row is None:
        raise EntryNotFound(tenant_id=tenant_id, entry_id=entry_id)
    return row


def active(row: dict[str, Any]) -> dict[str, Any]:
    """The entry row, if it is current; else EntryNotFound (naming its status)."""
    if row["status"] != "active":
        raise EntryNotFound(tenant_id=row["tenant_id"], entry_id=row["id"], status=row["status"])
    return row


def delete_owner_entries(
    conn: Conn, tenant_id: str, owner_type: str, owner_id: str, *, actor: str, now: datetime
) -> int:
    """Mark every entry of one user or agent deleted — for a user, with the summaries of
    the sessions they took part in; returns how many changed."""
    check_id(owner_id, "owner_id")
    if owner_type not in ("user", "agent", "channel"):
        raise InvalidEdit("owner_type must be user, agent or channel", field="owner_type")
    params = {"tenant_id": tenant_id, "owner_type": owner_type, "owner_id": owner_id, "now": now}
    with tenant_scope(conn, tenant_id):
        announce_entry_changes(conn)
        rows = conn.execute(Q["delete_owner_entries"], params).fetchall()
        changes = [
            HistoryRow(r["id"], "DELETE", r["canonical_statement"], None, r["status"], "deleted",
                       "deleted with all of " + owner_id)
            for r in rows
        ]  # fmt: skip
        write_history(conn, {"tenant_id": tenant_id, "now": now}, changes, actor)
    return len(rows)


def list_owner_entries(
    conn: Conn,
    tenant_id: str,
    *,
    user_id: str | None,
    agent_id: str | None,
    limit: int,
    offset: int,
) -> tuple[int, list[dict[str, Any]]]:
    """Active entries of a user, an agent, or both (none when neither), by id: (the
    total, one page)."""
    for value, what in ((user_id, "user_id"), (agent_id, "agent_id")):
        if value is not None:
            check_id(value, what)
    params = {"tenant_id": tenant_id, "user_id": user_id, "agent_id": agent_id}
    with tenant_scope(conn, tenant_id):
        total = conn.execute(Q["count_owner_entries"], params).fetchone()
        page = conn.execute(
            Q["owner_entries_page"], {**params, "limit": limit, "offset": offset}
        ).fetchall()
    return (int(total["n"]) if total else 0), page


def list_owners(conn: Conn, tenant_id: str) -> list[dict[str, Any]]:
    """Users and agents of the tenant that have active entries, with how many."""
    with tenant_scope(conn, tenant_id):
        return conn.execute(Q["owners"], {"tenant_id": tenant_id}).fetchall()
