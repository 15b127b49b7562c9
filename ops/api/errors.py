"""Errors over HTTP: one JSON shape, and the status from the error's family.

Every error is ``{"error", "message", "fields"}``. A memledger error's status comes from
its family (:mod:`ledger.errors`): :class:`NotFound` 404, :class:`InvalidInput` 422,
:class:`Conflict` 409, :class:`Unavailable` 503 with ``Retry-After``; a missing or unknown
key is 401; any other memledger error is the server's own (500). Answers to the Mem0
routes also carry ``detail`` (the message), which is where Mem0's clients read it from.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import psycopg
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Scope

from ledger.errors import (
    Conflict,
    InvalidInput,
    MemledgerError,
    NotFound,
    Unavailable,
)
from ops.api.models import ErrorOut

log = structlog.get_logger(__name__)
RETRY_AFTER_SECONDS = 1  # told to clients while the database or a service cannot answer
# SQLSTATE classes of a database that cannot answer now, whatever the request: connection
# failures, insufficient resources (too many connections), operator intervention (shutting
# down, starting up, cancelled), transaction rollback (deadlock, serialization)
UNAVAILABLE_CLASSES = ("08", "53", "57", "40")
FAMILY_STATUS: tuple[tuple[type[MemledgerError], int], ...] = (
    (NotFound, 404),
    (InvalidInput, 422),
    (Conflict, 409),
    (Unavailable, 503),
)
MEM0_TAG = "mem0"  # the tag of the Mem0-compatible routes
# the errors every /v1 route may answer, for the OpenAPI document
ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "missing or unknown API key"},
    404: {"model": ErrorOut, "description": "not found in this tenant"},
    422: {"model": ErrorOut, "description": "invalid input; the message names the field"},
}


class Unauthorized(MemledgerError):
    """A valid API key is required: send `Authorization: Bearer <key>` (or `Token <key>`)."""


def status_of(exc: MemledgerError) -> int:
    """The HTTP status of a memledger error: its family's, 401 for a key, else 500."""
    if isinstance(exc, Unauthorized):
        return 401
    return next((status for family, status in FAMILY_STATUS if isinstance(exc, family)), 500)


def error_response(
    request: Request,
    status: int,
    name: str,
    message: str,
    fields: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    """The error in the API's JSON shape; on a page of a prefix with its own error pages
    (the console's), that page."""
    body: dict[str, Any] = {
        "error": name,
        "message": message,
        "fields": {k: _plain(v) for k, v in (fields or {}).items()},
    }
    pages = getattr(request.app.state, "error_pages", None)  # (path prefix, renderer)
    if pages is not None and request.url.path.startswith(pages[0]):
        return pages[1](request, status, message)
    route = request.scope.get("route")
    if MEM0_TAG in (getattr(route, "tags", None) or ()):
        body["detail"] = message
    return JSONResponse(body, status_code=status, headers=headers)


def _plain(value: Any) -> Any:
    """A field's value as JSON: scalars, and lists and objects of them, as they are."""
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def install_error_handlers(app: FastAPI) -> None:
    """Every error the application can answer, in the one shape."""

    @app.exception_handler(MemledgerError)
    def memledger_error(request: Request, exc: MemledgerError) -> Response:
        status = status_of(exc)
        if status == 500:
            log.error("server_error", path=request.url.path, error=str(exc))
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else None
        fields = exc.fields if status != 401 else None
        return error_response(request, status, type(exc).__name__, str(exc), fields, headers)

    @app.exception_handler(psycopg.DataError)
    def data_error(request: Request, exc: psycopg.DataError) -> Response:
        """A value PostgreSQL refuses (a NUL character, an out-of-range time): bad input
        the validation above should have named; still never a 500."""
        return error_response(request, 422, type(exc).__name__, str(exc))

    @app.exception_handler(psycopg.OperationalError)
    def database_unavailable(request: Request, exc: psycopg.OperationalError) -> Response:
        """The database cannot answer now (down, restarting, out of connections; the pool's
        PoolTimeout is one of these): 503, to be retried. Any other OperationalError
        (a program limit the request hit) is the server's error."""
        if exc.sqlstate is not None and exc.sqlstate[:2] not in UNAVAILABLE_CLASSES:
            raise exc
        log.warning("database_unavailable", path=request.url.path, error=str(exc))
        message = f"the database cannot answer now: retry in {RETRY_AFTER_SECONDS} s"
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return error_response(request, 503, "DatabaseUnavailable", message, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """The framework's own refusals (no such route, a body it cannot parse) in the shape
        of every other error; a 405 lists every method the path takes (the framework names
        those of the first route matching the path only)."""
        name = HTTPStatus(exc.status_code).phrase.replace(" ", "").replace("-", "")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
        return error_response(request, exc.status_code, name, str(exc.detail), headers=headers)

    @app.exception_handler(RequestValidationError)
    def validation_error(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        message = f"{where}: {first.get('msg', 'invalid')}" if first else "invalid request"
        fields = {"field": where, "errors": len(errors)}
        return error_response(request, 422, "InvalidRequest", message, fields)


def allowed_methods(app: FastAPI, scope: Scope) -> list[str]:
    """The methods of every route whose path matches the request's."""
    methods: set[str] = set()
    for route in iter_route_contexts(app.routes):
        match, _ = route.matches(dict(scope))
        if match != Match.NONE:
            methods |= route.methods or set()
    return sorted(methods)
