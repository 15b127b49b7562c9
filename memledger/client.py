"""A typed Python client of the memledger HTTP API (``/v1``), sync and async, over httpx.

The request and response models are the server's own (:mod:`ops.api.models`), so a body
is checked before it is sent and every answer comes back typed::

    from memledger.client import Client

    with Client("http://127.0.0.1:8080", api_key) as ml:
        ml.append_events([{...}, {...}])
        bundle = ml.context("Book me a flight to Berlin", user_id="maya", agent_id="atlas")
        print(bundle.text)

Errors are raised typed, from the API's error body (``{"error", "message", "fields"}``):
:class:`NotFound` (404), :class:`InvalidRequest` (422), :class:`Conflict` (409),
:class:`Unauthorized` (401), :class:`TooManyRequests` (429), :class:`Unavailable` (503),
each an :class:`ApiError` with ``status``, ``error``, ``message`` and ``fields``.

A request that could not reach the server, or that it answered 503 (the database or the
queue is away), is sent again with exponential backoff (``Retry-After`` when the server
gives one, up to ``retry.max_wait``), ``retry.attempts`` times in all. That is safe:
appended events carry their ids, so a repeat is a duplicate, never a second copy; memory
writes (:meth:`Client.remember`) send an ``Idempotency-Key``, the same on every attempt.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from ops.api.models import (
    CloseOut,
    ContextIn,
    ContextOut,
    DeletedOut,
    EntryEditIn,
    EntryOut,
    EventsIn,
    EventsOut,
    HistoryOut,
    MaintenanceOut,
    MemoryAddIn,
    ProfileRowOut,
    ReviewIn,
    SearchIn,
    SearchOut,
    SkillOut,
)

__all__ = [
    "ApiError",
    "AsyncClient",
    "Client",
    "Conflict",
    "ContextOut",
    "EntryOut",
    "EventsOut",
    "InvalidRequest",
    "NotFound",
    "Retry",
    "SearchOut",
    "SkillOut",
    "TooManyRequests",
    "Unauthorized",
    "Unavailable",
]

T = TypeVar("T")
Json = dict[str, Any]


class ApiError(Exception):
    """The API refused the request: its status and error body."""

    def __init__(self, status: int, error: str, message: str, fields: Mapping[str, Any]):
        super().__init__(f"{status} {error}: {message}")
        self.status, self.error, self.message, self.fields = status, error, message, dict(fields)


class Unauthorized(ApiError):
    """401: no key, or a key unknown or revoked."""


class NotFound(ApiError):
    """404: the tenant has no such entry, session, skill or user."""


class Conflict(ApiError):
    """409: the request conflicts with the stored state."""


class InvalidRequest(ApiError):
    """422: a value the API refuses; ``fields`` names it."""


class TooManyRequests(ApiError):
    """429: a maintenance job asked again within its interval."""


class Unavailable(ApiError):
    """503 after every retry (the database or the queue cannot answer now), or no answer
    at all (``status`` 0: the server unreachable)."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized, 404: NotFound, 409: Conflict, 422: InvalidRequest,
    429: TooManyRequests, 503: Unavailable,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Retry:
    """How often and how long to retry a request that could not get an answer."""

    attempts: int = 5  # in all, the first included
    backoff: float = 0.25  # seconds before the second attempt, doubled after each
    max_wait: float = 10.0  # the longest wait between two attempts

    def wait(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None and retry_after.isdigit():
            return min(float(retry_after), self.max_wait)
        return min(self.backoff * 2**attempt, self.max_wait)


@dataclass(frozen=True, slots=True)
class _Call(Generic[T]):
    """One API operation: what to send, and how to read the answer."""

    method: str
    path: str
    read: Callable[[Any], T]
    body: BaseModel | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


def _model(model: type[T]) -> Callable[[Any], T]:
    adapter = TypeAdapter(model)
    return adapter.validate_python


def _segment(value: str) -> str:
    return quote(value, safe="")


def _events(events: Iterable[Mapping[str, Any]]) -> _Call[EventsOut]:
    body = EventsIn(events=[_plain(e) for e in events])
    return _Call("POST", "/v1/events", _model(EventsOut), body)


def _plain(event: Mapping[str, Any]) -> Json:
    """An event as JSON: times as ISO 8601 text, fields given as None left out."""
    return {
        k: v.isoformat() if isinstance(v, datetime) else v
        for k, v in event.items()
        if v is not None
    }


class _Operations:
    """Every ``/v1`` operation as a :class:`_Call`; the clients send them."""

    @staticmethod
    def append_events(events: Iterable[Mapping[str, Any]]) -> _Call[EventsOut]:
        return _events(events)

    @staticmethod
    def close_session(session_id: int) -> _Call[CloseOut]:
        return _Call("POST", f"/v1/sessions/{session_id}/close", _model(CloseOut))

    @staticmethod
    def search(query: str, **scope: Any) -> _Call[SearchOut]:
        return _Call("POST", "/v1/search", _model(SearchOut), SearchIn(query=query, **scope))

    @staticmethod
    def context(query: str, **scope: Any) -> _Call[ContextOut]:
        return _Call("POST", "/v1/context", _model(ContextOut), ContextIn(query=query, **scope))

    @staticmethod
    def profile(user_id: str) -> _Call[list[ProfileRowOut]]:
        path = f"/v1/users/{_segment(user_id)}/profile"
        return _Call("GET", path, _model(list[ProfileRowOut]))

    @staticmethod
    def skills(agent_id: str, status: str | None) -> _Call[list[SkillOut]]:
        params = {"status": status} if status else {}
        path = f"/v1/agents/{_segment(agent_id)}/skills"
        return _Call("GET", path, _model(list[SkillOut]), params=params)

    @staticmethod
    def review_skill(
        skill_id: int, decision: Literal["publish", "reject"], reviewer: str, reason: str | None
    ) -> _Call[SkillOut]:
        body = ReviewIn(decision=decision, reviewer=reviewer, reason=reason)
        return _Call("POST", f"/v1/skills/{skill_id}/review", _model(SkillOut), body)

    @staticmethod
    def entry(entry_id: int) -> _Call[EntryOut]:
        return _Call("GET", f"/v1/entries/{entry_id}", _model(EntryOut))

    @staticmethod
    def history(entry_id: int) -> _Call[list[HistoryOut]]:
        return _Call("GET", f"/v1/entries/{entry_id}/history", _model(list[HistoryOut]))

    @staticmethod
    def remember(
        user_id: str, messages: list[Json], channel_id: str | None, idempotency_key: str | None
    ) -> _Call[EventsOut]:
        body = MemoryAddIn(user_id=user_id, messages=messages, channel_id=channel_id)
        key = idempotency_key or str(uuid.uuid4())  # one key for every attempt of this call
        headers = {"Idempotency-Key": key}
        return _Call("POST", "/v1/memories", _model(EventsOut), body, headers=headers)

    @staticmethod
    def edit_entry(entry_id: int, statement: str) -> _Call[EntryOut]:
        body = EntryEditIn(statement=statement)
        return _Call("PUT", f"/v1/entries/{entry_id}", _model(EntryOut), body)

    @staticmethod
    def delete_entry(entry_id: int) -> _Call[DeletedOut]:
        return _Call("DELETE", f"/v1/entries/{entry_id}", _model(DeletedOut))

    @staticmethod
    def forget_user(user_id: str) -> _Call[DeletedOut]:
        return _Call("DELETE", f"/v1/users/{_segment(user_id)}/entries", _model(DeletedOut))

    @staticmethod
    def maintenance(job: str) -> _Call[MaintenanceOut]:
        return _Call("POST", f"/v1/maintenance/{_segment(job)}", _model(MaintenanceOut))


_OPS = _Operations()


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": "memledger-client"}


def _request(call: _Call[Any]) -> dict[str, Any]:
    content = call.body.model_dump_json(exclude_none=True) if call.body is not None else None
    headers = {**call.headers, **({"Content-Type": "application/json"} if content else {})}
    return {"method": call.method, "url": call.path, "content": content, "headers": headers,
            "params": dict(call.params)}  # fmt: skip


def _again(retry: Retry, attempt: int, response: httpx.Response | None) -> float | None:
    """The seconds to wait before sending again, or None: answer now. Sent again: what
    got no answer (the server unreachable, the connection lost), or a 503."""
    last = attempt + 1 >= retry.attempts
    if last or (response is not None and response.status_code != 503):
        return None
    return retry.wait(attempt, None if response is None else response.headers.get("Retry-After"))


def _answer(call: _Call[T], response: httpx.Response | None) -> T:
    """The answer read, or the API's error raised typed; no answer at all: Unavailable."""
    if response is None:
        raise Unavailable(0, "Unreachable", "the server did not answer", {})
    if response.is_success:
        return call.read(response.json())
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    kind = _BY_STATUS.get(response.status_code, ApiError)
    error = str(body.get("error", response.reason_phrase))
    raise kind(response.status_code, error, str(body.get("message", response.text[:300])),
               body.get("fields") or {})  # fmt: skip


class Client:
    """The API, synchronously. A context manager; or call :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retry: Retry = Retry(),
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.retry = retry
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: _Call[T]) -> T:
        """Send ``call``, retrying as :class:`Retry` says; its answer, or a typed error."""
        attempt = 0
        while True:
            try:
                response: httpx.Response | None = self._http.request(**_request(call))
            except httpx.TransportError:
                response = None
            wait = _again(self.retry, attempt, response)
            if wait is None:
                return _answer(call, response)
            time.sleep(wait)
            attempt += 1

    def append_events(self, events: Iterable[Mapping[str, Any]]) -> EventsOut:
        """Append events (docs/ingest-format.md); a batch is stored whole or not at all."""
        return self.send(_OPS.append_events(events))

    def close_session(self, session_id: int) -> CloseOut:
        return self.send(_OPS.close_session(session_id))

    def search(self, query: str, **scope: Any) -> SearchOut:
        """Entries for ``query``: ``user_id``, ``agent_id``, ``limit``, ``kinds``,
        ``since``, ``until``, ``history`` as in ``POST /v1/search``."""
        return self.send(_OPS.search(query, **scope))

    def context(self, query: str, **scope: Any) -> ContextOut:
        """The context bundle: ``user_id``, ``agent_id``, ``channel_id``,
        ``budget_tokens``, ``include_unreviewed_skills`` as in ``POST /v1/context``."""
        return self.send(_OPS.context(query, **scope))

    def profile(self, user_id: str) -> list[ProfileRowOut]:
        return self.send(_OPS.profile(user_id))

    def skills(self, agent_id: str, status: str | None = None) -> list[SkillOut]:
        return self.send(_OPS.skills(agent_id, status))

    def review_skill(
        self,
        skill_id: int,
        decision: Literal["publish", "reject"],
        reviewer: str,
        reason: str | None = None,
    ) -> SkillOut:
        return self.send(_OPS.review_skill(skill_id, decision, reviewer, reason))

    def entry(self, entry_id: int) -> EntryOut:
        return self.send(_OPS.entry(entry_id))

    def history(self, entry_id: int) -> list[HistoryOut]:
        return self.send(_OPS.history(entry_id))

    def remember(
        self,
        user_id: str,
        messages: list[Json],
        *,
        channel_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> EventsOut:
        """Remember ``messages`` (``{"role", "content"}``) of a user, as a session of
        their own; retried with one ``Idempotency-Key``, so it is stored once."""
        return self.send(_OPS.remember(user_id, messages, channel_id, idempotency_key))

    def edit_entry(self, entry_id: int, statement: str) -> EntryOut:
        return self.send(_OPS.edit_entry(entry_id, statement))

    def delete_entry(self, entry_id: int) -> DeletedOut:
        return self.send(_OPS.delete_entry(entry_id))

    def forget_user(self, user_id: str) -> DeletedOut:
        """Delete every entry of a user (kept as history)."""
        return self.send(_OPS.forget_user(user_id))

    def maintenance(self, job: str) -> MaintenanceOut:
        return self.send(_OPS.maintenance(job))


class AsyncClient:
    """The API, for asyncio: the methods of :class:`Client`, awaited."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retry: Retry = Retry(),
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            try:
                response: httpx.Response | None = await self._http.request(**_request(call))
            except httpx.TransportError:
                response = None
            wait = _again(self.retry, attempt, response)
            if wait is None:
                return _answer(call, response)
            await asyncio.sleep(wait)
            attempt += 1

    async def append_events(self, events: Iterable[Mapping[str, Any]]) -> EventsOut:
        return await self.send(_OPS.append_events(events))

    async def close_session(self, session_id: int) -> CloseOut:
        return await self.send(_OPS.close_session(session_id))

    async def search(self, query: str, **scope: Any) -> SearchOut:
        return await self.send(_OPS.search(query, **scope))

    async def context(self, query: str, **scope: Any) -> ContextOut:
        return await self.send(_OPS.context(query, **scope))

    async def profile(self, user_id: str) -> list[ProfileRowOut]:
        return await self.send(_OPS.profile(user_id))

    async def skills(self, agent_id: str, status: str | None = None) -> list[SkillOut]:
        return await self.send(_OPS.skills(agent_id, status))

    async def review_skill(
        self,
        skill_id: int,
        decision: Literal["publish", "reject"],
        reviewer: str,
        reason: str | None = None,
    ) -> SkillOut:
        return await self.send(_OPS.review_skill(skill_id, decision, reviewer, reason))

    async def entry(self, entry_id: int) -> EntryOut:
        return await self.send(_OPS.entry(entry_id))

    async def history(self, entry_id: int) -> list[HistoryOut]:
        return await self.send(_OPS.history(entry_id))

    async def remember(
        self,
        user_id: str,
        messages: list[Json],
        *,
        channel_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> EventsOut:
        return await self.send(_OPS.remember(user_id, messages, channel_id, idempotency_key))

    async def edit_entry(self, entry_id: int, statement: str) -> EntryOut:
        return await self.send(_OPS.edit_entry(entry_id, statement))

    async def delete_entry(self, entry_id: int) -> DeletedOut:
        return await self.send(_OPS.delete_entry(entry_id))

    async def forget_user(self, user_id: str) -> DeletedOut:
        return await self.send(_OPS.forget_user(user_id))

    async def maintenance(self, job: str) -> MaintenanceOut:
        return await self.send(_OPS.maintenance(job))
