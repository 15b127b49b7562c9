"""Properties of the consolidation policies over random memories:

* no job ever loses a source event id from the union of provenance of the entries it
  touches (merge keeps the union on the active survivors);
* supersede keeps every fact, and facts of one owner and key with different values never
  overlap in valid time;
* merge (and supersede) do not depend on the order entries come in;
* running any job twice equals running it once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidation import (
    Change,
    EntryState,
    RetentionPolicy,
    apply,
    plan_caps,
    plan_decay,
    plan_merge,
    plan_supersede,
)
from tests.examples import examples

T0 = datetime(2025, 6, 1, tzinfo=UTC)
NOW = datetime(2025, 12, 1, tzinfo=UTC)
POLICY = RetentionPolicy(max_active_per_owner=4)
KINDS = ("preference", "identity", "event", "episodic", "experience", "agent_experience")
KEYS = ("preference:drink", "Preference:Drink", "identity:location", "event:x", "misc")
VALUES = ("tea", "Tea.", "coffee", "water")
STATUSES = ("active", "active", "active", "active", "superseded", "merged", "archived")
# a few base directions: entries sharing one are near-duplicates (cosine ~0.99)
BASES = np.random.default_rng(1).normal(size=(3, 8)).astype(np.float32)
NOISE = np.random.default_rng(2).normal(scale=0.02, size=(15, 8)).astype(np.float32)
Plan = Callable[[list[EntryState]], list[Change]]
JOBS: dict[str, Plan] = {
    "supersede": lambda es: list(plan_supersede(es)),
    "merge": lambda es: list(plan_merge(es, threshold=0.92)),
    "decay": lambda es: list(plan_decay(es, now=NOW, policy=POLICY)),
    "caps": lambda es: list(plan_caps(es, now=NOW, policy=POLICY)),
}


@st.composite
def memories(draw: st.DrawFn) -> list[EntryState]:
    n = draw(st.integers(1, 14))
    out = []
    for i in range(1, n + 1):
        kind = draw(st.sampled_from(KINDS))
        hours = draw(st.integers(0, 4))  # few distinct times: ties
        status = draw(st.sampled_from(STATUSES))
        base = draw(st.one_of(st.none(), st.integers(0, 2)))
        vector = None
        if base is not None:
            vector = BASES[base] + NOISE[i]
        valid_from = T0 + timedelta(hours=hours)
        superseded = status == "superseded"
        events = tuple(draw(st.lists(st.integers(1, 30), min_size=1, max_size=3, unique=True)))
        out.append(
            EntryState(
                id=i,
                owner_type="agent" if kind == "agent_experience" else "user",
                owner_id=draw(st.sampled_from(("maya", "tom"))),
                kind=kind,
                key=draw(st.sampled_from(KEYS)),
                statement=draw(st.sampled_from(("A likes tea.", "a likes tea", "B.", "C."))),
                valid_from=valid_from,
                recorded_at=NOW - timedelta(days=draw(st.integers(0, 300))),
                status=status,
                valid_to=valid_from + timedelta(hours=1) if superseded else None,
                expired_at=T0 if status != "active" else None,
                superseded_by=draw(st.integers(1, n)) if superseded else None,
                confidence=draw(st.sampled_from((0.6, 0.8, 0.9))),
                importance=draw(st.sampled_from((0.1, 0.5, 0.9))),
                access_count=draw(st.integers(0, 3)),
                fields={"object": draw(st.sampled_from(VALUES)), "event_time": None},
                embedding=vector,
                embedding_model=None if vector is None else draw(st.sampled_from(("m", "m", "n"))),
                source_event_ids=events,
                source_external_ids=tuple(f"x{e}" for e in events),
            )
        )
    return out


def run(job: str, entries: list[EntryState]) -> list[EntryState]:
    """The entries after one run of ``job``."""
    changed = apply(entries, JOBS[job](entries), now=NOW)
    return [changed.get(e.id, e) for e in entries]


def event_ids(entries: list[EntryState], *, active_only: bool = False) -> set[int]:
    return {
        i for e in entries if not active_only or e.status == "active" for i in e.source_event_ids
    }


@settings(max_examples=examples(100), deadline=None)
@given(memories(), st.sampled_from(sorted(JOBS)))
def test_no_job_loses_a_source_event_id(entries: list[EntryState], job: str) -> None:
    after = run(job, entries)
    assert event_ids(after) == event_ids(entries)
    assert [e.id for e in after] == [e.id for e in entries]  # nothing deleted
    if job == "merge":  # the survivors carry what the merged entries had
        assert event_ids(after, active_only=True) == event_ids(entries, active_only=True)


@settings(max_examples=examples(100), deadline=None)
@given(memories(), st.sampled_from(sorted(JOBS)))
def test_running_a_job_twice_equals_running_it_once(entries: list[EntryState], job: str) -> None:
    once = run(job, entries)
    assert JOBS[job](once) == []
    assert run(job, once) == once


@settings(max_examples=examples(100), deadline=None)
@given(memories(), st.data())
def test_merge_and_supersede_do_not_depend_on_the_order_of_entries(
    entries: list[EntryState], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(entries))
    for job in ("merge", "supersede"):
        assert JOBS[job](shuffled) == JOBS[job](entries)


@settings(max_examples=examples(100), deadline=None)
@given(memories())
def test_superseded_facts_are_kept_and_different_values_never_overlap(
    entries: list[EntryState],
) -> None:
    after = run("supersede", entries)
    before = {e.id: e for e in entries}
    groups: dict[tuple[str, str, str], list[EntryState]] = defaultdict(list)
    for e in after:
        assert (e.statement, e.valid_from, e.value) == (
            before[e.id].statement,
            before[e.id].valid_from,
            before[e.id].value,
        )
        if e.kind in ("preference", "identity") and e.status != "merged":
            groups[(e.owner_type, e.owner_id, e.profile_key)].append(e)
    far = datetime.max.replace(tzinfo=UTC)
    for group in groups.values():
        for a in group:
            for b in group:
                if a.value == b.value or a.rank >= b.rank:
                    continue
                assert (a.valid_to or far) <= b.valid_from, (a, b)  # a ends before b begins
        current = max(group, key=lambda e: e.rank)
        assert all(e.value == current.value for e in group if e.status == "active")
