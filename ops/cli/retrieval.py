"""``memledger search`` and ``memledger context``: the retrieval gateway from the shell."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import get_args

import click

from ops.api.models import Kind
from ops.cli.base import Context, pass_ctx, table
from ops.wiring import Runtime, make_embedder_from, make_search_settings, open_runtime, wall_clock
from retrieval.access import AccessLog
from retrieval.bundle import ContextBundle, render_text, to_json
from retrieval.context import ContextRequest, build_context, bundle_provenance
from retrieval.recent import RecentWindow, recent_messages
from retrieval.search import Filters, Scope, search
from retrieval.tokens import wordpiece_counter
from retrieval.types import Scored

SEARCH_COLUMNS = ["entry", "score", "date", "kind", "owner", "statement", "sources"]
_STATEMENT_WIDTH = 90


def scope_options(f: click.decorators.FC) -> click.decorators.FC:
    f = click.option("--agent", help="Search the memory of this agent.")(f)
    return click.option("--user", help="Search the memory of this user.")(f)


@click.command("search")
@click.argument("query")
@scope_options
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(get_args(Kind)),
    help="Only entries of this kind (repeatable).",
)  # fmt: skip
@click.option("--since", type=click.DateTime(), help="Only facts valid from this date on.")
@click.option("--until", type=click.DateTime(), help="Only facts valid from before this date.")
@click.option("--history", is_flag=True, help="Include superseded, merged and archived entries.")
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True, help="Print JSON with each score's explain.")
@pass_ctx
def search_command(
    ctx: Context,
    query: str,
    user: str | None,
    agent: str | None,
    kinds: tuple[str, ...],
    since: datetime | None,
    until: datetime | None,
    history: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Entries relevant to QUERY, best first, with their scores and provenance."""
    filters = Filters(kinds=kinds, since=_utc(since), until=_utc(until), history=history)
    with open_runtime(ctx.settings) as rt:
        scope = Scope(rt.settings.tenant, user, agent)
        now = wall_clock()
        results = search(
            rt.conn,
            scope,
            query,
            embedder=make_embedder_from(rt.settings),
            now=now,
            limit=limit,
            filters=filters,
            settings=make_search_settings(rt.settings),
        )
        _track(rt, scope, [s.candidate.entry_id for s in results], now)
    if as_json:
        click.echo(json.dumps([_result_json(s) for s in results], indent=2, default=str))
        return
    rows = [
        {
            "entry": s.candidate.entry_id,
            "score": f"{s.score:.3f}",
            "date": s.candidate.valid_from.date().isoformat(),
            "kind": s.candidate.kind,
            "owner": f"{s.candidate.owner_type}:{s.candidate.owner_id}",
            "statement": _clip(s.candidate.statement),
            "sources": s.candidate.source_external_ids,
        }
        for s in results
    ]
    click.echo(table(rows, SEARCH_COLUMNS))


@click.command("context")
@click.argument("query")
@scope_options
@click.option("--channel", help="Add the recent messages of this channel's open session.")
@click.option("--budget", type=click.IntRange(50, 100_000), help="Token budget of the bundle.")
@click.option(
    "--unreviewed-skills",
    is_flag=True,
    help="With --agent: also offer skill proposals nobody has reviewed yet (marked so).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the bundle as JSON.")
@pass_ctx
def context_command(
    ctx: Context,
    query: str,
    user: str | None,
    agent: str | None,
    channel: str | None,
    budget: int | None,
    unreviewed_skills: bool,
    as_json: bool,
) -> None:
    """The context bundle for QUERY: profile, memories, skills, earlier sessions and recent
    messages, packed under a token budget, each item with its date and provenance."""
    with open_runtime(ctx.settings) as rt:
        scope = Scope(rt.settings.tenant, user, agent)
        bundle = context_bundle(rt, query, scope, channel, budget, unreviewed_skills)
    click.echo(json.dumps(to_json(bundle), indent=2) if as_json else render_text(bundle))
    if not as_json:
        click.echo(f"\n({bundle.used_tokens}/{bundle.budget_tokens} tokens)")


def context_bundle(
    rt: Runtime,
    query: str,
    scope: Scope,
    channel: str | None,
    budget: int | None,
    unreviewed_skills: bool = False,
) -> ContextBundle:
    s = rt.settings
    now = wall_clock()
    recent = []
    if channel is not None:
        window = RecentWindow.from_url(rt.urls.redis_url, s.recent_window)
        recent = recent_messages(
            rt.conn,
            window,
            scope.tenant_id,
            channel,
            limit=s.recent_window,
            participant=scope.user_id or scope.agent_id,
        )
    request = ContextRequest(
        scope=scope,
        query=query,
        budget_tokens=budget or s.context_budget_tokens,
        unreviewed_skills=unreviewed_skills,
    )
    bundle = build_context(
        rt.conn,
        request,
        embedder=make_embedder_from(s),
        counter=wordpiece_counter(),
        now=now,
        recent=recent,
        settings=make_search_settings(s),
    )
    _track(rt, scope, [p.entry_ids[0] for p in bundle_provenance(bundle)], now)
    return bundle


def _track(rt: Runtime, scope: Scope, entry_ids: list[int], now: datetime) -> None:
    log = AccessLog()
    log.record(scope.tenant_id, entry_ids, now)
    log.flush(rt.conn)


def _result_json(s: Scored) -> dict[str, object]:
    c = s.candidate
    return {
        "entry_id": c.entry_id,
        "score": s.score,
        "kind": c.kind,
        "owner": {"type": c.owner_type, "id": c.owner_id},
        "statement": c.statement,
        "valid_from": c.valid_from.isoformat(),
        "provenance": {
            "event_ids": list(c.source_event_ids),
            "external_ids": list(c.source_external_ids),
            "session_id": c.source_session_id,
        },
        "explain": dict(s.explain),
    }


def _clip(text: str) -> str:
    return text if len(text) <= _STATEMENT_WIDTH else text[: _STATEMENT_WIDTH - 1] + "…"


def _utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.replace(tzinfo=value.tzinfo or UTC)
