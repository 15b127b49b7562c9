"""``memledger bench ...``: benchmarks whose figures are reported, not asserted."""

from __future__ import annotations

from pathlib import Path

import click

from ops.bench import retrieval, retrieval_load
from ops.bench.api import (
    API_DATABASE,
    BATCH,
    QUESTIONS,
    TENANT,
    WARMUP_BATCHES,
    WARMUP_CONTEXTS,
    prepare,
    run_api,
    scratch_redis,
    serving,
    stored_bench_events,
)
from ops.bench.api_backlog import run_backlog
from ops.bench.build import run_build, transcript_of
from ops.bench.common import bench_conn, scratch_database
from ops.bench.consolidate import DATABASE, run_consolidate, text
from ops.bench.ingest import run_ingest
from ops.bench.synthetic import skewed_counts
from ops.cli.base import Context, pass_ctx
from ops.eval.locomo_data import session_events
from ops.wiring import (
    consolidation_config,
    make_build_config,
    make_embedder_from,
    make_owner_index_policy,
    make_search_settings,
    services,
    switch_for_builders,
    wall_clock,
)


@click.group()
def bench() -> None:
    """Benchmarks, each on a scratch database of its own on the configured server, created
    afresh on each run (retrieval --reuse keeps its own): memledger_bench (ingest, build),
    memledger_bench_retrieval, memledger_bench_consolidate, memledger_bench_api."""


@bench.command("ingest")
@click.option("--events", default=200_000, show_default=True, type=click.IntRange(1))
@click.option("--batch-size", default=1000, show_default=True, type=click.IntRange(1))
@click.option("--channels", default=200, show_default=True, type=click.IntRange(1))
@click.option(
    "--writers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Concurrent appenders (each its own tenant and connection).",
)
@pass_ctx
def bench_ingest(ctx: Context, events: int, batch_size: int, channels: int, writers: int) -> None:
    """Events/s appended through the Python API in batches, and peak RSS."""
    s = ctx.settings
    with (
        services(s, redis=False) as urls,
        scratch_database(urls.database_url) as url,
    ):
        figures = run_ingest(
            url,
            events=events,
            batch_size=batch_size,
            channels=channels,
            writers=writers,
            now=wall_clock(),
        )
    click.echo(
        f"ingest: {figures.events} events in {figures.seconds:.2f} s = "
        f"{figures.events_per_second:,.0f} events/s (batch {batch_size}, {channels} channels, "
        f"{writers} writer(s)); sessions closed {figures.sessions_closed}; "
        f"peak RSS {figures.peak_rss_mib:.0f} MiB"
    )


@bench.command("build")
@click.option("--sessions", default=300, show_default=True, type=click.IntRange(1))
@click.option(
    "--locomo",
    "locomo",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Sessions from this LoCoMo file instead of the sample transcript.",
)
@click.option(
    "--turns",
    default=0,
    type=click.IntRange(0),
    help="With --locomo: every run of this many turns of a session is a session "
    "(0: whole sessions).",
)
@pass_ctx
def bench_build(ctx: Context, sessions: int, locomo: Path | None, turns: int) -> None:
    """Sessions/s of the heuristic extractor (no embeddings), embedding sentences/s, and
    end-to-end sessions/s of build_session with the configured embedder: one builder,
    then MEMLEDGER_WORKER_THREADS builders at once. The sessions are copies of the sample
    transcript, or of a LoCoMo file's sessions with --locomo."""

    runs = session_events(locomo, turns) if locomo else None
    if runs == []:
        raise click.BadParameter(f"no session of {locomo} has {turns} turns", param_hint="--turns")
    s = ctx.settings
    config = make_build_config(s)
    switch_for_builders()  # as the worker's builder threads run
    with (
        services(s, redis=False) as urls,
        scratch_database(urls.database_url) as url,
        bench_conn(url) as conn,
    ):
        f = run_build(
            conn,
            lambda: bench_conn(url),
            config,
            config.embedder,
            sessions=sessions,
            builders=s.worker_threads,
            now=wall_clock(),
            transcript=transcript_of(runs) if runs else None,
        )
    click.echo(
        f"build: {f.sessions} sessions ({f.events_per_session:.1f} events, "
        f"{f.words_per_session:.0f} words of users, "
        f"{f.items_per_session:.1f} items each)\n"
        f"  {config.extractor.name} extract + gates (no DB, no embeddings): "
        f"{f.extract_sessions_per_s:,.0f} sessions/s "
        f"({f.extract_sessions_per_s * f.words_per_session:,.0f} words of users/s)\n"
        f"  embedding ({config.embedder.model}): {f.embed_sentences_per_s:,.0f} sentences/s\n"
        f"  build without embedding (DB read + extract + write): "
        f"{f.write_sessions_per_s:,.1f} sessions/s\n"
        f"  end to end (DB read + extract + embed + write): "
        f"{f.e2e_sessions_per_s:,.1f} sessions/s; {f.builders} builders at once (as the "
        f"worker's threads): {f.e2e_parallel_sessions_per_s:,.1f} sessions/s\n"
        f"  peak RSS {f.peak_rss_mib:.0f} MiB"
    )


