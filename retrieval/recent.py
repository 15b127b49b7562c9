"""The short-term window: the last N messages of each channel, kept in Redis on ingest.

A context bundle's "recent messages" come from here in one round trip. Redis is a cache:
when it is unreachable (or was flushed) the same messages are read from the ledger, so a
bundle never fails for want of Redis.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import redis
import structlog

from ledger.db import Conn
from ledger.jsontext import dumps
from ledger.store import open_session, open_session_tail
from retrieval.items import RecentMessage

log = structlog.get_logger(__name__)
DEFAULT_SIZE = 20
_PREFIX = "memledger:window"


# ARGV[1]: the window size; ARGV[2]: a JSON array of [key, score, message] triples. One
# round trip (and one argument to encode) for a whole batch, whatever its channels; the
# keys travel in the payload, which a standalone Redis allows.
_RECORD = """
local size = tonumber(ARGV[1])
local touched = {}
for _, m in ipairs(cjson.decode(ARGV[2])) do
  redis.call('ZADD', m[1], m[2], m[3])
  touched[m[1]] = true
end
for key in pairs(touched) do
  redis.call('ZREMRANGEBYRANK', key, 0, -size - 1)
end
"""


class RecentWindow:
    """Sorted sets ``memledger:window:<tenant length>:<tenant>:<channel>`` scored by event
    time, capped at the newest ``size`` messages: concurrent deliveries may record in any
    order."""

    def __init__(self, client: redis.Redis, size: int = DEFAULT_SIZE) -> None:
        self.client = client
        self.size = size
        self._record = client.register_script(_RECORD)

    @classmethod
    def from_url(cls, url: str, size: int = DEFAULT_SIZE) -> RecentWindow:
        return cls(redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5), size)

    def record(self, tenant_id: str, events: Sequence[dict[str, Any]]) -> bool:
        """Add stored events (with their ``session_id``); False if Redis is unreachable
        (the ledger has them anyway)."""
        batch = [
            [
                _key(tenant_id, e["channel_id"]),
                f"{e['occurred_at'].timestamp():.6f}",  # a string: Lua numbers keep 14 digits
                dumps(_message(e)),
            ]
            for e in events
        ]
        try:
            self._record(args=[self.size, dumps(batch)])
        except redis.RedisError as exc:
            log.warning("recent_window_unavailable", error=str(exc))
            return False
        return True

    def cached(self, tenant_id: str, channel_id: str) -> list[dict[str, Any]] | None:
        """The window's messages, newest first; None when Redis is unreachable."""
        try:
            raw = self.client.zrevrange(_key(tenant_id, channel_id), 0, self.size - 1)
        except redis.RedisError as exc:
            log.warning("recent_window_unavailable", error=str(exc))
            return None
        return [json.loads(m) for m in cast("list[bytes]", raw)]


def recent_messages(
    conn: Conn,
    window: RecentWindow | None,
    tenant_id: str,
    channel_id: str,
    *,
    limit: int,
    participant: str | None = None,
) -> list[RecentMessage]:
    """The open session's newest ``limit`` messages, oldest first: from the window when it
    holds them, else from the ledger. With ``participant`` (the user or agent a bundle is
    for), none unless they took part in that session: naming a channel shows nobody
    another user's conversation."""
    session = open_session(conn, tenant_id, channel_id, participant=participant)
    if session is None:
        return []
    cached = window.cached(tenant_id, channel_id) if window is not None else None
    if window is not None and cached is not None:
        mine = [m for m in cached if m["session_id"] == session["id"]][:limit]
        # fewer than the session holds means Redis lost some (or all): use the ledger
        if len(mine) >= min(limit, window.size, session["event_count"]):
            return [_recent(m) for m in reversed(mine)]
    rows = open_session_tail(conn, tenant_id, channel_id, limit=limit)
    return [_recent(_message(r)) for r in rows]


def _key(tenant_id: str, channel_id: str) -> str:
    # the tenant id's length first: ids may hold ":", and tenant "a:b" on channel "c" must
    # not share a window with tenant "a" on channel "b:c"
    return f"{_PREFIX}:{len(tenant_id)}:{tenant_id}:{channel_id}"


def _message(e: dict[str, Any]) -> dict[str, Any]:
    at = e["occurred_at"]
    return {
        "session_id": e["session_id"],
        "event_id": e.get("id"),
        "external_id": e["external_id"],
        "speaker": e.get("actor_name") or e["actor_id"],
        "occurred_at": at.astimezone(UTC).isoformat() if isinstance(at, datetime) else at,
        "content": e["content"],
    }


def _recent(m: dict[str, Any]) -> RecentMessage:
    return RecentMessage(
        speaker=m["speaker"],
        occurred_at=datetime.fromisoformat(m["occurred_at"]),
        content=m["content"],
        event_id=m["event_id"],
        external_id=m["external_id"],
    )
