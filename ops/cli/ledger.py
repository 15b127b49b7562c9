"""Subcommands of ``memledger`` (ledger, run, bench)."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from datetime import UTC
from pathlib import Path

import click

from ledger.db import apply_schema
from ledger.migrations import migrations, pending, upgrade
from ledger.store import (
    close_sessions,
    list_sessions,
    read_session,
    sessions_holding,
    sweep_idle,
)
from observations.builder import list_entries
from observations.embed_models import embedder_for, read_model
from observations.reembed import cancel as reembed_cancel
from observations.reembed import remaining, under_way
from ops.cli.base import Context, pass_ctx, progress, table
from ops.cli.readmodels import show_after_run
from ops.cli.retrieval import context_bundle
from ops.samples import sample_path
from ops.services import redacted
from ops.settings import SERVE_SETTINGS_ENV, Settings
from ops.usecases.ingest import IngestReport, count_lines, ingest_lines, read_lines
from ops.usecases.reembed import run as reembed_run
from ops.wiring import (
    Runtime,
    configured_model,
    make_build_config,
    make_embedder_from,
    open_runtime,
    wall_clock,
)
from ops.worker.pipeline import (
    build_actor,
    enqueue_pending,
    follow_parent,
    in_process_workers,
    scheduled_consolidation,
    wait_for_builds,
    wait_for_projections,
)
from retrieval.bundle import render_text
from retrieval.recent import RecentWindow
from retrieval.search import Scope

SAMPLE_QUESTION = "Book me a flight to Berlin and a restaurant for dinner there."
SESSION_COLUMNS = [
    "id",
    "channel_id",
    "status",
    "started_at",
    "ended_at",
    "event_count",
    "participants",
    "close_reason",
]


@click.group()
def db() -> None:
    """Database schema."""


@db.command("init")
@pass_ctx
def db_init(ctx: Context) -> None:
    """Create or update the schema (idempotent: a database that has it is left alone)."""
    with open_runtime(ctx.settings, init_schema=False) as rt:
        applied = apply_schema(rt.conn)
    done = "applied to" if applied else "already current in"
    click.echo(f"schema {done} {redacted(rt.urls.database_url)}")


@db.command("upgrade")
@click.option("--dry-run", is_flag=True, help="Only list the migrations that would run.")
@pass_ctx
def db_upgrade(ctx: Context, dry_run: bool) -> None:
    """Apply the schema migrations the database does not have yet, in order, each in its
    own transaction (safe to run from several hosts at once, and again)."""
    names = {m.version: m.name for m in migrations()}
    with open_runtime(ctx.settings, init_schema=False) as rt:
        versions = pending(rt.conn) if dry_run else upgrade(rt.conn)
    verb = "to apply" if dry_run else "applied"
    for v in versions:
        click.echo(f"{verb}: {names[v]}")
    where = redacted(rt.urls.database_url)
    click.echo(f"{len(versions)} migration(s) {verb} in {where}; the latest is {names[max(names)]}")


@click.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--batch-size", type=click.IntRange(1, 100_000), help="Events per append.")
@click.option(
    "--close", is_flag=True,
    help="FILE is a whole transcript: close the sessions it added to after the last line "
    "(not when a line was bad).",
)  # fmt: skip
@pass_ctx
def ingest(ctx: Context, file: Path, batch_size: int | None, close: bool) -> None:
    """Append the events of a JSONL FILE (one event per line) to the ledger.

    Bad lines are reported with their line number; their batch writes nothing, the other
    batches are appended. Re-running a file is safe: stored events are duplicates. The
    sessions a file leaves open close when idle (the scheduler's sweep, a session gap
    after the last append), or at once with --close.
    """
    with open_runtime(ctx.settings) as rt:
        report = _ingest_file(rt, file, batch_size, close=close)
        with build_actor(rt) as actor:
            enqueue_pending(rt, actor, report.closed_sessions)
    _print_report(report)
    if report.bad:
        sys.exit(1)


def _ingest_file(
    rt: Runtime, file: Path, batch_size: int | None, *, close: bool = False
) -> IngestReport:
    """Ingest ``file``; with ``close``, then close each channel's last session of the file
    if still open — unless a line was bad: the file is then not whole yet, and its
    sessions wait for the rest (re-running it fixed adds to them)."""
    s = rt.settings
    with (
        file.open(encoding="utf-8", errors="surrogateescape") as stream,
        # a pipe is read once: no line count beforehand
        progress(count_lines(file) if file.is_file() else None, "ingest", "ev") as bar,
    ):
        report = ingest_lines(
            rt.conn,
            s.tenant,
            read_lines(stream),
            clock=wall_clock,
            gap=s.session_gap,
            limits=s.limits,
            batch_size=batch_size or s.ingest_batch_size,
            on_batch=bar.update,
            window=RecentWindow.from_url(rt.urls.redis_url, s.recent_window),
        )
    if close and not report.bad:
        ends = [(channel, ext) for channel, (_, ext) in sorted(report.last_events.items())]
        last = sessions_holding(rt.conn, s.tenant, ends)
        report.closed_sessions.extend(close_sessions(rt.conn, s.tenant, last, now=wall_clock()))
    return report


def _print_report(report: IngestReport) -> None:
    for bad in report.bad:
        click.echo(f"line {bad.line}: {bad.reason}", err=True)
    click.echo(
        f"accepted {report.accepted}, duplicates {report.duplicates}, "
        f"bad lines {len(report.bad)}, not written (batch had a bad line) {report.skipped}, "
        f"sessions closed {len(report.closed_sessions)}"
    )


@click.command()
@click.option("--channel", help="Only this channel.")
@click.option("--events", "show_events", is_flag=True, help="Also replay each session's events.")
@pass_ctx
def sessions(ctx: Context, channel: str | None, show_events: bool) -> None:
    """List the tenant's sessions."""
    with open_runtime(ctx.settings) as rt:
        _print_sessions(rt, channel, show_events)


