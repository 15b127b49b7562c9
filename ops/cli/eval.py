"""``memledger eval ...``: quality figures on public benchmarks."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from ops.bench.api import scratch_redis
from ops.bench.common import bench_conn, scratch_database
from ops.cli.base import Context, pass_ctx, progress
from ops.eval import locomo, probes_data
from ops.eval.locomo_data import load
from ops.eval.probes import PROBES_DATABASE, report_text, run_probes
from ops.wiring import (
    consolidation_config,
    make_build_config,
    make_search_settings,
    services,
    wall_clock,
)
from retrieval.tokens import wordpiece_counter

EVAL_DATABASE = "memledger_eval"


@click.group("eval")
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
@click.option(
    "--reuse",
    is_flag=True,
    help="Keep the database of an earlier run: stored turns are duplicates and sessions "
    "already built with this build version are not built again.",
)
@pass_ctx
def eval_locomo(
    ctx: Context, data: Path, conversations: str | None, json_out: Path | None, reuse: bool
) -> None:
    """Ingest LoCoMo conversations with their real dates, build them, run the scheduled
    entry jobs (supersede, merge, digest), ask every question (categories 1-4) through the
    retrieval gateway, and report evidence recall next to a BM25-over-turns baseline
    computed in the same run, and the believed facts' recall and precision proxy against
    the conversations' reference observations."""
    only = {c.strip() for c in conversations.split(",") if c.strip()} if conversations else None
    convs = load(data, only)
    s = ctx.settings
    config = make_build_config(s)
    # the entry jobs a deployment schedules, embedding with the builds' model
    jobs = consolidation_config(s, None, embedder=config.embedder)
    with (
        services(s, redis=False) as urls,
        scratch_database(urls.database_url, EVAL_DATABASE, reuse=reuse) as url,
        bench_conn(url) as conn,
    ):
        built = []
        with progress(sum(len(c.sessions) for c in convs), "build", "session") as bar:
            for conv in convs:
                built.append(
                    locomo.ingest_and_build(
                        conn,
                        conv,
                        config,
                        now=conv.asked_at,
                        consolidation=jobs,
                        on_session=bar.update,
                    )
                )
        answers = []
        counter = wordpiece_counter()
        total = sum(len(c.questions) for c in convs)
        with progress(total, "questions", "question") as bar:
            for conv in convs:
                answers += locomo.ask(
                    conn,
                    conv,
                    embedder=config.embedder,
                    counter=counter,
                    settings=make_search_settings(s),
                    on_question=bar.update,
                )
    recall = locomo.recall_table(answers)
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
    click.echo(locomo.quality_text(b, answers))
    click.echo(_recall_text(recall))
    if json_out:
        report = {"build_version": config.build_version, "build": asdict(b), "recall": recall}
        json_out.write_text(json.dumps(report, indent=2))


def _recall_text(recall: dict[str, dict[str, float]]) -> str:
    """Evidence recall as a table: one row per category, memledger next to BM25."""
    head = f"{'evidence recall':<16}{'questions':>10}" + "".join(f"{m:>18}" for m in locomo.METHODS)
    rows = [
        f"{name:<16}{int(r['questions']):>10}" + "".join(f"{r[m]:>18.3f}" for m in locomo.METHODS)
        for name, r in recall.items()
    ]
    return "\n".join([head, *rows])


@eval_group.command("probes")
@click.option(
    "--data",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A probe file (docs/probes.md), e.g. tests/data/probes.json.",
)
@click.option("--cases", help="Comma-separated case ids to run (default: all in the file).")
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Write results."
)
@pass_ctx
def eval_probes(ctx: Context, data: Path, cases: str | None, json_out: Path | None) -> None:
    """Run memory-correctness cases through `memledger serve` (HTTP ingest, builds, the
    maintenance jobs) and report the checks passed per category, on the whole bundle and
    on beliefs alone (the user's profile rows and fact entries), with every failing check
    and what the memory returned for it."""
    only = {c.strip() for c in cases.split(",") if c.strip()} if cases else None
    probes = probes_data.load(data, only)
    s = ctx.settings
    total = sum(len(c.sessions) for c in probes.cases)
    with (
        services(s) as urls,
        scratch_database(urls.database_url, PROBES_DATABASE) as url,
        scratch_redis(urls.redis_url) as redis_url,
        progress(total, "build", "session") as bar,
    ):

        def built(n: int) -> None:
            bar.update(n - bar.n)

        report = run_probes(
            probes, url, redis_url, now=wall_clock(), on_built=built,
            build_attempts=s.build_max_attempts,
        )  # fmt: skip
    click.echo(report_text(report))
    if json_out:
        json_out.write_text(json.dumps(report.as_json(), indent=2))