@bench.command("retrieval")
@click.option("--entries", default=100_000, show_default=True, type=click.IntRange(1000))
@click.option("--users", default=1000, show_default=True, type=click.IntRange(2))
@click.option("--queries", default=300, show_default=True, type=click.IntRange(20, 5000))
@click.option(
    "--pool",
    "pool_size",
    default=2000,
    show_default=True,
    type=click.IntRange(10, 20_000),
    help="Distinct statements embedded with the real embedder, reused with perturbation.",
)
@click.option(
    "--maintenance-work-mem",
    default="2GB",
    show_default=True,
    help="For the index builds after loading.",
)
@click.option(
    "--reuse",
    is_flag=True,
    help="Keep the database of an earlier run (memledger_bench_retrieval) when it already "
    "holds these entries and users, indexed, instead of loading it again: a million entries "
    "take ≈ 3 min of COPY and ≈ 9 min of HNSW build on a 2-core machine.",
)
@pass_ctx
def bench_retrieval(
    ctx: Context,
    entries: int,
    users: int,
    queries: int,
    pool_size: int,
    maintenance_work_mem: str,
    reuse: bool,
) -> None:
    """Latency (p50/p95/p99) of search and of the context bundle with the configured
    embedder, with and without the query embedding, over synthetic entries of users with
    Zipf-like sizes, the summaries of their sessions and an agent's experiences of each
    user (one each per 25 of a user's entries), for a user alone and with the agent;
    filtered completeness for a 20-entry user beside the largest one; peak RSS. Loads
    them by COPY into a scratch database (memledger_bench_retrieval)
    and builds the indexes after, the owners' own HNSW indexes by the owner_indexes job (a
    million take 5-15 minutes on a 2-core machine; see --reuse). Size shared_buffers to the
    table and its indexes (the output says whether they fit) or large users' queries read
    pages from the OS cache."""

    s = ctx.settings
    try:
        counts = skewed_counts(entries, users)
        retrieval.probe_rank(counts)  # fail before loading if there is no 20-entry user
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    embedder = make_embedder_from(s)
    with (
        services(s, redis=False) as urls,
        scratch_database(urls.database_url, RETRIEVAL_DATABASE, reuse=reuse) as url,
        bench_conn(url) as conn,
    ):
        load = None
        if not (reuse and retrieval_load.holds(conn, counts)):
            load = retrieval_load.load(
                conn, counts, embedder, pool_size=pool_size, work_mem=maintenance_work_mem
            )
        owned = retrieval_load.owner_indexes(conn, make_owner_index_policy(s))
        cache = retrieval_load.prewarm(conn)
        f = retrieval.run_queries(
            conn, counts, embedder, make_search_settings(s), queries=queries, now=wall_clock()
        )
    click.echo(retrieval.render(counts, load, owned, cache, f, embedder.model))


RETRIEVAL_DATABASE = "memledger_bench_retrieval"


