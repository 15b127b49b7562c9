"""``create_app``: the FastAPI application, its auth, error mapping and body-size limit.

Every authenticated request runs in one transaction under its key's tenant scope
(``SET LOCAL ROLE memledger_app`` + ``app.tenant_id``), so row-level security applies to
everything it touches. Errors are JSON ``{"error", "message", "fields"}``: 401 without a
valid key, 404 for what the tenant does not have, 405 (with ``Allow``) for a method the path
does not take, 413 for an oversized body, 422 for bad input (naming the field) — never a 500
for bad input — and 503 with ``Retry-After`` while the database cannot answer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Annotated, Any

import psycopg
import redis
import structlog
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.routing import iter_route_contexts
from prometheus_client import generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ledger.db import Conn, tenant_scope
from ledger.errors import InvalidEvent, InvalidScope, MemledgerError, SessionNotFound
from materializers.api import InvalidReview, InvalidSkillStatus, SkillNotFound
from observations.edits import EntryNotFound, InvalidEdit
from ops.api.idempotency import IdempotencyKeyReused
from ops.api.keys import KeyCache, KeyOwner, resolve_key
from ops.api.openapi import complete_openapi
from ops.api.state import ApiState
from retrieval.search import InvalidQuery

log = structlog.get_logger(__name__)
MAX_BODY_BYTES = 8 * 1024 * 1024
RETRY_AFTER_SECONDS = 1  # told to clients while the database cannot answer
READY_PROBE_SECONDS = 0.5  # /readyz waits at most this long for a database connection
# SQLSTATE classes of a database that cannot answer now, whatever the request: connection
# failures, insufficient resources (too many connections), operator intervention (shutting
# down, starting up, cancelled), transaction rollback (deadlock, serialization)
UNAVAILABLE_CLASSES = ("08", "53", "57", "40")
NOT_FOUND = (SessionNotFound, EntryNotFound, SkillNotFound)
BAD_INPUT = (InvalidEvent, InvalidScope, InvalidQuery, InvalidEdit, InvalidReview,
             InvalidSkillStatus, IdempotencyKeyReused)  # fmt: skip


class Unauthorized(MemledgerError):
    """A valid API key is required: send `Authorization: Bearer <key>` (or `Token <key>`)."""


def create_app(state: ApiState, *, on_shutdown: Callable[[], object] | None = None) -> FastAPI:
    """The application over ``state``; ``on_shutdown`` runs when the server stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
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
    app.state.key_cache = KeyCache(ttl=state.settings.api_key_cache_seconds)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    _error_handlers(app)

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

    from ops.api import mem0, routes  # the routers use the dependencies below

    app.include_router(routes.router)
    app.include_router(mem0.router)
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


async def api_state(request: Request) -> ApiState:
    """The shared state (async: it does no I/O, so it need not hop to a worker thread)."""
    state: ApiState = request.app.state.memledger
    return state


def key_owner(request: Request, state: Annotated[ApiState, Depends(api_state)]) -> KeyOwner:
    """The owner of the request's key: remembered for a few seconds (see KeyCache), else
    looked up."""
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() not in ("bearer", "token") or not key.strip():
        raise Unauthorized()

    def lookup(key: str) -> KeyOwner | None:
        with state.connection() as conn:
            conn.autocommit = True  # one read alone: no BEGIN and COMMIT round trips
            try:
                return resolve_key(conn, key)
            finally:
                conn.autocommit = False

    cache: KeyCache = request.app.state.key_cache
    owner = cache.resolve(key.strip(), time.monotonic(), lookup)
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


def _error(status: int, exc: Exception, fields: dict[str, Any] | None = None) -> JSONResponse:
    body = {
        "error": type(exc).__name__,
        "message": str(exc),
        "fields": {k: _plain(v) for k, v in (fields or {}).items()},
    }
    return JSONResponse(body, status_code=status)


def _plain(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemledgerError)
    def memledger_error(request: Request, exc: MemledgerError) -> JSONResponse:
        if isinstance(exc, Unauthorized):
            return _error(401, exc)
        if isinstance(exc, NOT_FOUND):
            return _error(404, exc, exc.fields)
        return _error(422 if isinstance(exc, BAD_INPUT) else 400, exc, exc.fields)

    @app.exception_handler(psycopg.DataError)
    def data_error(request: Request, exc: psycopg.DataError) -> JSONResponse:
        """A value PostgreSQL refuses (a NUL character, an out-of-range time): bad input
        the validation above should have named; still never a 500."""
        return _error(422, exc)

    @app.exception_handler(psycopg.OperationalError)
    def database_unavailable(request: Request, exc: psycopg.OperationalError) -> JSONResponse:
        """The database cannot answer now (down, restarting, out of connections; the pool's
        PoolTimeout is one of these): 503, to be retried. Any other OperationalError
        (a program limit the request hit) is the server's error."""
        if exc.sqlstate is not None and exc.sqlstate[:2] not in UNAVAILABLE_CLASSES:
            raise exc
        log.warning("database_unavailable", path=request.url.path, error=str(exc))
        body = {
            "error": "DatabaseUnavailable",
            "message": f"the database cannot answer now: retry in {RETRY_AFTER_SECONDS} s",
            "fields": {},
        }
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return JSONResponse(body, status_code=503, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """The framework's own refusals (no such route, a body it cannot parse) in the shape
        of every other error; a 405 lists every method the path takes (the framework names
        those of the first route matching the path only)."""
        name = HTTPStatus(exc.status_code).phrase.replace(" ", "").replace("-", "")
        body = {"error": name, "message": str(exc.detail), "fields": {}}
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    @app.exception_handler(RequestValidationError)
    def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        body = {
            "error": "InvalidRequest",
            "message": f"{where}: {first.get('msg', 'invalid')}" if first else "invalid request",
            "fields": {"field": where, "errors": len(errors)},
        }
        return JSONResponse(body, status_code=422)


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """The methods of every route whose path matches the request's."""
    methods: set[str] = set()
    for route in iter_route_contexts(app.routes):
        match, _ = route.matches(dict(scope))
        if match != Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)


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
