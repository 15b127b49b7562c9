"""memledger as an MCP server (Model Context Protocol, the official ``mcp`` SDK): the tools
an agent needs to remember and recall, over the same use cases and library calls as the
HTTP API, so isolation, validation and errors are the API's.

Two transports: streamable HTTP, mounted by ``memledger serve`` at ``/mcp`` and
authenticated like every route (``Authorization: Bearer <key>``: each call works as that
key's tenant), and stdio (``memledger mcp``) for a local assistant, working as the tenant
given by ``--tenant`` or ``MEMLEDGER_TENANT``.

Tools (arguments named as in the HTTP API): ``remember``, ``recall``, ``search``,
``forget``, ``profile``. Resources: ``memledger://users/{user_id}/profile`` and
``memledger://agents/{agent_id}/skills`` (published skills).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as AsgiScope

from ledger.db import Conn, tenant_scope
from ledger.errors import MemledgerError
from ledger.scope import ID_PATTERN
from materializers.api import get_profile, list_skills
from ops.api.deps import bearer_key
from ops.api.keys import KeyOwner
from ops.api.state import ApiState
from ops.usecases.edit import forget_entry, forget_owner
from ops.usecases.remember import chat_messages, default_channel, remember
from retrieval.bundle import render_text
from retrieval.context import ContextRequest, build_context
from retrieval.search import Scope, search

MCP_PATH = "/mcp"
Id = Annotated[str, Field(pattern=ID_PATTERN, max_length=128)]
INSTRUCTIONS = """\
Long-term memory of the people you talk with, and of what worked for you before.
Before you answer, call `recall` with the user's message (and your user_id and agent_id):
it returns what memory holds that is relevant, dated and with its sources, within a token
budget. After the exchange, call `remember` with the user's messages (and your replies):
memory is built from them in the background, so do not expect to recall them at once.
Use `search` for a list of individual memories, `profile` for what is currently known
about a user, `forget` when a user asks you to forget something or everything."""


class _AfterCommit:
    """What a use case defers (queueing builds, projections), run once its transaction
    has committed, as the API's background tasks are."""

    def __init__(self) -> None:
        self._calls: list[Callable[[], object]] = []

    def add(self, call: Callable[..., object], *args: Any) -> None:
        self._calls.append(lambda: call(*args))

    def run(self) -> None:
        for call in self._calls:
            call()


KeyLookup = Callable[[str], KeyOwner | None]


class McpTenant:
    """How each call finds its tenant: the HTTP request's API key (through ``lookup``),
    or a fixed one (stdio)."""

    def __init__(self, lookup: KeyLookup | None = None, fixed: str | None = None) -> None:
        self.lookup, self.fixed = lookup, fixed

    def of(self, ctx: Context) -> tuple[str, str]:
        """(tenant, actor) of the call."""
        if self.fixed is not None:
            return self.fixed, "mcp:stdio"
        request = ctx.request_context.request
        header = request.headers.get("authorization", "") if request is not None else ""
        key = bearer_key(header, ("bearer",))
        if key is None or self.lookup is None:
            raise ToolError("no API key: send Authorization: Bearer <key>")
        owner = self.lookup(key)
        if owner is None:
            raise ToolError("unknown or revoked API key")
        return owner.tenant_id, f"mcp:{owner.name or owner.key_id}"


