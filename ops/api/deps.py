"""The dependencies of every authenticated route: the shared state, the key's owner, and a
connection in one transaction under the owner's tenant scope."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from ledger.db import Conn, tenant_scope
from ops.api.errors import Unauthorized
from ops.api.keys import KeyCache, KeyOwner, resolve_key
from ops.api.state import ApiState


async def api_state(request: Request) -> ApiState:
    """The shared state (async: it does no I/O, so it need not hop to a worker thread)."""
    state: ApiState = request.app.state.memledger
    return state


def owner_of_key(cache: KeyCache, state: ApiState, key: str) -> KeyOwner | None:
    """The owner of a presented key (None: unknown or revoked): remembered for a few
    seconds (see KeyCache), else looked up. Every entrance uses it: the API's routes, the
    MCP endpoint, the console's sign-in."""

    def lookup(key: str) -> KeyOwner | None:
        with state.connection() as conn:
            conn.autocommit = True  # one read alone: no BEGIN and COMMIT round trips
            try:
                return resolve_key(conn, key)
            finally:
                conn.autocommit = False

    return cache.resolve(key, time.monotonic(), lookup)


def bearer_key(authorization: str, schemes: tuple[str, ...] = ("bearer", "token")) -> str | None:
    """The key of an ``Authorization`` header value, None without one."""
    scheme, _, key = authorization.partition(" ")
    return key.strip() if scheme.lower() in schemes and key.strip() else None


async def key_owner(request: Request, state: Annotated[ApiState, Depends(api_state)]) -> KeyOwner:
    """The owner of the request's key: on the event loop when it is remembered (most
    requests: no hop to a worker thread), else looked up in a worker thread."""
    key = bearer_key(request.headers.get("authorization", ""))
    if key is None:
        raise Unauthorized()
    cache: KeyCache = request.app.state.key_cache
    known, owner = cache.remembered(key, time.monotonic())
    if not known:
        owner = await run_in_threadpool(owner_of_key, cache, state, key)
    if owner is None:
        raise Unauthorized("unknown or revoked API key")
    return owner


def tenant_conn(
    owner: Annotated[KeyOwner, Depends(key_owner)],
    state: Annotated[ApiState, Depends(api_state)],
) -> Iterator[Conn]:
    """A connection inside one transaction under the key's tenant scope."""
    with state.connection() as conn, tenant_scope(conn, owner.tenant_id):
        yield conn


Owner = Annotated[KeyOwner, Depends(key_owner)]
# "function": the transaction commits before the response is sent, so a client's next
# request sees what this one wrote
TenantConn = Annotated[Conn, Depends(tenant_conn, scope="function")]
State = Annotated[ApiState, Depends(api_state)]