def _print_sessions(rt: Runtime, channel: str | None, show_events: bool) -> None:
    rows = list_sessions(rt.conn, rt.settings.tenant, channel_id=channel)
    click.echo(f"sessions of tenant {rt.settings.tenant!r} (times in UTC)")
    click.echo(table(rows, SESSION_COLUMNS))
    if not show_events:
        return
    for row in rows:
        click.echo(f"\nsession {row['id']} ({row['channel_id']})")
        for e in read_session(rt.conn, rt.settings.tenant, row["id"]):
            when = e["occurred_at"].strftime("%Y-%m-%d %H:%M")
            click.echo(
                f"  {when}  {e['role']:<11} {e['actor_name'] or e['actor_id']}: {e['content'][:90]}"
            )


@click.command()
@pass_ctx
def sweep(ctx: Context) -> None:
    """Close sessions idle for longer than the session gap, and queue their builds.

    Idle means on both clocks: by the time of the session's last event and by that of its
    last append, so a transcript just ingested stays open until a gap has passed (close it
    at once with `memledger ingest --close`)."""
    with open_runtime(ctx.settings) as rt:
        closed = sweep_idle(rt.conn, now=wall_clock(), gap=rt.settings.session_gap)
        with build_actor(rt) as actor:
            queued = enqueue_pending(rt, actor)
    click.echo(f"closed {len(closed)} idle sessions; queued {queued} builds")


@click.command()
@click.option(
    "--file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Transcript to ingest (default: the bundled sample).",
)
@pass_ctx
def run(ctx: Context, file: Path | None) -> None:
    """The main job on the embedded default: ingest a whole transcript (its sessions
    closed at its end), build it, and show the ledger, the memory entries and the read
    models."""
    with open_runtime(ctx.settings) as rt:
        urls = rt.urls
        click.echo(
            f"database: {redacted(urls.database_url)}\nredis:    {redacted(urls.redis_url)}\n"
        )
        _print_report(_ingest_file(rt, file or sample_path(), None, close=True))
        click.echo()
        _print_sessions(rt, None, show_events=False)
        # one build at a time, in session order: entry ids are the same on every fresh run
        with in_process_workers(rt, threads=1) as actor:
            queued = enqueue_pending(rt, actor)
            waiting = wait_for_builds(rt.conn, timeout=600)
            wait_for_projections(actor, timeout=60)  # none left queued for later
        click.echo(f"\nbuilds queued: {queued}, still waiting: {waiting}\n")
        _print_entries(rt)
        show_after_run(rt)
        if file is None:  # a question about the sample
            scope = Scope(rt.settings.tenant, user_id="maya", agent_id="atlas")
            bundle = context_bundle(rt, SAMPLE_QUESTION, scope, None, None)
            click.echo(f"\ncontext bundle for maya and atlas: {SAMPLE_QUESTION!r}\n")
            click.echo(render_text(bundle))
            click.echo(f"\n({bundle.used_tokens}/{bundle.budget_tokens} tokens)")


