"""``memledger bench ...``: benchmarks whose figures are reported, not asserted."""

from __future__ import annotations

import click

from ops.bench.common import scratch_database
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
