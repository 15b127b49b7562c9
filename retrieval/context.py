"""The context bundle for a query: profile, memories, skills, earlier sessions and the open
session's recent messages, packed under a token budget (see :mod:`retrieval.bundle`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ledger.db import Conn
from materializers.api import SkillProposal, get_profile, list_skills
from materializers.profile import ProfileRow
from observations.embed import Embedder
from retrieval.bundle import ContextBundle, pack
from retrieval.items import (
    MemoryItem,
    ProfileItem,
    Provenance,
    RecentMessage,
    SkillItem,
    SummaryItem,
)
from retrieval.scoring import normalized_tokens
from retrieval.search import Filters, Scope, SearchSettings, search
from retrieval.tokens import TokenCounter
from retrieval.types import SESSION_SUMMARY

DEFAULT_BUDGET = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRequest:
    scope: Scope
    query: str
    budget_tokens: int = DEFAULT_BUDGET
    candidates: int = 40  # ranked entries offered to the memories and summaries sections
    filters: Filters = field(default_factory=Filters)
    owner_name: str | None = None


def build_context(
    conn: Conn,
    request: ContextRequest,
    *,
    embedder: Embedder,
    counter: TokenCounter,
    now: datetime,
    recent: Sequence[RecentMessage] = (),
    settings: SearchSettings | None = None,
) -> ContextBundle:
    """Everything memory holds for ``request``, best first, cut to its budget whole-item."""
    scope = request.scope
    ranked = search(
        conn,
        scope,
        request.query,
        embedder=embedder,
        now=now,
        limit=request.candidates,
        filters=request.filters,
        settings=settings or SearchSettings(),
        owner_name=request.owner_name,
    )
    profile = []
    if scope.user_id is not None:
        rows = sorted(get_profile(conn, scope.tenant_id, scope.user_id), key=_by_confidence)
        profile = [
            ProfileItem(key=r.key, value=r.value, statement=r.statement, valid_from=r.valid_from)
            for i, r in enumerate(rows)
            if r.statement not in {earlier.statement for earlier in rows[:i]}  # once each
        ]
    skills: list[SkillItem] = []
    if scope.agent_id is not None:
        published = list_skills(conn, scope.tenant_id, agent_id=scope.agent_id, status="published")
        skills = [_skill_item(p) for p in relevant_skills(published, request.query)]
    return pack(
        profile=profile,
        memories=[MemoryItem.of(s) for s in ranked if s.candidate.kind != SESSION_SUMMARY],
        summaries=[SummaryItem.of(s) for s in ranked if s.candidate.kind == SESSION_SUMMARY],
        skills=skills,
        recent=recent,
        budget_tokens=request.budget_tokens,
        counter=counter,
    )


def _by_confidence(row: ProfileRow) -> tuple[float, str]:
    return (-row.confidence, row.key)


def relevant_skills(skills: Sequence[SkillProposal], query: str) -> list[SkillProposal]:
    """Skills sharing words with the query (goal, key, where it applies), most shared first."""
    words = normalized_tokens(query)
    scored = []
    for skill in skills:
        text = " ".join([skill.goal, skill.skill_key.replace("-", " "), *skill.applies_to])
        overlap = len(words & normalized_tokens(text))
        if overlap:
            scored.append((-overlap, -skill.evidence_count, skill.id, skill))
    return [s for *_, s in sorted(scored, key=lambda t: t[:3])]


def _skill_item(skill: SkillProposal) -> SkillItem:
    steps = tuple(_step(s) for s in skill.steps)
    return SkillItem(
        skill_key=skill.skill_key, goal=skill.goal, steps=steps, evidence_count=skill.evidence_count
    )


def _step(step: object) -> str:
    if isinstance(step, dict):
        args = ", ".join(f"{k}={v}" for k, v in (step.get("args") or {}).items())
        return f"{step.get('tool')}({args})"
    return str(step)


def bundle_provenance(bundle: ContextBundle) -> list[Provenance]:
    """The provenance of the bundle's memories and summaries (the entries it holds)."""
    return [item.provenance for item in bundle.memories] + [
        item.provenance for item in bundle.summaries
    ]
