"""The build outbox: a closed session waits in the database until its build is handed to
the queue.

Closing a session and putting it in the outbox are one write (``build_queued_at`` is
NULL), in the transaction that closes it. Handing builds over claims them (committed
first: a worker that takes a message at once finds the session free, not locked by the
claim) and then sends their messages: a send that fails (the queue is down) takes the
claims back, so nothing closed is ever forgotten, and a session already handed over is
not sent again until its message may have been lost (``stale_before``; a process that
dies between the claim and the send leaves exactly such a claim).

A send raises :class:`QueueUnavailable` while the queue cannot take messages: callers that
hand over in the background (the sweep, the API's drain) leave the builds waiting then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from ledger.db import Conn
from ledger.errors import Unavailable
from ledger.sqlfile import load_queries

Q = load_queries("observations")
Send = Callable[[Sequence[tuple[str, int]]], object]  # raises QueueUnavailable


class QueueUnavailable(Unavailable):
    """The build queue cannot take messages now: the builds wait in the outbox."""


@dataclass(frozen=True, slots=True)
class HandOver:
    """Which builds are handed over, and how many at most (a tenant's and in all)."""

    now: datetime
    max_attempts: int
    stale_before: datetime | None = None  # also those handed over before it: lost messages
    tenant_id: str | None = None
    session_ids: Sequence[int] | None = None
    per_tenant: int = 1000
    limit: int = 10_000


def hand_over(conn: Conn, send: Send, what: HandOver) -> list[tuple[str, int]]:
    """Claim the builds due, then ``send`` them, oldest first: if ``send`` raises, the
    claims are taken back and the sessions stay in the outbox. Runs as the owner role
    (across tenants unless ``what.tenant_id``); returns what was handed over."""
    params = {
        "now": what.now,
        "max_attempts": what.max_attempts,
        "stale_before": what.stale_before,
        "tenant_id": what.tenant_id,
        "ids": None if what.session_ids is None else list(what.session_ids),
        "per_tenant": what.per_tenant,
        "limit": what.limit,
    }
    with conn.transaction():
        rows = conn.execute(Q["claim_builds"], params).fetchall()
    due = sorted(((r["tenant_id"], int(r["id"])) for r in rows), key=lambda s: s[1])
    if due:
        try:
            send(due)
        except BaseException:
            claims = {"tenants": [t for t, _ in due], "ids": [i for _, i in due], "now": what.now}
            with conn.transaction():
                conn.execute(Q["unclaim_builds"], claims)
            raise
    return due
