"""Skill proposals from the probe suite's successful-path cases, built for real: one
proposal per repeated procedure, evidence equal to its independent successes, nothing of
any one conversation in it, and the publication policy."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from ledger import list_sessions
from ledger.db import Conn
from ledger.store import append, sweep_idle
from materializers import SkillPolicy, SkillProposal, list_skills, rebuild
from observations.builder import BuildConfig, build_session
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from ops.eval.probes_data import load
from ops.eval.probes_model import Case, ProbeSession
from ops.eval.probes_run import ledger_events
from retrieval.bundle import render_text
from retrieval.context import ContextRequest, build_context
from retrieval.search import Scope
from retrieval.tokens import wordpiece_counter

DATA = Path(__file__).parents[1] / "data"
NOW = datetime(2027, 1, 1, tzinfo=UTC)
CONFIG = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
_DATE_WORDS = re.compile(
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tmrw|tomorrow|tonight"
    r"|january|february|march|april|june|july|august|september|october|november|december)\b",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"[^\s,;:()\"'{}\[\]]*\d[^\s,;:()\"'{}\[\]]*")


def successful_path_cases() -> list[Case]:
    cases = [*load(DATA / "probes.json").cases, *load(DATA / "probes_more.json").cases]
    return [c for c in cases if c.category == "successful_path"]


def feed(conn: Conn, tenant: str, case: Case, sessions: tuple[ProbeSession, ...]) -> None:
    for session in sessions:
        with conn.transaction():
            append(conn, tenant, ledger_events(case, session), now=NOW)
        with conn.transaction():
            sweep_idle(conn, now=NOW + timedelta(days=3650), tenant_id=tenant)


def build_all(conn: Conn, tenant: str, policy: SkillPolicy = SkillPolicy()) -> None:  # noqa: B008
    for session in list_sessions(conn, tenant, limit=10_000):
        if session["status"] != "built":
            with conn.transaction():
                build_session(conn, tenant, session["id"], CONFIG, now=NOW)
    rebuild(conn, tenant, now=NOW, policy=policy)


def particulars(case: Case) -> set[str]:
    """What belongs to this one conversation: the users' names, the dates, amounts, ids and
    numbers the user said, and the values the tool calls passed that the user said or that
    name something (capitalized, with a digit)."""
    found: set[str] = set()
    for name in case.users.values():
        found |= {part for part in name.split() if len(part) >= 3}
    for session in case.sessions:
        said = " ".join(e.content for e in session.events if e.role == "user")
        found |= {m.group(0).lower() for m in _DATE_WORDS.finditer(said)}
        found |= {m.group(0).rstrip(".?!") for m in _DIGITS.finditer(said)}
        for e in session.events:
            if e.role == "tool_call":
                for value in _strings(json.loads(e.content).get("args", {})):
                    if mentions(said, value) or value[:1].isupper() or _has_digit(value):
                        found.add(value)
    return {p for p in found if len(p) >= 2}  # "2" would also match "matches 2 places"


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, bool):
        return []
    return [str(value)] if isinstance(value, int | float | str) else []


def _has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def proposal_text(skill: SkillProposal) -> str:
    return json.dumps(
        [skill.skill_key, skill.goal, skill.steps, skill.failures, skill.applies_to],
        ensure_ascii=False,
    )


def mentions(text: str, particular: str) -> bool:
    pattern = rf"(?<![\w]){re.escape(particular)}(?![\w])"
    return re.search(pattern, text, re.IGNORECASE) is not None


@pytest.fixture
def tenant() -> str:
    return f"sk-{uuid.uuid4().hex[:10]}"


def test_each_repeated_procedure_is_one_proposal_counting_its_successes(
    conn: Conn, tenant: str
) -> None:
    cases = successful_path_cases()
    assert len(cases) >= 10
    for case in cases:
        feed(conn, tenant, case, case.sessions)
    build_all(conn, tenant)
    for case in cases:
        skills = list_skills(conn, tenant, agent_id=case.agent)
        # the sessions that ended in the same tools make one proposal; every session counts
        got = [(s.evidence_count, s.failure_count) for s in skills]
        why = (case.id, [(s.skill_key, s.goal) for s in skills])
        if len(set(map(_worked, case.sessions))) == 1:
            assert got == [(len(case.sessions), 0)], why
        assert sum(n for n, _ in got) == len(case.sessions) and not any(f for _, f in got), why


def _worked(session: ProbeSession) -> tuple[str, ...]:
    """The tools a session called that answered ok, in order."""
    return tuple(
        json.loads(call.content)["tool"]
        for call, result in pairwise(session.events)
        if call.role == "tool_call"
        and result.role == "tool_result"
        and json.loads(result.content).get("ok")
    )


def test_no_proposal_names_a_user_a_date_or_an_amount_of_one_conversation(
    conn: Conn, tenant: str
) -> None:
    cases = successful_path_cases()
    for case in cases:
        feed(conn, tenant, case, case.sessions)
    build_all(conn, tenant)
    assert len(list_skills(conn, tenant)) >= len(cases)
    for case in cases:
        kept = particulars(case)
        assert len(kept) >= 2, (case.id, kept)  # the check has something to look for
        for skill in list_skills(conn, tenant, agent_id=case.agent):
            text = proposal_text(skill)
            assert not [p for p in kept if mentions(text, p)], (case.id, skill.skill_key, text)


def test_the_same_procedure_for_another_user_adds_to_the_same_proposal(
    conn: Conn, tenant: str
) -> None:
    (case,) = [c for c in successful_path_cases() if c.id == "sp-001"]
    other = _as_another_user(case, "sp01-omar", "Omar Haddad")
    feed(conn, tenant, case, case.sessions)
    feed(conn, tenant, other, other.sessions)
    build_all(conn, tenant)
    (skill,) = list_skills(conn, tenant, agent_id=case.agent)
    assert skill.evidence_count == 2 * len(case.sessions)
    assert not mentions(proposal_text(skill), "Omar") and not mentions(proposal_text(skill), "Nina")
    # the other user's bundle offers it once published, with nothing of the first user
    skill_id = skill.id
    conn.execute(
        "UPDATE skill_proposal SET status = 'published', reviewed_by = 'ops',"
        " reviewed_at = %s WHERE tenant_id = %s AND id = %s",
        [NOW, tenant, skill_id],
    )
    request = ContextRequest(
        scope=Scope(tenant, user_id="sp01-omar", agent_id=case.agent),
        query="book a table for 3 on friday",
    )
    bundle = build_context(
        conn, request, embedder=HashEmbedder(), counter=wordpiece_counter(), now=NOW
    )
    assert [s.skill_key for s in bundle.skills] == [skill.skill_key]
    assert "Nina" not in render_text(bundle)


def test_policy_publishes_after_n_successes_and_takes_it_back_after_a_failure(
    conn: Conn, tenant: str
) -> None:
    (case,) = [c for c in successful_path_cases() if c.id == "sp-001"]
    policy = SkillPolicy(auto_publish_after=2)
    feed(conn, tenant, case, case.sessions[:1])
    build_all(conn, tenant, policy)
    (skill,) = list_skills(conn, tenant, agent_id=case.agent)
    assert skill.status == "proposed"
    feed(conn, tenant, case, case.sessions[1:])
    build_all(conn, tenant, policy)
    (skill,) = list_skills(conn, tenant, agent_id=case.agent)
    assert (skill.status, skill.reviewed_by, skill.evidence_count) == (
        "published", "policy:auto-publish", 2,
    )  # fmt: skip
    broken = _failing_booking(case)
    feed(conn, tenant, case, (broken,))
    build_all(conn, tenant, policy)
    (skill,) = list_skills(conn, tenant, agent_id=case.agent)
    assert (skill.status, skill.failure_count, skill.successes_since_failure) == (
        "proposed", 1, 0,
    )  # fmt: skip
    assert "no tables left" in proposal_text(skill)


def _as_another_user(case: Case, user: str, name: str) -> Case:
    """The case's sessions said by ``user`` in a channel of their own, a day later."""

    old = next(iter(case.users))
    sessions = tuple(
        replace(
            s,
            channel=f"{s.channel}-{user}",
            events=tuple(
                replace(
                    e,
                    id=f"{e.id}-{user}",
                    actor=user if e.actor == old else e.actor,
                    at=e.at + timedelta(days=1),
                )
                for e in s.events
            ),
        )
        for s in case.sessions
    )
    return replace(case, users={user: name}, sessions=sessions)


def _failing_booking(case: Case) -> ProbeSession:
    """A later session where the procedure's booking call fails."""

    last = case.sessions[-1]
    events = []
    for e in last.events:
        content = e.content
        if e.role == "tool_result" and '"confirmation"' in content:
            content = '{"ok": false, "error": "no tables left"}'
        events.append(replace(e, id=f"{e.id}-again", at=e.at + timedelta(days=30),
                              content=content))  # fmt: skip
    return replace(last, events=tuple(e for e in events if e.role != "assistant"))