def build_mcp(state: ApiState, tenant: McpTenant) -> MCPServer:
    """The MCP server over ``state``; ``tenant`` says whose memory each call sees."""
    server = MCPServer(name="memledger", instructions=INSTRUCTIONS)

    @contextmanager
    def scoped(ctx: Context) -> Iterator[tuple[Conn, str, str]]:
        tenant_id, actor = tenant.of(ctx)
        try:
            with state.connection() as conn, tenant_scope(conn, tenant_id):
                yield conn, tenant_id, actor
        except MemledgerError as exc:  # the API's own refusal, named
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    @server.tool(name="remember")
    def remember_(
        user_id: Id,
        messages: Annotated[list[dict[str, str]], Field(min_length=1, max_length=1000)],
        ctx: Context,
        agent_id: Id | None = None,
    ) -> dict[str, Any]:
        """Remember what was said in a conversation with a user: `messages` is a list of
        {"role": "user" | "assistant", "content": "..."}. Memory is built from them in the
        background (facts about the user, what you did for them), each fact traceable to
        these messages. Send each message once: a message sent again is remembered again."""
        later = _AfterCommit()
        with scoped(ctx) as (conn, tenant_id, _):
            done = remember(
                conn, tenant_id, chat_messages(messages),
                channel=default_channel("mcp", user_id), speaker=user_id,
                assistant=agent_id or "assistant", metadata={}, deps=state, defer=later.add,
            )  # fmt: skip
        later.run()
        result = done.ingested.result
        return {"accepted": result.accepted, "duplicates": result.duplicates,
                "sessions_closed": list(done.sessions_closed)}  # fmt: skip

    @server.tool()
    def recall(
        query: Annotated[str, Field(min_length=1, max_length=4000)],
        ctx: Context,
        user_id: Id | None = None,
        agent_id: Id | None = None,
        budget_tokens: Annotated[int, Field(ge=50, le=100_000)] | None = None,
    ) -> str:
        """What memory holds that is relevant to `query` (usually the user's latest
        message), as text to put in your prompt: the user's profile, dated memories with
        their sources, earlier conversations, and your skills for such a task. Give
        user_id to get that user's memory, agent_id to get your own skills."""
        with scoped(ctx) as (conn, tenant_id, _):
            request = ContextRequest(
                scope=Scope(tenant_id, user_id, agent_id),
                query=query,
                budget_tokens=budget_tokens or state.settings.context_budget_tokens,
            )
            bundle = build_context(conn, request, embedder=state.embedder,
                                   counter=state.counter, now=state.clock(),
                                   settings=state.search)  # fmt: skip
        return render_text(bundle)

    @server.tool(name="search")
    def search_(
        query: Annotated[str, Field(min_length=1, max_length=4000)],
        ctx: Context,
        user_id: Id | None = None,
        agent_id: Id | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> list[dict[str, Any]]:
        """Individual memories relevant to `query`, best first, each with its id, kind,
        date, statement and the messages it came from (use the id with `forget`)."""
        with scoped(ctx) as (conn, tenant_id, _):
            hits = search(conn, Scope(tenant_id, user_id, agent_id), query,
                          embedder=state.embedder, now=state.clock(), limit=limit,
                          settings=state.search)  # fmt: skip
        return [
            {"entry_id": h.candidate.entry_id, "kind": h.candidate.kind,
             "owner_id": h.candidate.owner_id, "statement": h.candidate.statement,
             "valid_from": h.candidate.valid_from.isoformat(), "score": round(h.score, 4),
             "source_external_ids": list(h.candidate.source_external_ids)}
            for h in hits
        ]  # fmt: skip

    @server.tool()
    def forget(
        ctx: Context, entry_id: Annotated[int, Field(ge=1)] | None = None, user_id: Id | None = None
    ) -> dict[str, int]:
        """Forget one memory (`entry_id`, from `search`), or everything memory holds about
        a user (`user_id`). Give exactly one of them. What is forgotten is no longer
        recalled; its history is kept for audit."""
        if (entry_id is None) == (user_id is None):
            raise ToolError("give exactly one of entry_id and user_id")
        later = _AfterCommit()
        with scoped(ctx) as (conn, tenant_id, actor):
            if entry_id is not None:
                forget_entry(conn, tenant_id, entry_id, actor=actor, deps=state, defer=later.add)
                deleted = 1
            else:
                assert user_id is not None
                deleted = forget_owner(conn, tenant_id, "user", user_id, actor=actor,
                                       deps=state, defer=later.add)  # fmt: skip
        later.run()
        return {"deleted": deleted}

    @server.tool()
    def profile(user_id: Id, ctx: Context) -> list[dict[str, Any]]:
        """What is currently known about a user: one value per topic (where they live,
        work, what they prefer), each with the statement and how sure memory is."""
        with scoped(ctx) as (conn, tenant_id, _):
            rows = get_profile(conn, tenant_id, user_id)
        return [{"key": r.key, "value": r.value, "statement": r.statement,
                 "confidence": r.confidence, "since": r.valid_from.isoformat()}
                for r in rows]  # fmt: skip

    @server.resource("memledger://users/{user_id}/profile", mime_type="application/json")
    def profile_resource(user_id: str, ctx: Context) -> str:
        """A user's profile: what is currently known about them."""
        return json.dumps(profile(user_id, ctx))

    @server.resource("memledger://agents/{agent_id}/skills", mime_type="application/json")
    def skills_resource(agent_id: str, ctx: Context) -> str:
        """An agent's published skills: the procedures that worked, step by step."""
        with scoped(ctx) as (conn, tenant_id, _):
            skills = list_skills(conn, tenant_id, agent_id=agent_id, status="published")
        return json.dumps([{"goal": s.goal, "procedure": s.skill_key, "steps": list(s.steps),
                            "avoid": list(s.failures), "evidence": s.evidence_count}
                           for s in skills], default=str)  # fmt: skip

    return server


def http_routes(server: MCPServer, lookup: KeyLookup) -> list[Route]:
    """The streamable-HTTP endpoint at ``/mcp`` (stateless, JSON answers), refusing a
    request without a valid API key with 401 as every API route does."""
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True
    )
    (route,) = [r for r in app.routes if isinstance(r, Route) and r.path == MCP_PATH]
    return [Route(MCP_PATH, endpoint=_Authenticated(route.app, lookup), methods=route.methods)]


class _Authenticated:
    """An ASGI app in front of ``app`` that answers 401 unless the request has a valid
    bearer key (the tools then read the key again for its tenant)."""

    def __init__(self, app: ASGIApp, lookup: KeyLookup) -> None:
        self.app, self.lookup = app, lookup

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        key = bearer_key(headers.get(b"authorization", b"").decode("latin-1"), ("bearer",))
        owner = None if key is None else await anyio.to_thread.run_sync(self.lookup, key)
        if owner is None:
            body = {"error": "Unauthorized", "message": "a valid API key is required",
                    "fields": {}}  # fmt: skip
            await JSONResponse(body, status_code=401)(scope, receive, send)
            return
        await self.app(scope, receive, send)