def _print_entries(rt: Runtime) -> None:
    entries = list_entries(rt.conn, rt.settings.tenant)
    click.echo(f"memory entries ({len(entries)}), with provenance (external ids):")
    for e in entries:
        when = e["valid_from"].strftime("%Y-%m-%d")
        click.echo(f"  [{e['kind']}] {when} {e['owner_id']}: {e['canonical_statement']}")
        click.echo(f"      key={e['key']} from {','.join(e['source_external_ids'])}")
    ended = list_entries(rt.conn, rt.settings.tenant, statuses=("superseded",))
    if ended:
        click.echo(f"\nended entries ({len(ended)}), kept as history:")
    for e in ended:
        until = e["valid_to"].strftime("%Y-%m-%d") if e["valid_to"] else "?"
        click.echo(
            f"  [{e['kind']}] {e['valid_from']:%Y-%m-%d} to {until} {e['owner_id']}: "
            f"{e['canonical_statement']}"
        )
        click.echo(f"      key={e['key']} superseded by entry {e['superseded_by']}")


@click.command()
@click.option("--threads", type=click.IntRange(1, 64), help="Worker threads (default: setting).")
@click.option(
    "--schedule/--no-schedule",
    default=False,
    help="Run the consolidation schedule in this process too (one per deployment).",
)
@click.option("--child-of", type=int, hidden=True, help="memledger serve's build process")
@pass_ctx
def worker(ctx: Context, threads: int | None, schedule: bool, child_of: int | None) -> None:
    """Run build workers (dramatiq on Redis) until interrupted; run as many as you like."""
    import signal
    import threading

    settings = ctx.settings
    if child_of is not None:  # serve's settings and services, at a lower priority
        settings = Settings.model_validate_json(os.environ[SERVE_SETTINGS_ENV])
        follow_parent(child_of, settings.build_nice)
    if threads:
        settings = settings.model_copy(update={"worker_threads": threads})
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    config = make_build_config(settings)  # one model for the builds and the schedule
    with (
        open_runtime(settings, init_schema=child_of is None) as rt,
        in_process_workers(rt, config=config) as actor,
        scheduled_consolidation(rt, actor, embedder=config.embedder) if schedule else nullcontext(),
    ):
        if child_of is None:
            click.echo(f"worker running with {settings.worker_threads} threads; Ctrl-C stops it")
        stop.wait()


@click.command("reembed")
@click.option("--model", help="The model to re-embed into (default: the configured one).")
@click.option(
    "--missing-only", is_flag=True, help="Skip the entries already embedded by that model."
)
@click.option("--batch", default=256, show_default=True, type=click.IntRange(1, 10_000))
@click.option(
    "--rate", type=click.FloatRange(min=0, min_open=True), help="At most this many entries/s."
)
@click.option("--cancel", is_flag=True, help="Drop the re-embed under way and its vectors.")
@click.option(
    "--status",
    is_flag=True,
    help="Show the model reads use and any re-embed under way; change nothing.",
)
@pass_ctx
def reembed_command(
    ctx: Context,
    model: str | None,
    missing_only: bool,
    batch: int,
    rate: float | None,
    cancel: bool,
    status: bool,
) -> None:
    """Re-embed every stored entry (every tenant) into another model, then switch reads.

    Searches keep using the current vectors until the last entry has its new one; the
    switch then moves them all in one transaction. Stopped (Ctrl-C, a kill), it resumes
    where it was on the next run with the same options.
    """
    s = ctx.settings
    with open_runtime(s) as rt:
        if cancel:
            click.echo(f"re-embed into {reembed_cancel(rt.conn)} cancelled")
            return
        if status:
            print_reembed_status(rt)
            return
        embedder = embedder_for(make_embedder_from(s), model or configured_model(s))
        with progress(None, f"re-embed into {embedder.model}", "entry") as bar:

            def advance(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            outcome = reembed_run(
                rt.conn,
                embedder,
                missing_only=missing_only,
                batch=batch,
                rate=rate,
                clock=wall_clock,
                progress=advance,
            )
    click.echo(
        f"{'resumed; ' if outcome.resumed else ''}{outcome.embedded} entries embedded, "
        f"{outcome.switched} moved; reads switched from "
        f"{outcome.previous_model or 'no recorded model'} to {outcome.model}"
    )


def print_reembed_status(rt: Runtime) -> None:
    click.echo(f"reads: {read_model(rt.conn) or 'no recorded model'}")
    click.echo(f"configured: {configured_model(rt.settings)}")
    job = under_way(rt.conn)
    if job is None:
        click.echo("no re-embed under way")
        return
    left = remaining(rt.conn, job)
    options = f"--model {job.model}" + (" --missing-only" if job.missing_only else "")
    click.echo(
        f"re-embed into {job.model} under way since "
        f"{job.started_at.astimezone(UTC):%Y-%m-%d %H:%M} UTC: {job.done} entries embedded, "
        f"{left} to go; memledger reembed {options} resumes it"
    )
