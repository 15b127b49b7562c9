"""The context bundle for a query: profile, memories, skills, earlier sessions and the open
session's recent messages, packed under a token budget (see :mod:`retrieval.bundle`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledger.db import Conn, tenant_scope
from ledger.sqlfile import load_queries
from materializers.api import SkillProposal, list_skills
from observations.embed import Embedder
from observations.entry import SESSION_SUMMARY
from observations.extract.procedures import SLOT
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
from retrieval.search import Filters, Scope, SearchSettings, search_in_scope
from retrieval.tokens import TokenCounter

DEFAULT_BUDGET = 1000
Q = load_queries("retrieval")


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRequest:
    scope: Scope
    query: str
    budget_tokens: int = DEFAULT_BUDGET
    candidates: int = 40  # ranked entries offered to the memories and summaries sections
    filters: Filters = field(default_factory=Filters)
    owner_name: str | None = None
    # with an agent: also offer the agent's skill proposals nobody has reviewed yet,
    # marked so (published skills only, by default; rejected ones never)
    unreviewed_skills: bool = False


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
    with tenant_scope(conn, scope.tenant_id, snapshot=True):
        ranked = search_in_scope(
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
            profile = _profile(conn, scope.tenant_id, scope.user_id)
        skills: list[SkillItem] = []
        if scope.agent_id is not None:
            statuses = ("published", "proposed") if request.unreviewed_skills else ("published",)
            offered = [
                s
                for status in statuses
                for s in list_skills(conn, scope.tenant_id, agent_id=scope.agent_id, status=status)
            ]
            skills = _skill_items(conn, scope, relevant_skills(offered, request.query))
    return pack(
        profile=profile,
        memories=[MemoryItem.of(s) for s in ranked if s.candidate.kind != SESSION_SUMMARY],
        summaries=[SummaryItem.of(s) for s in ranked if s.candidate.kind == SESSION_SUMMARY],
        skills=skills,
        recent=recent,
        budget_tokens=request.budget_tokens,
        counter=counter,
    )


def _profile(conn: Conn, tenant_id: str, user_id: str) -> list[ProfileItem]:
    """The user's profile rows, most confident first, each statement once."""
    rows = conn.execute(Q["profile_items"], {"tenant_id": tenant_id, "user_id": user_id})
    items, seen = [], set()
    for r in sorted(rows, key=_by_confidence):
        if r["statement"] not in seen:
            seen.add(r["statement"])
            sources = {s["id"]: s for s in r["sources"]}
            item = ProfileItem(
                key=r["key"],
                value=r["value"],
                statement=r["statement"],
                valid_from=r["valid_from"],
                provenance=Provenance.of_entries(r["source_entry_ids"], sources),
            )
            items.append(item)
    return items


def _by_confidence(row: dict[str, Any]) -> tuple[float, str]:
    return (-row["confidence"], row["key"])


def relevant_skills(skills: Sequence[SkillProposal], query: str) -> list[SkillProposal]:
    """Skills sharing words with the query (goal, key, the tools it applies to: "flight"
    of ``flight_search``), most shared first, then the most evidence."""
    words = normalized_tokens(query)
    scored = []
    for skill in skills:
        text = " ".join([skill.goal, skill.skill_key, *skill.applies_to])
        text = re.sub(r"[-_+]", " ", SLOT.sub(" ", text))  # tool names' words, not slots
        overlap = len(words & normalized_tokens(text))
        if overlap:
            scored.append((-overlap, -skill.evidence_count, skill.id, skill))
    return [s for *_, s in sorted(scored, key=lambda t: t[:3])]


def _skill_items(conn: Conn, scope: Scope, skills: list[SkillProposal]) -> list[SkillItem]:
    """The skills as bundle items, each with the provenance of its agent experiences: in a
    user's bundle, of those the agent learnt from that user or alone."""
    if not skills:
        return []
    params = {
        "tenant_id": scope.tenant_id,
        "user_id": scope.user_id,
        "agent_id": scope.agent_id,
        "ids": sorted({i for s in skills for i in s.source_entry_ids}),
    }
    sources = {r["id"]: r for r in conn.execute(Q["skill_sources"], params)}
    return [
        SkillItem(
            skill_key=s.skill_key,
            goal=s.goal,
            steps=tuple(_step(step) for step in s.steps),
            evidence_count=s.evidence_count,
            reviewed=s.status == "published",
            provenance=Provenance.of_entries(
                [i for i in s.source_entry_ids if i in sources], sources
            ),
        )
        for s in skills
    ]


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
