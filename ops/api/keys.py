"""API keys: shown once, stored as sha256, each bound to one tenant.

The key lookup is the one query that runs before a tenant is known, so it runs as the
owner role; everything a request does afterwards runs under that key's tenant scope. A
server process remembers what a key resolved to for a few seconds (:class:`KeyCache`).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from ledger.db import Conn, tenant_scope
from ledger.errors import NotFound
from ledger.scope import check_id

PREFIX = "mlk_"


class KeyNotFound(NotFound):
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


@dataclass
class KeyCache:
    """What presented keys resolved to, each remembered for ``ttl`` seconds: a known key
    needs no lookup, and a known-bad key is refused without one (also while the database is
    down). A key revoked meanwhile keeps working until its entry expires. ``now`` is a
    monotonic time in seconds; at most ``max_keys`` keys are kept, the oldest dropped first."""

    ttl: float
    max_keys: int = 10_000
    _entries: dict[bytes, tuple[float, KeyOwner | None]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def remembered(self, key: str, now: float) -> tuple[bool, KeyOwner | None]:
        """Whether the key is remembered, and its owner if so (None: unknown or revoked)."""
        return self._remembered(digest(key), now)

    def _remembered(self, hashed: bytes, now: float) -> tuple[bool, KeyOwner | None]:
        with self._lock:
            expires, owner = self._entries.get(hashed, (now, None))
        return expires > now, owner

    def resolve(
        self, key: str, now: float, lookup: Callable[[str], KeyOwner | None]
    ) -> KeyOwner | None:
        """The key's owner (None: unknown or revoked), remembered or from ``lookup``; what
        ``lookup`` raises (the database is down) is raised, and nothing is remembered."""
        hashed = digest(key)
        known, owner = self._remembered(hashed, now)
        if known:
            return owner
        owner = lookup(key)
        with self._lock:
            self._entries.pop(hashed, None)  # re-inserted last: entries stay in expiry order
            self._entries[hashed] = (now + self.ttl, owner)
            while self._entries:  # drop the expired and the surplus, oldest first
                first = next(iter(self._entries))
                if len(self._entries) <= self.max_keys and self._entries[first][0] > now:
                    break
                del self._entries[first]
        return owner


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
