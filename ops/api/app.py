"""``create_app``: the FastAPI application: its routers, operations endpoints, error
mapping and body-size limit.

Everything an authenticated request reads or writes runs under its key's tenant scope
(``SET LOCAL ROLE memledger_app`` + ``app.tenant_id``, see :mod:`ops.api.deps`): most
routes in one transaction their dependency opens, the ingest, search and context routes
in the transactions of the calls they make. So row-level security applies to everything
a request touches. Errors are JSON ``{"error",
"message", "fields"}`` with the status of the error's family (:mod:`ops.api.errors`): 401
without a valid key, 404 for what the tenant does not have, 405 (with ``Allow``) for a
method the path does not take, 413 for an oversized body, 422 for bad input (naming the
field) — never a 500 for bad input — and 503 with ``Retry-After`` while the database
cannot answer.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import redis
from fastapi import FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send

from ops.api import console
from ops.api.deps import key_owner, owner_of_key
from ops.api.errors import install_error_handlers
from ops.api.keys import KeyCache, KeyOwner
from ops.api.mcp import McpTenant, build_mcp, http_routes
from ops.api.openapi import complete_openapi
from ops.api.routers import mem0, v1
from ops.api.state import ApiState

MAX_BODY_BYTES = 8 * 1024 * 1024
READY_PROBE_SECONDS = 0.5  # /readyz waits at most this long for a database connection


def create_app(state: ApiState, *, on_shutdown: Callable[[], object] | None = None) -> FastAPI:
    """The application over ``state``; ``on_shutdown`` runs when the server stops."""

    key_cache = KeyCache(ttl=state.settings.api_key_cache_seconds)

    def lookup(key: str) -> KeyOwner | None:
        return owner_of_key(key_cache, state, key)

    mcp_server = build_mcp(state, McpTenant(lookup))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # What the process holds before its first request (modules, the model, the app)
        # lives as long as the process: out of the cyclic collector's sight, a collection
        # looks at what requests allocate, not at every object loaded at start.
        gc.freeze()
        try:
            async with mcp_server.session_manager.run():
                yield
        finally:
            if on_shutdown is not None:
                on_shutdown()

    app = FastAPI(
        title="memledger",
        version="0.1.0",
        description="Long-term memory for LLM agents: ingest, context, memories, maintenance.",
        lifespan=lifespan,
    )
    app.state.memledger = state
    app.state.key_cache = key_cache
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    install_error_handlers(app)
    app.state.error_pages = ("/console", console.error_page)  # errors there are pages
    app.add_exception_handler(console.ConsoleRefused, console.refused)

    @app.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["operations"], responses={503: {"description": "not ready"}})
    def readyz() -> JSONResponse:
        checks = {"database": _database_ok(state), "redis": state.redis_ping()}
        code = 200 if all(checks.values()) else 503
        return JSONResponse({"ready": code == 200, **checks}, status_code=code)

    @app.get(
        "/metrics",
        tags=["operations"],
        response_class=PlainTextResponse,
        responses={503: {"description": "the metrics store (Redis) is unreachable"}},
    )
    def metrics() -> Response:
        """The deployment's metrics (every process's counts, from Redis), Prometheus text."""
        try:
            text = generate_latest(state.metrics.registry)
        except redis.RedisError as exc:
            return PlainTextResponse(f"metrics store unreachable: {exc}\n", status_code=503)
        return Response(text, media_type="text/plain")

    app.include_router(v1.router)
    app.include_router(mem0.router)
    app.include_router(console.router)
    app.router.routes.extend(http_routes(mcp_server, lookup))  # MCP at /mcp
    complete_openapi(app, authenticated_by=key_owner)
    return app


def _database_ok(state: ApiState) -> bool:
    """Whether the database answers, found out within about READY_PROBE_SECONDS."""
    try:
        with state.pool.connection(timeout=READY_PROBE_SECONDS) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before they are read whole."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None:  # the server reads exactly that many bytes
            if declared.isdigit() and int(declared) > self.limit:
                await _too_large(send, self.limit)
                return
            await self.app(scope, receive, send)
            return
        # A body of unknown length (chunked) is read here, up to the limit, and handed on
        # whole: refused inside the app, it would be a 400 from the framework's reader.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                await _too_large(send, self.limit)
                return
            if not message.get("more_body", False):
                break
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Any:
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    body = (
        b'{"error":"PayloadTooLarge","message":"request body over '
        + str(limit).encode()
        + b' bytes","fields":{}}'
    )
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})
