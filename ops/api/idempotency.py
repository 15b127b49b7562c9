"""Idempotency keys of memory writes: a client that retries ``POST /v1/memories`` or Mem0
``add`` (its connection broke, it got no answer) sends the same ``Idempotency-Key`` header,
and the retry gets the first request's response without writing anything again.

The key is taken in the request's own transaction, before anything is written: a second
request with the key waits for the first to commit (then replays its response) or to roll
back (then runs itself). A key answers retries for a day (the sweep forgets older keys); a
key sent again with another request body is refused.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated

from fastapi import Header
from fastapi.responses import Response
from pydantic import BaseModel

from ledger.db import Conn
from ledger.errors import InvalidInput

HEADER = "Idempotency-Key"
# printable ASCII without spaces, as the header's common uses (UUIDs, ULIDs, hashes) are
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=HEADER,
        min_length=1,
        max_length=255,
        pattern="^[!-~]+$",
        description="Makes the write idempotent: a retry with the same key and body gets "
        "the first response (header `Idempotent-Replayed: true`) and writes nothing.",
    ),
]


class IdempotencyKeyReused(InvalidInput):
    """The Idempotency-Key was used for another request: send a new key with a new request."""


def take(
    conn: Conn, tenant_id: str, key: str | None, route: str, body: BaseModel, now: datetime
) -> Response | None:
    """Take ``key`` for this request (None: no key, or a new one), or the response of the
    request that took it first, to answer with again."""
    if key is None:
        return None
    digest = _digest(route, body)
    taken = conn.execute(
        "INSERT INTO api_idempotency_keys (tenant_id, key, request_digest, created_at)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
        [tenant_id, key, digest, now],
    ).fetchone()
    if taken is not None:
        return None
    row = conn.execute(
        "SELECT request_digest, response FROM api_idempotency_keys"
        " WHERE tenant_id = %s AND key = %s",
        [tenant_id, key],
    ).fetchone()
    assert row is not None  # a key is only deleted a day after it was taken
    if bytes(row["request_digest"]) != digest:
        raise IdempotencyKeyReused(field=HEADER)
    return Response(
        row["response"], media_type="application/json", headers={"Idempotent-Replayed": "true"}
    )


def keep(conn: Conn, tenant_id: str, key: str | None, response: BaseModel) -> None:
    """Store the response of the request that took ``key``, for its retries."""
    if key is not None:
        conn.execute(
            "UPDATE api_idempotency_keys SET response = %s WHERE tenant_id = %s AND key = %s",
            [response.model_dump_json(), tenant_id, key],
        )


def _digest(route: str, body: BaseModel) -> bytes:
    canonical = json.dumps([route, body.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(canonical.encode()).digest()
