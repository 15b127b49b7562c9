"""``memledger consolidate``, ``scheduler`` and ``history``: maintenance from the shell."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click

from consolidation import (
    JOBS,
    EntryRecord,
    JobScope,
    RunOutcome,
    entry_record,
    point_window,
    recent_runs,
)
from ops.cli.base import Context, pass_ctx, table
from ops.metrics import shared_metrics
from ops.usecases import maintenance
from ops.wiring import Runtime, consolidation_config, open_runtime, wall_clock
from ops.worker.actors import enqueue_builds
from ops.worker.pipeline import build_actor
from ops.worker.scheduler import Enqueue, intervals, make_scheduler

RUN_COLUMNS = ["id", "tenant_id", "job", "window_start", "started_at", "seconds", "error", "stats"]
HISTORY_COLUMNS = ["at", "action", "actor", "status", "reason", "statement"]


@contextmanager
def _enqueue(rt: Runtime, needed: bool) -> Iterator[Enqueue | None]:
    """Queue builds on the Redis broker, when the jobs to run include the sweep."""
    if not needed:
        yield None
        return
    with build_actor(rt) as actor:
        yield lambda sessions: enqueue_builds(actor, sessions)


@click.command()
@click.option(
    "--job",
    type=click.Choice([*JOBS, "all"]),
    default="all",
    show_default=True,
    help="The job to run (all: every job, in order).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Visit every owner, not only those changed since the job's last run; resync "
    "rebuilds the read models; retention also sweeps orphan links.",
)
@click.option(
    "--this-tenant",
    is_flag=True,
    help="Only the tenant of --tenant / MEMLEDGER_TENANT (default: every tenant).",
)
@click.option("--runs", "show_runs", is_flag=True, help="Show the latest runs; run nothing.")
@pass_ctx
def consolidate(ctx: Context, job: str, full: bool, this_tenant: bool, show_runs: bool) -> None:
    """Run consolidation jobs once, now, and print what each did. A job running elsewhere
    (another scheduler) is skipped, never run twice at once."""
    names = list(JOBS) if job == "all" else [job]
    with open_runtime(ctx.settings) as rt:
        if show_runs:
            click.echo(table([_run_cells(r) for r in recent_runs(rt.conn)], RUN_COLUMNS))
            return
        tenant = rt.settings.tenant if this_tenant else None
        with (
            _enqueue(rt, "sweep" in names) as enqueue,
            shared_metrics(rt.urls.redis_url) as metrics,
        ):
            config = consolidation_config(rt.settings, enqueue)
            for name in names:
                now = wall_clock()
                scope = JobScope(now, tenant, full)
                outcome = maintenance.run(
                    rt.conn, name, config, scope, window=point_window(now), clock=wall_clock,
                    metrics=metrics,
                )  # fmt: skip
                click.echo(_outcome_text(outcome))


def _outcome_text(outcome: RunOutcome) -> str:
    if outcome.status == "busy":
        return f"{outcome.job}: skipped, running elsewhere"
    if outcome.status == "taken":
        return f"{outcome.job}: skipped, this window already ran"
    figures = ", ".join(f"{k} {v}" for k, v in sorted(outcome.stats.items())) or "nothing to do"
    return f"{outcome.job} (run {outcome.run_id}): {figures}"


def _run_cells(row: dict[str, Any]) -> dict[str, Any]:
    finished = row["finished_at"]
    seconds = (finished - row["started_at"]).total_seconds() if finished else None
    stats = ", ".join(f"{k} {v}" for k, v in sorted(row["stats"].items()) if v)
    return {**row, "seconds": "" if seconds is None else f"{seconds:.2f}", "stats": stats}


@click.command()
@pass_ctx
def scheduler(ctx: Context) -> None:
    """Run the consolidation jobs on their schedule until interrupted. Run one on each of
    several hosts if you like: each job runs once per window, never twice at once."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with (
        open_runtime(ctx.settings) as rt,
        _enqueue(rt, "sweep" in intervals(rt.settings)) as q,
        shared_metrics(rt.urls.redis_url) as metrics,
    ):
        sched = make_scheduler(rt.urls.database_url, rt.settings, q, metrics)
        sched.start()
        every = ", ".join(f"{j} {i.total_seconds():g}s" for j, i in intervals(rt.settings).items())
        click.echo(f"scheduler running ({every}); Ctrl-C stops it")
        stop.wait()
        sched.shutdown(wait=True)


@click.command()
@click.argument("entry_id", type=click.IntRange(1))
@pass_ctx
def history(ctx: Context, entry_id: int) -> None:
    """Show ENTRY_ID's history: every change (builder, consolidation, API) and its lineage."""
    with open_runtime(ctx.settings) as rt:
        found = entry_record(rt.conn, rt.settings.tenant, entry_id)
    click.echo("\n".join(history_lines(found)))


def history_lines(found: EntryRecord) -> Sequence[str]:
    e = found.entry
    valid = f"{e['valid_from']:%Y-%m-%d %H:%M} → " + (
        f"{e['valid_to']:%Y-%m-%d %H:%M}" if e["valid_to"] else "now"
    )
    lines = [
        f"entry {e['id']} ({e['kind']}, {e['owner_type']} {e['owner_id']}, key {e['key']}): "
        f"{e['status']}",
        f"  {e['canonical_statement']}",
        f"  valid {valid} (UTC); sources: {','.join(e['source_external_ids'])}",
        "",
        table([_change_cells(c) for c in found.changes], HISTORY_COLUMNS),
    ]
    if found.links:
        lines.append("")
        lines += [f"  entry {k['src_id']} {k['relation']} entry {k['dst_id']}" for k in found.links]
    return lines


def _change_cells(row: dict[str, Any]) -> dict[str, Any]:
    old, new = row["old_status"], row["new_status"]
    status = new if old in (None, new) else f"{old} → {new}"
    return {**row, "status": status, "statement": row["new_statement"] or row["old_statement"]}
