"""``memledger bench ...``: benchmarks whose figures are reported, not asserted."""

from __future__ import annotations

import click

from ops.bench.common import bench_conn, scratch_database
from ops.bench.ingest import run_ingest
from ops.cli import Context, cli, pass_ctx
from ops.runtime import wall_clock
from ops.services import running_services


@cli.group()
def bench() -> None:
    """Benchmarks, each on a scratch database (memledger_bench) on the configured server."""


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
        running_services(s.home, s.database_url, s.redis_url, redis=False) as urls,
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
@pass_ctx
def bench_build(ctx: Context, sessions: int) -> None:
    """Sessions/s of the heuristic extractor (no embeddings), embedding sentences/s, and
    end-to-end sessions/s of build_session with the configured embedder."""
    from ops.bench.build import run_build
    from ops.components import make_build_config

    s = ctx.settings
    config = make_build_config(s)
    services = running_services(s.home, s.database_url, s.redis_url, redis=False)
    with services as urls, scratch_database(urls.database_url) as url, bench_conn(url) as conn:
        f = run_build(conn, config, config.embedder, sessions=sessions, now=wall_clock())
    click.echo(
        f"build: {f.sessions} sessions ({f.events_per_session:.1f} events, "
        f"{f.items_per_session:.1f} items each)\n"
        f"  {config.extractor.name} extract + gates (no DB, no embeddings): "
        f"{f.extract_sessions_per_s:,.0f} sessions/s\n"
        f"  embedding ({config.embedder.model}): {f.embed_sentences_per_s:,.0f} sentences/s\n"
        f"  build without embedding (DB read + extract + write): "
        f"{f.write_sessions_per_s:,.1f} sessions/s\n"
        f"  end to end (DB read + extract + embed + write): "
        f"{f.e2e_sessions_per_s:,.1f} sessions/s\n"
        f"  peak RSS {f.peak_rss_mib:.0f} MiB"
    )
