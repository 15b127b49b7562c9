"""``memledger eval ...``: quality figures on public benchmarks."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click
from tqdm import tqdm

from ops.bench.common import bench_conn, scratch_database
from ops.cli import Context, cli, pass_ctx
from ops.components import make_build_config
from ops.eval import locomo
from ops.eval.locomo_data import load
from ops.runtime import wall_clock
from ops.services import running_services

EVAL_DATABASE = "memledger_eval"


@cli.group("eval")
def eval_group() -> None:
    """Evaluations, each on a scratch database (memledger_eval) on the configured server."""


@eval_group.command("locomo")
@click.option(
    "--data",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A LoCoMo JSON file (the benchmark's locomo10.json or a subset of it).",
)
@click.option(
    "--conversations",
    help="Comma-separated sample ids to evaluate (default: all in the file).",
)
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write figures."
)
@pass_ctx
def eval_locomo(ctx: Context, data: Path, conversations: str | None, json_out: Path | None) -> None:
    """Ingest LoCoMo conversations with their real dates, build them, and report how the
    entries cover the benchmark's reference facts."""
    only = {c.strip() for c in conversations.split(",") if c.strip()} if conversations else None
    convs = load(data, only)
    s = ctx.settings
    config = make_build_config(s)
    now = wall_clock()
    services = running_services(s.home, s.database_url, s.redis_url, redis=False)
    with (
        services as urls,
        scratch_database(urls.database_url, EVAL_DATABASE) as url,
        bench_conn(url) as conn,
    ):
        built = []
        with tqdm(total=sum(len(c.sessions) for c in convs), desc="build", unit="session") as bar:
            for conv in convs:
                built.append(
                    locomo.ingest_and_build(conn, conv, config, now=now, on_session=bar.update)
                )
    b = locomo.total(built)
    click.echo(
        f"build ({config.build_version}): {b.sessions} sessions, {b.entries} entries "
        f"({b.entries_per_session:.1f}/session)\n"
        f"  entries with valid provenance: {b.valid_provenance}/{b.entries} "
        f"({b.valid_provenance / max(b.entries, 1):.1%})\n"
        f"  reference facts whose source turn is in some entry's provenance: "
        f"{b.covered_facts}/{b.reference_facts} "
        f"({b.covered_facts / max(b.reference_facts, 1):.1%})\n"
        f"  entries by kind: {', '.join(f'{k} {n}' for k, n in sorted(b.kinds.items()))}"
    )
    if json_out:
        report = {"build_version": config.build_version, "build": asdict(b)}
        json_out.write_text(json.dumps(report, indent=2))
