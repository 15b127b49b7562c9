"""The ``skill_proposal`` fold: one row per (agent, skill key) from the agent's experiences.

Pure: the same entries in any order give the same row. Of the active ``agent_experience``
entries of one agent and ``fields["skill_key"]``: the goal is the latest entry's; the steps
are the path of the latest entry that succeeded; failures and where it applies are the
deduplicated union in order of first appearance (event time, then entry id); the evidence
count is the number of distinct sessions (an entry whose ledger session was removed by
retention counts on its own).

Review state (proposed → published | rejected, by whom, when, why) is not derived from
entries: :func:`reconcile_skill` decides what recomputation does to a stored row so that
a review survives it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from materializers.facts import ACTIVE, EntryFact, normalize, text_field
from observations.entry import AGENT_EXPERIENCE

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


def _evidence(entries: list[EntryFact]) -> int:
    """Distinct sessions among the entries (an entry of no known session counts alone).
    The session is the one the builder stamped (``origin_session_id``), which retention
    leaves in place when it clears ``source_session_id``: the count stays the same."""
    sessions = set()
    for e in entries:
        session = e.fields.get("origin_session_id", e.source_session_id)
        sessions.add(("entry", e.id) if session is None else ("session", session))
    return len(sessions)


def fold_skill(entries: Iterable[EntryFact]) -> SkillRow | None:
    """The row for the active experiences of one (agent, skill key); None without any."""
    ordered = sorted((e for e in entries if is_experience(e)), key=_order)
    if not ordered:
        return None
    latest = ordered[-1]
    succeeded = [e for e in ordered if _succeeded(e)]
    return SkillRow(
        agent_id=latest.owner_id,
        skill_key=skill_key_of(latest),
        goal=text_field(latest.fields, "goal") or latest.statement,
        steps=tuple(_items(succeeded[-1], "path")) if succeeded else (),
        failures=_failures(ordered),
        applies_to=_applies_to(ordered),
        evidence_count=_evidence(ordered),
        source_entry_ids=tuple(sorted(e.id for e in ordered)),
    )


def skill_rows(entries: Iterable[EntryFact]) -> list[SkillRow]:
    """Every skill row the entries give (any agents), ordered by agent and skill key."""
    groups: dict[tuple[str, str], list[EntryFact]] = defaultdict(list)
    for entry in entries:
        if is_experience(entry):
            groups[(entry.owner_id, skill_key_of(entry))].append(entry)
    rows = (fold_skill(group) for _, group in sorted(groups.items()))
    return [row for row in rows if row is not None]


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
    return replace(stored, evidence_count=0, source_entry_ids=())