@bench.command("consolidate")
@click.option("--entries", default=100_000, show_default=True, type=click.IntRange(1000))
@click.option("--per-owner", default=100, show_default=True, type=click.IntRange(10, 10_000))
@click.option("--pool", "pool_size", default=2000, show_default=True, type=click.IntRange(10))
@click.option("--no-hnsw", is_flag=True, help="Skip the HNSW index (faster load, cheaper writes).")
@click.option(
    "--maintenance-work-mem",
    default="2GB",
    show_default=True,
    help="For the index builds after loading (HNSW builds slowly once its graph outgrows it).",
)
@pass_ctx
def bench_consolidate(
    ctx: Context,
    entries: int,
    per_owner: int,
    pool_size: int,
    no_hnsw: bool,
    maintenance_work_mem: str,
) -> None:
    """Time of every consolidation job over ENTRIES synthetic entries (10% duplicates, 5%
    same-key conflicts, vectors from a pool embedded with the configured embedder), then
    of an incremental pass after 1% changed; peak RSS while the passes ran. On a scratch
    database (memledger_bench_consolidate)."""

    s = ctx.settings
    with (
        services(s, redis=False) as urls,
        scratch_database(urls.database_url, DATABASE) as url,
        bench_conn(url) as conn,
    ):
        embedder = make_embedder_from(s)
        figures = run_consolidate(
            conn,
            embedder,
            consolidation_config(s, None, embedder=embedder),
            entries=entries,
            per_owner=per_owner,
            pool_size=pool_size,
            hnsw=not no_hnsw,
            work_mem=maintenance_work_mem,
            now=wall_clock(),
        )
    click.echo(text(figures))


@bench.command("api")
@click.option(
    "--events", default=50_000, show_default=True, type=click.IntRange(100),
    help="Events timed (after the warm-up).",
)  # fmt: skip
@click.option(
    "--contexts", default=2000, show_default=True,
    type=click.IntRange(8, len(QUESTIONS) - WARMUP_CONTEXTS),
    help="Context bundles timed (after the warm-up).",
)  # fmt: skip
@click.option("--clients", default=8, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--processes", default=2, show_default=True, type=click.IntRange(1, 64),
    help="memledger serve --processes",
)  # fmt: skip
@click.option(
    "--backlog", default=0, show_default=True, type=click.IntRange(0),
    help="Also time context bundles on a server with build workers, first with nothing to "
    "build, then with at least this many sessions waiting for a build.",
)  # fmt: skip
@pass_ctx
def bench_api(
    ctx: Context, events: int, contexts: int, clients: int, processes: int, backlog: int
) -> None:
    """HTTP ingest events/s (batches of 100) and context p50/p95 with concurrent clients,
    against `memledger serve` on loopback, each after a short untimed warm-up; with
    --backlog, context p50/p95 again while the server's workers build a backlog."""
    s = ctx.settings
    with (
        services(s) as urls,
        scratch_database(urls.database_url, API_DATABASE) as url,
        bench_conn(url) as conn,
    ):
        now = wall_clock()
        key = prepare(conn, make_build_config(s), now)
        behind = None
        if backlog:
            behind = run_backlog(conn, url, urls.redis_url, key, backlog, contexts, clients,
                                 processes, now)  # fmt: skip
        with scratch_redis(urls.redis_url) as redis_url, serving(url, redis_url, processes) as api:
            f = run_api(
                api.url, key, events=events, contexts=contexts, clients=clients, server=api.process
            )
        stored = stored_bench_events(conn, TENANT)
        if stored != WARMUP_BATCHES * BATCH + events:
            raise click.ClickException(f"the server stored {stored:,} of the events sent")
    with_clients = _count(f.clients, "client", "clients")
    servers = _count(processes, "server process", "server processes")
    click.echo(
        f"api: ingest {f.events:,} events in {f.ingest.wall:.1f} s = "
        f"{f.events_per_second:,.0f} events/s (batches of {BATCH}, {with_clients}, {servers}, "
        f"after {WARMUP_BATCHES * BATCH:,} warm-up events)\n"
        f"    {f.ingest.per_request('batch')}\n"
        f"  context: {f.context.cpu.requests} bundles in {f.context.cpu.wall:.1f} s = "
        f"{f.context.cpu.requests / f.context.cpu.wall:,.0f} bundles/s, p50 "
        f"{f.context.p50_ms:.1f} ms, p95 {f.context.p95_ms:.1f} ms ({with_clients}, query "
        "embedding included)\n"
        f"    {f.context.cpu.per_request('bundle')}"
    )
    if behind is not None:
        click.echo(behind.report(with_clients))


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
