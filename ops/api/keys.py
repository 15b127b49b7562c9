"""API keys: shown once, stored as sha256, each bound to one tenant.

The key lookup is the one query that runs before a tenant is known, so it runs as the
owner role; everything a request does afterwards runs under that key's tenant scope.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from ledger.db import Conn, tenant_scope
from ledger.errors import MemledgerError
from ledger.scope import check_id

PREFIX = "mlk_"


class KeyNotFound(MemledgerError):
    """No such API key for this tenant."""


@dataclass(frozen=True, slots=True)
class KeyOwner:
    tenant_id: str
    key_id: int
    name: str | None
    scopes: tuple[str, ...]

    @property
    def actor(self) -> str:
        return f"api:{self.name or self.key_id}"


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def create_key(conn: Conn, tenant_id: str, *, name: str | None, now: datetime) -> tuple[int, str]:
    """A new key for ``tenant_id``: (its id, the plain key — the only time it is seen)."""
    check_id(tenant_id, "tenant_id")
    key = PREFIX + secrets.token_urlsafe(32)
    with tenant_scope(conn, tenant_id):
        row = conn.execute(
            "INSERT INTO api_keys (tenant_id, key_hash, key_prefix, name, created_at)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING id",
            [tenant_id, digest(key), key[: len(PREFIX) + 6], name, now],
        ).fetchone()
    assert row is not None
    return int(row["id"]), key


def resolve_key(conn: Conn, key: str) -> KeyOwner | None:
    """The tenant a presented key belongs to, or None (unknown or revoked)."""
    row = conn.execute(
        "SELECT tenant_id, id, name, scopes FROM api_keys"
        " WHERE key_hash = %s AND revoked_at IS NULL",
        [digest(key)],
    ).fetchone()
    if row is None:
        return None
    return KeyOwner(row["tenant_id"], row["id"], row["name"], tuple(row["scopes"]))


def list_keys(conn: Conn, tenant_id: str) -> list[dict[str, object]]:
    with tenant_scope(conn, tenant_id):
        return conn.execute(
            "SELECT id, key_prefix, name, scopes, created_at, revoked_at FROM api_keys"
            " WHERE tenant_id = %s ORDER BY id",
            [tenant_id],
        ).fetchall()


def revoke_key(conn: Conn, tenant_id: str, key_id: int, *, now: datetime) -> None:
    with tenant_scope(conn, tenant_id):
        row = conn.execute(
            "UPDATE api_keys SET revoked_at = coalesce(revoked_at, %s)"
            " WHERE tenant_id = %s AND id = %s RETURNING id",
            [now, tenant_id, key_id],
        ).fetchone()
    if row is None:
        raise KeyNotFound(tenant_id=tenant_id, key_id=key_id)
