"""The read-model folds: the rules of ``user_profile`` and ``skill_proposal``, and the
property that applying entry changes incrementally — recomputing the owners each batch
touched — in any batch split equals a full rebuild from the final entries.

The incremental model below does what the runner does per batch (recompute every row of
each touched owner, reconcile skill rows with their review state); the rebuild folds the
final entries in a shuffled order.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.sqlfile import load_queries
from materializers.facts import EntryFact
from materializers.profile import Conflict, fold_profile, profile_rows
from materializers.skills import (
    POLICY_REVIEWER,
    SkillPolicy,
    SkillRow,
    fold_skill,
    policy_review,
    reconcile_skill,
    skill_rows,
)
from tests.examples import examples

T0 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
Profile = dict[tuple[str, str], Any]
Skills = dict[tuple[str, str], tuple[SkillRow, str]]  # row, review status ('' = never)


def fact(
    id: int,
    value: str | None = "tea",
    *,
    key: str = "preference:drink",
    kind: str = "preference",
    hours: int = 0,
    confidence: float = 0.8,
    status: str = "active",
    user: str = "maya",
    **fields: Any,
) -> EntryFact:
    if value is not None:
        fields["object"] = value
    return EntryFact(
        id=id,
        owner_type="user",
        owner_id=user,
        kind=kind,
        key=key,
        statement=f"Maya says {value or 'something'} (#{id}).",
        confidence=confidence,
        valid_from=T0 + timedelta(hours=hours),
        source_session_id=id,
        fields=fields,
        status=status,
    )


def experience(
    id: int,
    *,
    skill: str = "book-train",
    hours: int = 0,
    session: int | None = 1,
    ok: bool = True,
    path: tuple[str, ...] = ("search", "book"),
    failures: tuple[tuple[str, str], ...] = (),
    applies_to: tuple[str, ...] = (),
    agent: str = "atlas",
    status: str = "active",
) -> EntryFact:
    return EntryFact(
        id=id,
        owner_type="agent",
        owner_id=agent,
        kind="agent_experience",
        key=f"agent_experience:{skill}",
        statement=f"Atlas handled task {id}.",
        confidence=0.8,
        valid_from=T0 + timedelta(hours=hours),
        source_session_id=session,
        fields={
            "skill_key": skill,
            "goal": f"goal of {id}",
            "path": [{"tool": t, "args": {"n": id}} for t in path],
            "failures": [{"tool": t, "args": {}, "error": e} for t, e in failures],
            "applies_to": list(applies_to),
            "outcome": "success" if ok else "failure",
        },
        status=status,
    )


# ------------------------------------------------------------------------------ profile rules


def test_latest_valid_fact_is_current_and_the_other_value_is_a_conflict() -> None:
    row = fold_profile([fact(2, "coffee", hours=1), fact(1, "tea", hours=5)])
    assert row is not None
    assert (row.value, row.source_entry_ids) == ("tea", (1,))
    assert row.valid_from == T0 + timedelta(hours=5)
    assert row.conflicts == (
        Conflict(2, "coffee", "Maya says coffee (#2).", T0 + timedelta(hours=1)),
    )


def test_equal_valid_time_is_decided_by_confidence_then_by_entry_id() -> None:
    by_confidence = fold_profile([fact(1, "tea", confidence=0.9), fact(2, "coffee")])
    by_id = fold_profile([fact(2, "coffee"), fact(1, "tea")])
    assert by_confidence is not None and by_confidence.value == "tea"
    assert by_id is not None and by_id.value == "coffee"


def test_the_same_value_in_other_case_and_spacing_supports_the_current_fact() -> None:
    row = fold_profile([fact(1, "Green  tea", hours=1), fact(2, "green tea."), fact(3, "milk")])
    assert row is not None
    assert (row.value, row.source_entry_ids) == ("Green  tea", (1, 2))
    assert [c.entry_id for c in row.conflicts] == [3]
    assert row.entry_ids == (1, 2, 3)


def test_a_dislike_disagrees_with_a_like_of_the_same_thing() -> None:
    row = fold_profile([fact(1, "coffee"), fact(2, "coffee", hours=1, polarity="negative")])
    assert row is not None
    assert row.value == "not coffee"
    assert [(c.entry_id, c.value) for c in row.conflicts] == [(1, "coffee")]


def test_value_falls_back_to_the_statement_and_the_key_is_normalized() -> None:
    row = fold_profile([fact(1, None, key=" Identity:Home  Town", kind="identity")])
    assert row is not None
    assert (row.key, row.value) == ("identity:home-town", "Maya says something (#1).")


def test_inactive_entries_and_other_kinds_are_not_part_of_the_profile() -> None:
    entries = [
        fact(1, "tea", status="superseded"),
        fact(2, "tea", kind="event"),
        fact(3, "tea", key="experience:tea", kind="experience"),
    ]
    assert fold_profile(entries) is None
    assert profile_rows(entries) == []


def test_profile_rows_group_by_user_and_key() -> None:
    rows = profile_rows(
        [fact(1), fact(2, key="goal:sail", kind="goal"), fact(3, user="tom"), fact(4)]
    )
    assert [(r.user_id, r.key, r.source_entry_ids) for r in rows] == [
        ("maya", "goal:sail", (2,)),
        ("maya", "preference:drink", (1, 4)),
        ("tom", "preference:drink", (3,)),
    ]


# ------------------------------------------------------------------------------ skill rules


def test_skill_takes_the_most_telling_goal_and_the_steps_of_the_latest_success() -> None:
    first = experience(1, hours=0, path=("search", "book"))
    telling = replace(first, fields={**first.fields, "goal": "book a train to {city} {date}"})
    row = fold_skill(
        [
            telling,
            experience(2, hours=2, path=("search", "book"), session=2),
            experience(3, hours=3, path=("search", "book"), session=3),
        ]
    )
    assert row is not None
    assert row.goal == "book a train to {city} {date}"
    assert [s["tool"] for s in row.steps] == ["search", "book"]
    assert (row.evidence_count, row.source_entry_ids) == (3, (1, 2, 3))


def test_an_argument_that_differs_between_successes_becomes_its_slot() -> None:
    row = fold_skill([experience(1), experience(2, hours=1, session=2)])
    assert row is not None
    assert [s["args"] for s in row.steps] == [{"n": "{value}"}, {"n": "{value}"}]  # one letter
    alone = fold_skill([experience(1)])
    assert alone is not None and alone.steps[0]["args"] == {"n": 1}


def test_no_success_means_no_proposal() -> None:
    assert fold_skill([experience(1, ok=False)]) is None
    assert skill_rows([experience(1, ok=False)]) == []


def test_a_failed_run_of_a_procedure_is_recorded_against_it() -> None:
    ok = [experience(1, hours=0, session=1), experience(2, hours=2, session=2)]
    broke = experience(3, hours=3, session=3, ok=False, path=("search",),
                       failures=(("book", "503: no seats"),))  # fmt: skip
    elsewhere = experience(4, hours=4, session=4, ok=False, path=(),
                           failures=(("fax", "no line"),))  # fmt: skip
    (row,) = skill_rows([*ok, broke, elsewhere])
    assert (row.evidence_count, row.failure_count, row.successes_since_failure) == (2, 1, 0)
    assert row.last_failure_at == broke.valid_from
    assert row.source_entry_ids == (1, 2, 3)
    assert ("book", "503: no seats") in [(f["tool"], f["error"]) for f in row.failures]
    (again,) = skill_rows([*ok, broke, experience(5, hours=5, session=5)])
    assert (again.evidence_count, again.successes_since_failure) == (3, 1)


def test_policy_publishes_after_enough_successes_and_takes_back_its_own_on_failure() -> None:
    row = fold_skill([experience(1), experience(2, hours=1, session=2)])
    assert row is not None
    off, two, three = SkillPolicy(), SkillPolicy(auto_publish_after=2), SkillPolicy(3)
    assert policy_review(row, "proposed", None, off) is None
    assert policy_review(row, "proposed", None, three) is None
    assert policy_review(row, "proposed", None, two) == "published"
    failed = replace(row, successes_since_failure=0, failure_count=1)
    assert policy_review(failed, "published", POLICY_REVIEWER, two) == "proposed"
    assert policy_review(failed, "published", "ops-lead", two) is None  # a person decided
    assert policy_review(row, "rejected", "ops-lead", two) is None


def test_failures_and_where_it_applies_are_deduplicated_in_order_of_first_appearance() -> None:
    row = fold_skill(
        [
            experience(2, hours=2, failures=(("a", "Timeout"), ("b", "500")), applies_to=("X",)),
            experience(1, hours=1, failures=(("b", "500 "),), applies_to=("Porto", "x")),
        ]
    )
    assert row is not None
    assert [(f["tool"], f["error"]) for f in row.failures] == [("b", "500 "), ("a", "Timeout")]
    assert row.applies_to == ("Porto", "x")


def test_evidence_counts_sessions_and_entries_without_a_session_on_their_own() -> None:
    entries = [
        experience(1, session=7),
        experience(2, session=7),
        experience(3, session=None),
        experience(4, session=None),
    ]
    row = fold_skill(entries)
    assert row is not None and row.evidence_count == 3


def test_skill_key_falls_back_to_the_entry_key_without_its_repeat_suffix() -> None:
    entry = experience(1, skill="book-train")
    bare = replace(
        entry,
        id=2,
        key="agent_experience:book-train:2",
        fields={"goal": "g", "path": [{"tool": "book"}]},
    )
    rows = skill_rows([entry, bare, experience(3, skill="find-flight", agent="zed")])
    assert [(r.agent_id, r.skill_key, r.source_entry_ids) for r in rows] == [
        ("atlas", "book-train", (1, 2)),
        ("zed", "find-flight", (3,)),
    ]


def test_reconcile_keeps_a_reviewed_row_without_evidence_and_drops_an_unreviewed_one() -> None:
    row = fold_skill([experience(1)])
    assert row is not None
    assert reconcile_skill(row, False, None) is None
    kept = reconcile_skill(row, True, None)
    assert kept == replace(row, evidence_count=0, source_entry_ids=(), successes_since_failure=0)
    newer = fold_skill([experience(2, session=2)])
    assert reconcile_skill(kept, True, newer) == newer
    assert reconcile_skill(None, False, None) is None


# ------------------------------------------------------------------------------ the property

USERS = ("maya", "tom")
AGENTS = ("atlas", "zed")
PROFILE_KEYS = ("preference:drink", "Preference:Drink ", "identity:location", "goal:sail")
USER_KINDS = ("preference", "identity", "goal", "event")
VALUES = ("tea", "Tea ", "coffee", "water")
SKILL_KEYS = ("book-train", "find-flight")
TOOLS = ("search", "search_v2", "book")
INACTIVE = ("superseded", "merged", "archived", "deleted")


@dataclass(frozen=True)
class Add:
    agent: bool
    owner: int
    key: int
    kind: int
    value: int
    hours: int
    confidence: float
    session: int | None
    ok: bool
    tools: tuple[int, ...]
    negative: bool


@dataclass(frozen=True)
class Update:  # the builder rewriting an entry in place (new value, key or event time)
    target: int
    key: int
    value: int
    hours: int


@dataclass(frozen=True)
class End:  # supersede, merge, archive, delete
    target: int
    status: str


@dataclass(frozen=True)
class Review:  # of one of the skill rows that exist at the time
    target: int
    decision: str


adds = st.builds(
    Add,
    agent=st.booleans(),
    owner=st.integers(0, 1),
    key=st.integers(0, 3),
    kind=st.integers(0, 3),
    value=st.integers(0, 3),
    hours=st.integers(0, 3),  # few distinct times: ties and out-of-order event times
    confidence=st.sampled_from([0.6, 0.8]),
    session=st.one_of(st.none(), st.integers(1, 3)),
    ok=st.booleans(),
    tools=st.lists(st.integers(0, 2), max_size=3).map(tuple),
    negative=st.booleans(),
)
updates = st.builds(
    Update, st.integers(0, 40), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)
)
ends = st.builds(End, st.integers(0, 40), st.sampled_from(INACTIVE))
reviews = st.builds(Review, st.integers(0, 3), st.sampled_from(["p", "r"]))
changes = st.lists(st.one_of(adds, adds, updates, ends), min_size=1, max_size=30)
changes_and_reviews = st.lists(
    st.one_of(adds, adds, updates, ends, reviews, reviews), min_size=1, max_size=30
)


def new_entry(id: int, op: Add) -> EntryFact:
    if op.agent:
        tools = tuple(TOOLS[i] for i in op.tools)
        return experience(
            id,
            skill=SKILL_KEYS[op.key % 2],
            agent=AGENTS[op.owner],
            hours=op.hours,
            session=op.session,
            ok=op.ok,
            path=tools,
            failures=tuple((t, f"error {op.value}") for t in tools[:1]),
            applies_to=(VALUES[op.value],),
        )
    polarity = {"polarity": "negative"} if op.negative else {}
    return replace(
        fact(
            id,
            VALUES[op.value],
            key=PROFILE_KEYS[op.key],
            kind=USER_KINDS[op.kind],
            hours=op.hours,
            confidence=op.confidence,
            user=USERS[op.owner],
            **polarity,
        ),
        source_session_id=op.session,
    )


def updated(entry: EntryFact, op: Update) -> EntryFact:
    at = T0 + timedelta(hours=op.hours)
    if entry.owner_type == "agent":
        skill = SKILL_KEYS[op.key % 2]
        return replace(entry, valid_from=at, fields={**entry.fields, "skill_key": skill})
    fields = {**entry.fields, "object": VALUES[op.value]}
    return replace(entry, key=PROFILE_KEYS[op.key], valid_from=at, fields=fields)


def apply_change(store: dict[int, EntryFact], op: Any) -> tuple[str, str] | None:
    """Change the entry store; returns the owner whose entries changed."""
    if isinstance(op, Add):
        entry = new_entry(len(store) + 1, op)
        store[entry.id] = entry
        return entry.owner_type, entry.owner_id
    if not store:
        return None
    target = store[op.target % len(store) + 1]
    store[target.id] = (
        updated(target, op) if isinstance(op, Update) else replace(target, status=op.status)
    )
    return target.owner_type, target.owner_id


def recompute_owner(
    store: Iterable[EntryFact], owner: tuple[str, str], profile: Profile, skills: Skills
) -> None:
    """What the runner does for one owner: recompute all its rows."""
    owner_type, owner_id = owner
    mine = [e for e in store if (e.owner_type, e.owner_id) == owner]
    if owner_type == "user":
        for k in [k for k in profile if k[0] == owner_id]:
            del profile[k]
        profile.update({(r.user_id, r.key): r for r in profile_rows(mine)})
        return
    folded = {(r.agent_id, r.skill_key): r for r in skill_rows(mine)}
    for k in {k for k in skills if k[0] == owner_id} | folded.keys():
        stored, review = skills.get(k, (None, ""))
        row = reconcile_skill(stored, review != "", folded.get(k))
        if row is None:
            skills.pop(k, None)
        else:
            skills[k] = (row, review)


def review(skills: Skills, decisions: dict[tuple[str, str], str], op: Review) -> None:
    keys = sorted(skills)
    if keys:
        k = keys[op.target % len(keys)]
        decisions[k] = "published" if op.decision == "p" else "rejected"
        skills[k] = (skills[k][0], decisions[k])


@dataclass
class Incremental:
    store: dict[int, EntryFact]
    profile: Profile
    skills: Skills
    decisions: dict[tuple[str, str], str]  # the last review of each skill that had one


def incremental(ops: list[Any], cuts: list[int]) -> Incremental:
    """Apply the changes batch by batch, recomputing the touched owners after each batch;
    reviews take effect after their batch (they are API calls between runner runs)."""
    state = Incremental({}, {}, {}, {})
    bounds = sorted({0, len(ops), *(c % (len(ops) + 1) for c in cuts)})
    for start, stop in itertools.pairwise(bounds):
        batch = ops[start:stop]
        touched = {apply_change(state.store, op) for op in batch if not isinstance(op, Review)}
        for owner in sorted(o for o in touched if o is not None):
            recompute_owner(state.store.values(), owner, state.profile, state.skills)
        for op in batch:
            if isinstance(op, Review):
                review(state.skills, state.decisions, op)
    return state


def rebuild(
    entries: list[EntryFact], reviews: dict[tuple[str, str], tuple[SkillRow, str]]
) -> tuple[Profile, Skills]:
    """From the final entries alone, plus the review state of existing skill rows."""
    profile: Profile = {}
    skills: Skills = dict(reviews)
    owners = {(e.owner_type, e.owner_id) for e in entries} | {("agent", a) for a, _ in skills}
    for owner in sorted(owners):
        recompute_owner(entries, owner, profile, skills)
    return profile, skills


def comparable(skills: Skills) -> dict[tuple[str, str], Any]:
    """Rows without evidence keep whatever content they last had: compare their state only."""
    return {
        k: (row if row.evidence_count else (row.evidence_count, row.source_entry_ids), status)
        for k, (row, status) in skills.items()
    }


@settings(max_examples=examples(300), deadline=None)
@given(ops=changes, cuts=st.lists(st.integers(0, 30), max_size=6), shuffle=st.randoms())
def test_incremental_read_models_equal_a_full_rebuild(
    ops: list[Any], cuts: list[int], shuffle: random.Random
) -> None:
    state = incremental(ops, cuts)
    entries = list(state.store.values())
    shuffle.shuffle(entries)
    assert (state.profile, state.skills) == rebuild(entries, {})


@settings(max_examples=examples(200), deadline=None)
@given(ops=changes_and_reviews, cuts=st.lists(st.integers(0, 30), max_size=6), shuffle=st.randoms())
def test_reviews_survive_incremental_changes_and_rebuilds(
    ops: list[Any], cuts: list[int], shuffle: random.Random
) -> None:
    state = incremental(ops, cuts)
    entries = list(state.store.values())
    shuffle.shuffle(entries)
    reviewed = {k: (row, status) for k, (row, status) in state.skills.items() if status}
    profile, skills = rebuild(entries, reviewed)
    assert profile == state.profile
    assert comparable(skills) == comparable(state.skills)
    assert {k: status for k, (_, status) in skills.items() if status} == state.decisions


# ------------------------------------------------------------------------------ queries


def test_every_query_the_materializers_use_exists() -> None:
    queries = load_queries("materializers")
    package = Path(__file__).resolve().parents[2] / "materializers"
    used = {
        name
        for path in package.glob("*.py")
        for name in re.findall(r"Q\[\"(\w+)\"\]", path.read_text("utf-8"))
    }
    assert used and used <= queries.keys()
