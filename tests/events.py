"""Events the tests feed the ledger: the packaged sample transcript, one user turn, and a
bare message."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ledger import AppendResult, append, close_sessions
from ledger.db import Conn
from ops.samples import sample_path


def sample_events() -> list[dict[str, Any]]:
    """The sample transcript's events (``memledger run`` ingests the same file)."""
    text = sample_path().read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def replay(conn: Conn, tenant: str, events: list[dict[str, Any]], *, now: datetime) -> AppendResult:
    """Append a whole transcript at ``now`` and close the sessions it leaves open, as its
    end (``memledger run`` does the same)."""
    result = append(conn, tenant, events, now=now)
    close_sessions(conn, tenant, [o.session_id for o in result.outcomes if o.session_id], now=now)
    return result


def says(n: int, text: str, when: datetime, user: str = "maya") -> dict[str, Any]:
    """``user``'s ``n``-th turn in the direct channel ``dm-<user>``."""
    return {
        "external_id": f"{user}-{n}",
        "channel_id": f"dm-{user}",
        "role": "user",
        "actor_id": user,
        "actor_name": user.title(),
        "content": text,
        "occurred_at": when.isoformat(),
    }


def message(
    external_id: str,
    at: datetime,
    *,
    channel: str = "c1",
    actor: str = "u1",
    role: str = "user",
    content: str | None = None,
) -> dict[str, Any]:
    """A message on ``channel`` at ``at``; its content names its external id by default."""
    return {
        "external_id": external_id,
        "channel_id": channel,
        "role": role,
        "actor_id": actor,
        "content": content or f"message {external_id}",
        "occurred_at": at,
    }
