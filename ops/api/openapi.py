"""The OpenAPI document, completed with what the application adds to its routes.

FastAPI documents what each route declares. The statuses that come from around the route —
the key check, the body limit, the framework's parsing and routing, the database — are
added here from what each route takes: a key (401, 503 and the bearer scheme), a body
(400, 413, 422), parameters (422), a path parameter (405: one holding a ``/`` can name a path
another route serves with other methods). A status a route declares itself is left alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts

from ops.api.models import ErrorOut

SCHEME = "bearer"
SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "An API key of the tenant (`memledger keys create`), sent as "
    "`Authorization: Bearer <key>` (Mem0 clients' `Token <key>` is taken too).",
}
STATUSES = {
    400: "the body is not JSON text (e.g. not UTF-8)",
    401: "missing, unknown or revoked API key",
    405: "the path (a path parameter holding '/' can name another route's path) does not "
    "take this method; `Allow` lists those it takes",
    413: "the request body is over 8 MiB",
    422: "invalid input; the message names the field",
    503: "the database cannot answer now (down, restarting, or every connection busy): "
    "retry after `Retry-After` seconds",
}
RETRY_AFTER = {
    "description": "seconds to wait before retrying",
    "required": True,
    "schema": {"type": "integer", "minimum": 1},
}


def complete_openapi(app: FastAPI, *, authenticated_by: Callable[..., Any]) -> None:
    """Serve ``app``'s document with every status each route can answer; a route that
    depends on ``authenticated_by`` takes an API key."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            _complete(document, list(iter_route_contexts(app.routes)), authenticated_by)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _complete(
    document: dict[str, Any], routes: list[RouteContext], authenticated_by: Callable[..., Any]
) -> None:
    components = document.setdefault("components", {})
    components.setdefault("schemas", {}).setdefault("ErrorOut", ErrorOut.model_json_schema())
    components["securitySchemes"] = {SCHEME: SECURITY_SCHEME}
    for route in routes:  # as included in the application (with the routers' prefixes)
        if not isinstance(route.original_route, APIRoute) or not route.include_in_schema:
            continue
        keyed = _depends_on(route.dependant, authenticated_by)
        for method in route.methods or ():
            operation = document["paths"][route.path_format][method.lower()]
            if keyed:
                operation["security"] = [{SCHEME: []}]
            responses = operation.setdefault("responses", {})
            for status in _statuses(route, keyed):
                responses.setdefault(str(status), _error(status))


def _statuses(route: RouteContext, keyed: bool) -> set[int]:
    dependant = route.dependant
    found = set()
    if route.body_field is not None:
        found |= {400, 413, 422}
    if dependant.path_params:
        found |= {405, 422}
    if dependant.query_params or dependant.header_params or dependant.cookie_params:
        found.add(422)
    if keyed:
        found |= {401, 503}
    return found


def _depends_on(dependant: Dependant, call: Callable[..., Any]) -> bool:
    return dependant.call is call or any(_depends_on(d, call) for d in dependant.dependencies)


def _error(status: int) -> dict[str, Any]:
    schema = {"$ref": "#/components/schemas/ErrorOut"}
    response: dict[str, Any] = {
        "description": STATUSES[status],
        "content": {"application/json": {"schema": schema}},
    }
    if status == 503:
        response["headers"] = {"Retry-After": RETRY_AFTER}
    return response
