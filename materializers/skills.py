"""The ``skill_proposal`` fold: one row per (agent, procedure) from the agent's experiences.

Pure: the same entries in any order give the same row. The active ``agent_experience``
entries of one agent are grouped by the procedure that worked (``fields["skill_key"]``:
the tools of the successful path, in order), whichever user asked and in whatever words:

* the evidence count is the number of independent successes: distinct sessions with a
  successful run (an entry whose ledger session was removed by retention counts alone);
* the goal is the most telling of the successes' goal templates (the most words and
  slots; the latest on a tie); the steps are the path of the latest success;
* failures are what failed before the procedure worked, and the failed runs of the
  procedure itself: an experience that did not succeed belongs to every procedure of its
  agent that uses a tool which failed in it, and counts in ``failure_count`` (sessions),
  ``last_failure_at``, and against ``successes_since_failure`` (successful sessions
  after the last failure, what the publication policy reads);
* it applies to the tools it uses; an experience that succeeded at nothing known makes
  no proposal.

Review state (proposed → published | rejected, by whom, when, why) is not derived from
entries: :func:`reconcile_skill` decides what recomputation does to a stored row so that
a review survives it, and :func:`policy_review` what the publication policy does.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from materializers.facts import ACTIVE, EntryFact, normalize, text_field
from observations.entry import AGENT_EXPERIENCE
from observations.extract.procedures import SLOT, slot_name
from observations.extract.text import content_words

_KEY_PREFIX = AGENT_EXPERIENCE + ":"
_REPEAT_SUFFIX = re.compile(r":\d+$")

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SkillRow:
    """The derived part of a ``skill_proposal`` row."""

    agent_id: str
    skill_key: str
    goal: str
    steps: tuple[Json, ...]
    failures: tuple[Json, ...]
    applies_to: tuple[str, ...]
    evidence_count: int
    source_entry_ids: tuple[int, ...]
    failure_count: int = 0
    successes_since_failure: int = 0
    last_failure_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class SkillPolicy:
    """When a proposal is published without review: after ``auto_publish_after``
    independent successes with no failure since (0: never, every proposal waits for a
    reviewer). A proposal the policy published goes back to review when its procedure
    fails again; a reviewer's decision is never changed."""

    auto_publish_after: int = 0


POLICY_REVIEWER = "policy:auto-publish"


def is_experience(entry: EntryFact) -> bool:
    return entry.status == ACTIVE and entry.owner_type == "agent" and entry.kind == AGENT_EXPERIENCE


def skill_key_of(entry: EntryFact) -> str:
    """``fields["skill_key"]``, else the entry key without its prefix and repeat suffix."""
    named = text_field(entry.fields, "skill_key")
    if named:
        return named
    key = entry.key.removeprefix(_KEY_PREFIX)
    return _REPEAT_SUFFIX.sub("", key)


def _order(entry: EntryFact) -> tuple[datetime, int]:
    return (entry.valid_from, entry.id)


def _succeeded(entry: EntryFact) -> bool:
    outcome = entry.fields.get("outcome")
    return outcome == "success" if outcome is not None else bool(_items(entry, "path"))


def _failed_tools(entry: EntryFact) -> set[str]:
    return {str(f.get("tool")) for f in _items(entry, "failures")}


def _items(entry: EntryFact, name: str) -> list[Json]:
    value = entry.fields.get(name)
    if not isinstance(value, list):
        return []
    return [dict(item) for item in value if isinstance(item, Mapping)]


def _failure_id(failure: Json) -> tuple[str, str]:
    return (normalize(str(failure.get("tool", ""))), normalize(str(failure.get("error", ""))))


def _failures(ordered: list[EntryFact]) -> tuple[Json, ...]:
    seen: dict[tuple[str, str], Json] = {}
    for entry in ordered:
        for failure in _items(entry, "failures"):
            seen.setdefault(_failure_id(failure), failure)
    return tuple(seen.values())


