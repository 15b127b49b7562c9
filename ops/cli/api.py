"""``memledger serve`` (the HTTP API) and ``memledger keys`` (its API keys)."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext

import anyio
import click
import dramatiq
import structlog
from fastapi import FastAPI

from ledger.db import make_pool
from ops.api.app import create_app
from ops.api.keys import create_key, list_keys, revoke_key
from ops.api.mcp import McpTenant, build_mcp
from ops.api.state import ApiState
from ops.broker import redis_client, redis_restarted
from ops.cli.base import Context, pass_ctx, table, tenant_option
from ops.logs import configure_logging
from ops.metrics import SharedMetrics
from ops.settings import SERVE_SETTINGS_ENV, Settings
from ops.wiring import (
    Runtime,
    load_model,
    make_embedder_from,
    make_search_settings,
    one_blas_thread,
    open_runtime,
    query_embedder_from,
    read_concurrency,
    wall_clock,
)
from ops.worker.actors import enqueue_builds, enqueue_projection
from ops.worker.pipeline import build_actor, build_process
from retrieval.recent import RecentWindow
from retrieval.tokens import wordpiece_counter

log = structlog.get_logger(__name__)
FLUSH_SECONDS = 2.0  # access counts and metrics


@contextmanager
def api_state(rt: Runtime, actor: dramatiq.Actor[[str, int], None]) -> Iterator[ApiState]:
    """The API's shared state on a runtime; flushes access counts and metrics in the
    background."""
    s = rt.settings
    window = RecentWindow(redis_client(rt.urls.redis_url, timeout=0.5), s.recent_window)

    def redis_ping() -> bool:
        try:
            return bool(window.client.ping())
        except Exception:
            return False

    embedder = make_embedder_from(s)
    load_model(embedder)  # before the process accepts a request
    embedder = query_embedder_from(s, embedder)  # edits' entry texts are not cached
    with make_pool(
        rt.urls.database_url, max_size=s.pool_max_size, timeout=s.pool_timeout_seconds
    ) as pool:
        state = ApiState(
            settings=s,
            pool=pool,
            embedder=embedder,
            counter=wordpiece_counter(),
            search=make_search_settings(s),
            window=window,
            send_builds=lambda sessions: enqueue_builds(actor, sessions),
            enqueue_projection=lambda tenant_id: enqueue_projection(actor, tenant_id),
            clock=wall_clock,
            redis_ping=redis_ping,
            metrics=SharedMetrics(window.client),
            queue_restarted=lambda: redis_restarted(actor.broker),
            reads=anyio.CapacityLimiter(read_concurrency(s)),
        )
        stop = threading.Event()
        flusher = threading.Thread(target=_flush_pending, args=(state, stop), daemon=True)
        flusher.start()
        try:
            yield state
        finally:
            stop.set()
            flusher.join()


def _flush_pending(state: ApiState, stop: threading.Event) -> None:
    """Every ``FLUSH_SECONDS``, and once more when stopped: the metrics, the access
    counts, and the builds left in the outbox (their closing request found the queue
    down, or its process died before handing them over)."""
    while True:
        stopping = stop.wait(FLUSH_SECONDS)
        state.metrics.flush()
        state.drain_outbox()
        try:
            with state.connection() as conn:
                state.access.flush(conn)
                conn.commit()
        except Exception as exc:  # counts stay pending for the next flush
            log.warning("access_flush_failed", error=str(exc))
        if stopping:
            return


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--processes",
    type=click.IntRange(1, 64),
    help="API server processes sharing the port (default: MEMLEDGER_API_PROCESSES or 1).",
)
@click.option(
    "--workers/--no-workers",
    "with_workers",
    default=None,
    help="Build and run the consolidation schedule in a child process at a lower CPU "
    "priority (MEMLEDGER_BUILD_NICE) (default: yes on the embedded default, no otherwise).",
)
@pass_ctx
def serve(
    ctx: Context, host: str, port: int, processes: int | None, with_workers: bool | None
) -> None:
    """Run the HTTP API (OpenAPI at /openapi.json, docs at /docs)."""
    import uvicorn

    processes = processes or ctx.settings.api_processes
    s = ctx.settings.model_copy(update={"api_processes": processes})
    if with_workers is None:
        with_workers = s.database_url is None
    with open_runtime(s) as rt, build_process(rt) if with_workers else nullcontext():
        click.echo(
            f"memledger API on http://{host}:{port} ({processes} process(es); tenant keys:"
            f" memledger keys create)\n"
            f"  curl -s -H 'Authorization: Bearer <key>' -H 'content-type: application/json'"
            f' -d \'{{"query": "what does maya like?", "user_id": "maya"}}\''
            f" http://{host}:{port}/v1/context"
        )
        if processes == 1:
            with build_actor(rt) as actor, api_state(rt, actor) as state:
                uvicorn.run(create_app(state), host=host, port=port, log_level="warning")
            return
        # Each server process builds its own state from these settings, on the services
        # this process reached (or started), and loads the model: a model file that
        # cannot load would stop each of them at start, so check it here.
        load_model(make_embedder_from(s), check_only=True)
        urls = {"database_url": rt.urls.database_url, "redis_url": rt.urls.redis_url}
        os.environ[SERVE_SETTINGS_ENV] = s.model_copy(update=urls).model_dump_json()
        uvicorn.run(
            "ops.cli.api:server_process_app",
            factory=True,
            workers=processes,
            host=host,
            port=port,
            log_level="warning",
        )


@click.command("mcp")
@click.option(
    "--workers/--no-workers",
    "with_workers",
    default=None,
    help="Build what is remembered in a child process (default: yes on the embedded "
    "default, no otherwise: workers elsewhere build it).",
)
@pass_ctx
def mcp_command(ctx: Context, with_workers: bool | None) -> None:
    """memledger as an MCP server on stdin/stdout, for a local assistant: the tools
    remember, recall, search, forget and profile, for the tenant given by --tenant (before
    the command) or MEMLEDGER_TENANT. Logs go to stderr."""
    s = ctx.settings
    if with_workers is None:
        with_workers = s.database_url is None
    with (
        open_runtime(s) as rt,
        build_process(rt) if with_workers else nullcontext(),
        build_actor(rt) as actor,
        api_state(rt, actor) as state,
    ):
        build_mcp(state, McpTenant(fixed=s.tenant)).run("stdio")


def server_process_app() -> FastAPI:
    """The application of one of several ``memledger serve`` processes."""
    one_blas_thread()
    settings = Settings.model_validate_json(os.environ[SERVE_SETTINGS_ENV])
    configure_logging(settings.log_level)
    stack = ExitStack()
    rt = stack.enter_context(open_runtime(settings, init_schema=False))
    actor = stack.enter_context(build_actor(rt))
    state = stack.enter_context(api_state(rt, actor))
    return create_app(state, on_shutdown=stack.close)


@click.group()
def keys() -> None:
    """API keys: each belongs to one tenant; the plain key is shown once."""


@keys.command("create")
@click.option("--name", help="A label to tell keys apart.")
@tenant_option
@pass_ctx
def keys_create(ctx: Context, name: str | None) -> None:
    """Create a key for the tenant (--tenant) and print it once."""
    with open_runtime(ctx.settings) as rt:
        key_id, key = create_key(rt.conn, rt.settings.tenant, name=name, now=wall_clock())
    click.echo(f"key {key_id} for tenant {ctx.settings.tenant!r} (shown once):\n{key}")


@keys.command("list")
@tenant_option
@pass_ctx
def keys_list(ctx: Context) -> None:
    """The tenant's keys (prefixes only)."""
    with open_runtime(ctx.settings) as rt:
        rows = list_keys(rt.conn, rt.settings.tenant)
    click.echo(table(rows, ["id", "key_prefix", "name", "created_at", "revoked_at"]))


@keys.command("revoke")
@click.argument("key_id", type=int)
@tenant_option
@pass_ctx
def keys_revoke(ctx: Context, key_id: int) -> None:
    """Revoke a key of the tenant."""
    with open_runtime(ctx.settings) as rt:
        revoke_key(rt.conn, rt.settings.tenant, key_id, now=wall_clock())
    click.echo(f"key {key_id} revoked")
