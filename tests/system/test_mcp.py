"""memledger's MCP server through the ``mcp`` SDK's own client, over streamable HTTP (at
/mcp on the API server) and over stdio (``memledger mcp``): the tools, two users of two
tenants who each see only their own, forget, and a bad argument named in an MCP error."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ledger import list_sessions
from ledger.db import connect
from materializers import project
from observations.builder import BuildConfig, build_session
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.services import drop_database, recreate_database
from tests.system.live_api import NOW, Server

TOOLS = {"remember", "recall", "search", "forget", "profile"}
Open = Callable[[str], AbstractAsyncContextManager[ClientSession]]


def http_session(server: Server) -> Open:
    @asynccontextmanager
    async def open_(key: str) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    return open_


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def data_of(result: Any) -> Any:
    """A tool's JSON answer: a list comes as one text per item, and whole as structured."""
    structured = getattr(result, "structured_content", None)
    if structured and "result" in structured:
        return structured["result"]
    return json.loads(text_of(result))


def build_all(db_url: str, tenant: str) -> None:
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
    with connect(db_url, autocommit=True) as conn:
        for s in list_sessions(conn, tenant):
            if s["status"] == "closed":
                build_session(conn, tenant, s["id"], config, now=NOW)
        project(conn, tenant, now=NOW)


async def remember_recall_forget(
    open_: Callable[[str], AbstractAsyncContextManager[ClientSession]],
    tenants: dict[str, str],  # tenant → how to open it (a key, or the stdio tenant)
    build: Callable[[str], None],
) -> None:
    """Two users of two tenants, each with the same user id, through the tools."""
    said = {"mcp-a": "I live in Porto and I work as a baker.",
            "mcp-b": "I live in Oslo and I work as a pilot."}  # fmt: skip
    for tenant, key in tenants.items():
        async with open_(key) as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} >= TOOLS
            done = await session.call_tool(
                "remember", {"user_id": "sam", "messages": [
                    {"role": "user", "content": said[tenant]},
                    {"role": "assistant", "content": "Noted!"}]},
            )  # fmt: skip
            assert not done.is_error, text_of(done)
            assert data_of(done)["accepted"] == 2
        build(tenant)
    for tenant, key in tenants.items():
        own, other = ("Porto", "Oslo") if tenant == "mcp-a" else ("Oslo", "Porto")
        async with open_(key) as session:
            recalled = text_of(await session.call_tool(
                "recall", {"query": "where does sam live?", "user_id": "sam"}))  # fmt: skip
            assert own in recalled and other not in recalled
            found = await session.call_tool("search", {"query": "work", "user_id": "sam"})
            hits = data_of(found)
            assert hits and all(other not in h["statement"] for h in hits)
            profile = text_of(await session.call_tool("profile", {"user_id": "sam"}))
            assert own in profile and other not in profile

            bad = await session.call_tool("search", {"query": "work", "limit": 0})
            assert bad.is_error and "limit" in text_of(bad)
            both = await session.call_tool("forget", {})
            assert both.is_error and "entry_id" in text_of(both)

            gone = await session.call_tool("forget", {"user_id": "sam"})
            assert data_of(gone)["deleted"] >= 1
            build(tenant)  # the profile follows once the workers project the change
            after = text_of(await session.call_tool(
                "recall", {"query": "where does sam live?", "user_id": "sam"}))  # fmt: skip
            assert own not in after


def test_mcp_over_streamable_http(server: Server) -> None:
    keys = {"mcp-a": server.key("mcp-a"), "mcp-b": server.key("mcp-b")}
    anyio.run(
        remember_recall_forget,
        http_session(server),
        keys,
        lambda tenant: build_all(server.db_url, tenant),
    )


def test_mcp_over_http_needs_a_key(server: Server) -> None:
    answer = httpx.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.status_code == 401 and answer.json()["error"] == "Unauthorized"


def test_mcp_over_stdio(admin_url: str, template_db: str, redis: Any) -> None:
    db_url = recreate_database(admin_url, "memledger_test_mcp_stdio", template_db)
    memledger = str(Path(sys.executable).with_name("memledger"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}

    def open_(tenant: str) -> AbstractAsyncContextManager[ClientSession]:
        params = StdioServerParameters(
            command=memledger,
            args=["--tenant", tenant, "mcp", "--no-workers"],
            env={**env, "MEMLEDGER_DATABASE_URL": db_url,
                 "MEMLEDGER_REDIS_URL": f"unix://{redis.socket_file}",
                 "MEMLEDGER_EMBEDDER": "hash"},
        )  # fmt: skip

        @asynccontextmanager
        async def session() -> AsyncIterator[ClientSession]:
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                yield s

        return session()

    try:
        anyio.run(
            remember_recall_forget,
            open_,
            {"mcp-a": "mcp-a", "mcp-b": "mcp-b"},
            lambda tenant: build_all(db_url, tenant),
        )
    finally:
        drop_database(admin_url, "memledger_test_mcp_stdio")
