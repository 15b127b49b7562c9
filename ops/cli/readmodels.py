"""``memledger profile``, ``skills``, ``skills review`` and ``rebuild``: the read models."""

from __future__ import annotations

from typing import Any, cast

import click

from materializers import (
    ProfileRow,
    SkillProposal,
    get_profile,
    list_skills,
    profile_users,
    rebuild,
    review_skill,
)
from materializers.api import STATUSES, Decision
from materializers.runner import MODELS, Model
from ops.cli.base import Context, pass_ctx, table
from ops.wiring import Runtime, make_skill_policy, open_runtime, wall_clock
from ops.worker.pipeline import project_read_models

PROFILE_COLUMNS = ["key", "value", "confidence", "valid_from", "sources", "conflicts"]
SKILL_COLUMNS = [
    "id", "agent", "skill_key", "status", "evidence", "failed", "steps", "avoid", "goal",
]  # fmt: skip
_GOAL_WIDTH = 60


@click.command()
@click.argument("user_id")
@pass_ctx
def profile(ctx: Context, user_id: str) -> None:
    """Show USER_ID's profile: one row per key, with the facts that disagree."""
    with open_runtime(ctx.settings) as rt:
        print_profile(rt, user_id)


def print_profile(rt: Runtime, user_id: str) -> None:
    rows = get_profile(rt.conn, rt.settings.tenant, user_id)
    click.echo(f"profile of {user_id!r} ({len(rows)} keys; times in UTC)")
    click.echo(table([_profile_cells(r) for r in rows], PROFILE_COLUMNS))


def _profile_cells(row: ProfileRow) -> dict[str, Any]:
    return {
        "key": row.key,
        "value": row.value,
        "confidence": f"{row.confidence:.2f}",
        "valid_from": row.valid_from,
        "sources": row.source_entry_ids,
        "conflicts": "; ".join(f"{c.value} (entry {c.entry_id})" for c in row.conflicts),
    }


@click.group(invoke_without_command=True)
@click.option("--agent", help="Only this agent's proposals.")
@click.option("--status", type=click.Choice(STATUSES), help="Only proposals in this status.")
@click.pass_context
def skills(click_ctx: click.Context, agent: str | None, status: str | None) -> None:
    """List skill proposals (see also `skills review`)."""
    if click_ctx.invoked_subcommand is not None:
        return
    ctx = click_ctx.find_object(Context)
    assert ctx is not None
    with open_runtime(ctx.settings) as rt:
        print_skills(rt, agent=agent, status=status)


def print_skills(rt: Runtime, *, agent: str | None = None, status: str | None = None) -> None:
    found = list_skills(rt.conn, rt.settings.tenant, agent_id=agent, status=status)
    click.echo(f"skill proposals ({len(found)})")
    click.echo(table([_skill_cells(s) for s in found], SKILL_COLUMNS))


def _skill_cells(skill: SkillProposal) -> dict[str, Any]:
    goal = skill.goal if len(skill.goal) <= _GOAL_WIDTH else skill.goal[: _GOAL_WIDTH - 1] + "…"
    return {
        "id": skill.id,
        "agent": skill.agent_id,
        "skill_key": skill.skill_key,
        "status": skill.status,
        "evidence": skill.evidence_count,
        "failed": skill.failure_count,
        "steps": " → ".join(str(step.get("tool", "?")) for step in skill.steps),
        "avoid": ", ".join(dict.fromkeys(str(f.get("tool", "?")) for f in skill.failures)),
        "goal": goal,
    }


@skills.command("review")
@click.argument("skill_id", type=click.IntRange(1))
@click.option("--publish", is_flag=True, help="Publish the proposal.")
@click.option("--reject", is_flag=True, help="Reject the proposal.")
@click.option("--reviewer", required=True, help="Who decides (recorded with the decision).")
@click.option("--reason", default=None, help="Why (recorded with the decision).")
@pass_ctx
def skills_review(
    ctx: Context, skill_id: int, publish: bool, reject: bool, reviewer: str, reason: str | None
) -> None:
    """Publish or reject skill proposal SKILL_ID; later evidence keeps the decision."""
    if publish == reject:
        raise click.UsageError("say --publish or --reject (one of them)")
    decision = "publish" if publish else "reject"
    with open_runtime(ctx.settings) as rt:
        skill = review_skill(
            rt.conn,
            rt.settings.tenant,
            skill_id,
            cast(Decision, decision),
            reviewer,
            reason,
            now=wall_clock(),
        )
    click.echo(f"skill {skill.id} ({skill.agent_id}/{skill.skill_key}) is now {skill.status}")


@click.command("rebuild")
@click.option("--tenant", "tenant_id", help="Only this tenant (default: every tenant).")
@click.option("--model", type=click.Choice(MODELS), default="all", show_default=True)
@pass_ctx
def rebuild_command(ctx: Context, tenant_id: str | None, model: str) -> None:
    """Recompute read models from entries alone (skill reviews are kept)."""
    with open_runtime(ctx.settings) as rt:
        policy = make_skill_policy(rt.settings)
        results = rebuild(rt.conn, tenant_id, cast(Model, model), now=wall_clock(), policy=policy)
    for stats in results:
        click.echo(
            f"tenant {stats.tenant_id!r}: users/agents recomputed {stats.owners}, "
            f"profile rows changed {stats.profile_rows}, skill rows changed {stats.skill_rows}"
        )
    click.echo(f"rebuilt {model} for {len(results)} tenant(s)")


def show_after_run(rt: Runtime) -> None:
    """Bring the read models up to date and print every profile and skill proposal."""
    project_read_models(rt)
    for user_id in profile_users(rt.conn, rt.settings.tenant):
        click.echo()
        print_profile(rt, user_id)
    click.echo()
    print_skills(rt)