def _applies_to(ordered: list[EntryFact]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for entry in ordered:
        value = entry.fields.get("applies_to")
        for item in value if isinstance(value, list) else []:
            if isinstance(item, str) and item.strip():
                seen.setdefault(normalize(item), item.strip())
    return tuple(seen.values())


def _session(entry: EntryFact) -> tuple[str, int]:
    """The session the builder stamped (``origin_session_id``), which retention leaves in
    place when it clears ``source_session_id``; an entry of no known session stands alone."""
    session = entry.fields.get("origin_session_id", entry.source_session_id)
    return ("entry", entry.id) if session is None else ("session", int(session))


def _goal_weight(entry: EntryFact) -> int:
    goal = text_field(entry.fields, "goal") or ""
    return len(SLOT.findall(goal)) + len(content_words(SLOT.sub(" ", goal)))


def fold_skill(entries: Iterable[EntryFact], failed: Iterable[EntryFact] = ()) -> SkillRow | None:
    """The row for the successful runs of one (agent, procedure) among ``entries``, with
    the failed runs ``failed`` recorded against it; None without a success."""
    ordered = sorted((e for e in entries if is_experience(e)), key=_order)
    succeeded = [e for e in ordered if _succeeded(e)]
    if not succeeded:
        return None
    failures = sorted((e for e in failed if is_experience(e)), key=_order)
    latest = succeeded[-1]
    best = max(succeeded, key=lambda e: (_goal_weight(e), e.valid_from, e.id))
    last_failure = failures[-1].valid_from if failures else None
    since = [e for e in succeeded if last_failure is None or e.valid_from > last_failure]
    return SkillRow(
        agent_id=latest.owner_id,
        skill_key=skill_key_of(latest),
        goal=text_field(best.fields, "goal") or best.statement,
        steps=_steps(succeeded),
        failures=_failures(sorted([*ordered, *failures], key=_order)),
        applies_to=_applies_to(ordered),
        evidence_count=len({_session(e) for e in succeeded}),
        source_entry_ids=tuple(sorted({e.id for e in [*ordered, *failures]})),
        failure_count=len({_session(e) for e in failures}),
        successes_since_failure=len({_session(e) for e in since}),
        last_failure_at=last_failure,
    )


def _steps(succeeded: list[EntryFact]) -> tuple[Json, ...]:
    """The latest success's path; an argument whose value differs between the successes
    is no constant of the procedure: it becomes its slot."""
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    for entry in succeeded:
        for step in _items(entry, "path"):
            for name, value in (step.get("args") or {}).items():
                seen[(str(step.get("tool")), name)].add(json.dumps(value, sort_keys=True))
    steps = []
    for step in _items(succeeded[-1], "path"):
        tool, args = str(step.get("tool")), dict(step.get("args") or {})
        varied = {n: "{" + slot_name(n) + "}" for n in args if len(seen[(tool, n)]) > 1}
        steps.append({**step, "args": {**args, **varied}})
    return tuple(steps)


def skill_rows(entries: Iterable[EntryFact]) -> list[SkillRow]:
    """Every skill row the entries give (any agents), ordered by agent and skill key."""
    groups: dict[tuple[str, str], list[EntryFact]] = defaultdict(list)
    failed: dict[str, list[EntryFact]] = defaultdict(list)
    for entry in entries:
        if not is_experience(entry):
            continue
        if _succeeded(entry):
            groups[(entry.owner_id, skill_key_of(entry))].append(entry)
        else:
            failed[entry.owner_id].append(entry)
    rows = (
        fold_skill(group, [f for f in failed[agent] if _failed_tools(f) & _tools(key, group)])
        for (agent, key), group in sorted(groups.items())
    )
    return [row for row in rows if row is not None]


def _tools(key: str, group: list[EntryFact]) -> set[str]:
    """The tools a procedure uses: its successful paths' tools."""
    return {str(step.get("tool")) for e in group for step in _items(e, "path")} or set(
        key.split("+")
    )


def policy_review(
    row: SkillRow, status: str, reviewed_by: str | None, policy: SkillPolicy
) -> str | None:
    """The status the publication policy gives a stored proposal, or None to leave it:
    published once it has enough successes since its last failure, back to proposed when
    the policy had published it and it failed since."""
    wanted = policy.auto_publish_after
    ready = wanted > 0 and row.successes_since_failure >= wanted
    if status == "proposed" and reviewed_by is None and ready:
        return "published"
    if status == "published" and reviewed_by == POLICY_REVIEWER and not ready:
        return "proposed"
    return None


def reconcile_skill(
    stored: SkillRow | None, reviewed: bool, folded: SkillRow | None
) -> SkillRow | None:
    """What a stored row becomes after recomputation; None: the row goes (or never was).

    New evidence replaces the derived fields (the review columns are left alone). Without
    evidence, a row never reviewed is deleted; a reviewed one stays — a rejection must
    still hold when evidence returns — with its evidence cleared and its content kept.
    """
    if folded is not None:
        return folded
    if stored is None or not reviewed:
        return None
    return replace(
        stored,
        evidence_count=0,
        source_entry_ids=(),
        failure_count=0,
        successes_since_failure=0,
        last_failure_at=None,
    )
