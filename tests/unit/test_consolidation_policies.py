"""The consolidation policies by example: supersede, merge, decay, caps; run windows."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consolidation import (
    JOBS,
    EntryState,
    RetentionPolicy,
    UnknownJob,
    apply,
    lock_key,
    plan_caps,
    plan_decay,
    plan_merge,
    plan_supersede,
    retention_score,
    window_for,
)
from ledger.sqlfile import load_queries

T0 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2025, 12, 1, tzinfo=UTC)


def entry(
    id: int,
    value: str | None = "tea",
    *,
    kind: str = "preference",
    key: str = "preference:drink",
    hours: float = 0,
    owner: str = "maya",
    status: str = "active",
    confidence: float = 0.8,
    statement: str | None = None,
    events: tuple[int, ...] | None = None,
    vector: Any = None,
    model: str | None = "m",
    **fields: Any,
) -> EntryState:
    if value is not None:
        fields["object"] = value
    return EntryState(
        id=id,
        owner_type="agent" if kind == "agent_experience" else "user",
        owner_id=owner,
        kind=kind,
        key=key,
        statement=statement or f"{owner.title()} likes {value}.",
        valid_from=T0 + timedelta(hours=hours),
        recorded_at=T0 + timedelta(hours=hours),
        status=status,
        confidence=confidence,
        fields=fields,
        embedding=None if vector is None else np.asarray(vector, dtype=np.float32),
        embedding_model=None if vector is None else model,
        source_event_ids=events or (id * 10,),
        source_external_ids=tuple(f"m-{e}" for e in (events or (id * 10,))),
    )


def applied(entries: list[EntryState], changes: Any, now: datetime = NOW) -> dict[int, EntryState]:
    """Every entry after the changes (changed or not)."""
    return {**{e.id: e for e in entries}, **apply(entries, changes, now=now)}


# ------------------------------------------------------------------------------ supersede


def test_a_newer_value_supersedes_the_older_from_its_event_time() -> None:
    btc, eth = entry(1, "BTC", hours=0), entry(2, "ETH", hours=48)
    [change] = plan_supersede([eth, btc])
    assert (change.old, change.new, change.valid_to) == (1, 2, eth.valid_from)
    after = applied([btc, eth], [change])
    assert after[1].status == "superseded" and after[1].superseded_by == 2
    assert after[1].valid_to == eth.valid_from and after[1].expired_at == NOW
    assert after[2].status == "active" and after[2].valid_to is None


def test_the_same_value_restated_supersedes_nothing() -> None:
    assert plan_supersede([entry(1, "Tea"), entry(2, " tea. ", hours=5)]) == []


def test_a_dislike_supersedes_a_like_of_the_same_thing() -> None:
    like, hate = entry(1, "coffee"), entry(2, "coffee", hours=3, polarity="negative")
    assert [(c.old, c.new) for c in plan_supersede([like, hate])] == [(1, 2)]


def test_keys_are_compared_like_the_profile_and_owners_and_keys_stay_apart() -> None:
    facts = [
        entry(1, "tea", key="preference:drink"),
        entry(2, "coffee", key="Preference:Drink ", hours=1),
        entry(3, "water", key="preference:drink", owner="tom", hours=2),
        entry(4, "jazz", key="preference:music", hours=3),
    ]
    assert [(c.old, c.new) for c in plan_supersede(facts)] == [(1, 2)]


def test_non_profile_kinds_are_never_superseded() -> None:
    facts = [entry(1, "x", kind="event", key="event:a"), entry(2, "y", kind="event", key="event:a")]
    assert plan_supersede(facts) == []


def test_a_late_older_fact_slots_into_the_timeline_without_overlap() -> None:
    btc, doge, eth = entry(1, "BTC", hours=0), entry(3, "DOGE", hours=10), entry(2, "ETH", hours=20)
    first = applied([btc, eth], plan_supersede([btc, eth]))
    assert first[1].superseded_by == 2
    changes = plan_supersede([*first.values(), doge])
    assert sorted((c.old, c.new) for c in changes) == [(1, 3), (3, 2)]
    after = applied([*first.values(), doge], changes)
    assert after[1].valid_to == doge.valid_from and after[3].valid_to == eth.valid_from
    assert after[1].expired_at == NOW  # kept from the first supersession
    assert after[2].status == "active"


def test_a_tie_in_event_time_goes_to_the_more_confident_fact() -> None:
    low, high = entry(1, "tea", confidence=0.6), entry(2, "coffee", confidence=0.9)
    assert [(c.old, c.new) for c in plan_supersede([high, low])] == [(1, 2)]


def test_merged_facts_count_as_said_but_are_never_changed() -> None:
    merged = entry(1, "tea", status="merged")
    later = entry(2, "coffee", hours=5)
    earlier = entry(3, "water", hours=-5)
    changes = plan_supersede([merged, later, earlier])
    assert [(c.old, c.new) for c in changes] == [(3, 1)]  # water ended when tea was said


def test_an_archived_fact_is_superseded_by_a_newer_value() -> None:
    old, new = entry(1, "tea", status="archived"), entry(2, "coffee", hours=1)
    assert applied([old, new], plan_supersede([old, new]))[1].status == "superseded"


# ------------------------------------------------------------------------------ merge


def test_exact_duplicates_merge_into_the_most_confident_with_the_union_of_provenance() -> None:
    a = entry(1, None, kind="experience", key="experience:a", statement="Maya tried sushi.")
    b = replace(a, id=2, statement="maya tried  sushi", confidence=0.9)
    b = replace(b, source_event_ids=(5, 7), source_external_ids=("m-5", "m-7"))
    c = replace(a, id=3, statement="Maya tried sushi!", confidence=0.9, access_count=3)
    [m] = plan_merge([c, a, b])
    assert (m.survivor, m.merged) == (2, (1, 3))
    assert m.source_event_ids == (5, 7, 10) and m.confidence == pytest.approx(0.9)
    assert m.access_count == 3
    after = applied([a, b, c], [m])
    assert after[2].source_event_ids == (5, 7, 10) and after[2].status == "active"
    assert after[1].status == after[3].status == "merged"
    assert set(after[2].source_external_ids) == {"m-10", "m-5", "m-7"}


def test_near_duplicate_vectors_merge_above_the_threshold_only() -> None:
    base = np.array([1.0, 0.0, 0.0])
    close = np.array([0.95, np.sqrt(1 - 0.95**2), 0.0])  # cosine 0.95
    far = np.array([0.9, np.sqrt(1 - 0.9**2), 0.0])  # cosine 0.90 to base
    kw: dict[str, Any] = {"kind": "experience", "key": "experience:x"}
    facts = [
        entry(1, None, statement="A.", vector=base, **kw),
        entry(2, None, statement="B.", vector=close, **kw),
        entry(3, None, statement="C.", vector=-far, **kw),
    ]
    assert [(m.survivor, m.merged) for m in plan_merge(facts, threshold=0.92)] == [(1, (2,))]
    assert plan_merge(facts, threshold=0.96) == []


def test_vectors_of_different_models_are_never_compared() -> None:
    v = [1.0, 0.0]
    kw: dict[str, Any] = {"kind": "experience", "key": "experience:x", "vector": v}
    facts = [entry(1, None, statement="A.", model="a", **kw), entry(2, None, statement="B.", **kw)]
    assert plan_merge(facts) == []


def test_profile_facts_with_different_values_never_merge_however_close() -> None:
    v = [1.0, 0.0]
    assert plan_merge([entry(1, "BTC", vector=v), entry(2, "ETH", vector=v, hours=1)]) == []


def test_profile_facts_of_one_key_and_value_merge_however_worded() -> None:
    said = entry(1, "lactose-intolerant", key="constraint:diet:lactose-intolerant",
                 statement="Nadia is lactose-intolerant.", vector=[1.0, 0.0])  # fmt: skip
    again = replace(said, id=2, statement="Nadia is still lactose-intolerant if u plan the menu.",
                    embedding=np.asarray([0.6, 0.8], dtype=np.float32),  # cosine 0.6
                    valid_from=T0 + timedelta(days=30), source_event_ids=(20,))  # fmt: skip
    [m] = plan_merge([said, again])
    assert (m.survivor, m.merged, m.source_event_ids) == (2, (1,), (10, 20))
    assert "the same key and value" in m.reason


def test_profile_facts_of_different_keys_never_merge_however_alike() -> None:
    coffee = entry(1, "coffee", key="preference:coffee", statement="Maya loves coffee.")
    drink = entry(2, "coffee", key="preference:drink", statement="Maya loves coffee.", hours=1)
    assert plan_merge([coffee, drink]) == []  # each is a profile row of its own


def test_a_merged_profile_fact_leaves_the_latest_one_current() -> None:
    v = [1.0, 0.0]
    old = entry(1, "tea", vector=v, confidence=0.95, statement="Maya likes tea.")
    new = entry(2, "tea", vector=v, hours=9, confidence=0.7, statement="Maya enjoys tea.")
    [m] = plan_merge([old, new])
    assert (m.survivor, m.merged, m.confidence) == (2, (1,), pytest.approx(0.95))


def test_dated_facts_merge_only_on_the_same_event_time() -> None:
    v = [1.0, 0.0]
    kw: dict[str, Any] = {"kind": "event", "key": "event:x", "vector": v}
    may = entry(1, None, statement="Maya ran on 3 May.", event_time="2025-05-03", **kw)
    june = entry(2, None, statement="Maya ran on 3 June.", event_time="2025-06-03", **kw)
    again = entry(3, None, statement="Maya ran 3 May.", event_time="2025-05-03", **kw)
    assert [(m.survivor, m.merged) for m in plan_merge([may, june, again])] == [(1, (3,))]


def test_agent_experiences_and_inactive_entries_are_never_merged() -> None:
    exp = [entry(i, None, kind="agent_experience", key="a", statement="X.") for i in (1, 2)]
    gone = [entry(i, None, kind="experience", key="e", statement="Y.", status="superseded")
            for i in (3, 4)]  # fmt: skip
    assert plan_merge([*exp, *gone]) == []


# ------------------------------------------------------------------------------ decay and caps


def aged(e: EntryState, days: float, *, accesses: int = 0, importance: float = 0.3) -> EntryState:
    return replace(
        e, recorded_at=NOW - timedelta(days=days), access_count=accesses, importance=importance
    )


def episodic(id: int) -> EntryState:
    return entry(id, None, kind="episodic", key=f"episodic:{id}", statement=f"Turn {id}.")


def test_decay_archives_old_unused_weak_entries_only() -> None:
    policy = RetentionPolicy()
    facts = [
        aged(episodic(1), 200),  # old, unused, weak: archived
        aged(episodic(2), 80),  # young
        aged(episodic(3), 200, accesses=2),  # used
        aged(entry(4, "tea"), 400),  # a profile fact: exempt
        aged(episodic(5), 100, importance=1.0),  # old but strong: not yet
    ]
    assert [a.id for a in plan_decay(facts, now=NOW, policy=policy)] == [1]
    assert retention_score(facts[4], NOW, policy) > policy.threshold
    later = NOW + timedelta(days=120)
    assert [a.id for a in plan_decay(facts, now=later, policy=policy)] == [1, 2, 5]


def test_a_recent_access_resets_the_idle_time() -> None:
    e = replace(aged(episodic(1), 300), last_accessed_at=NOW - timedelta(days=5), access_count=1)
    assert plan_decay([e], now=NOW, policy=RetentionPolicy()) == []


def test_a_fact_said_again_does_not_decay_with_its_older_merge_survivor() -> None:
    """The survivor is the older entry (as confident, lower id): the restatement recorded
    an hour ago counts as its latest use."""
    said = replace(episodic(1), statement="Maya tried sushi.", confidence=0.8)
    again = replace(aged(said, 0), id=2, recorded_at=NOW - timedelta(hours=1))
    [m] = plan_merge([aged(said, 130), again])
    assert m.survivor == 1
    [survivor] = [e for e in applied([aged(said, 130), again], [m]).values() if e.id == 1]
    assert plan_decay([survivor], now=NOW, policy=RetentionPolicy()) == []
    assert plan_decay([aged(said, 130)], now=NOW, policy=RetentionPolicy()) != []


def test_caps_archive_the_lowest_scoring_and_protected_kinds_last() -> None:
    policy = RetentionPolicy(max_active_per_owner=3)
    facts = [
        aged(entry(1, "tea"), 300, importance=0.0),  # a profile fact: protected
        aged(episodic(2), 10, importance=0.9),
        aged(episodic(3), 300, importance=0.1),
        aged(episodic(4), 200, importance=0.1),
        aged(episodic(5), 10, importance=0.2),
    ]
    assert [a.id for a in plan_caps(facts, now=NOW, policy=policy)] == [3, 4]
    tight = RetentionPolicy(max_active_per_owner=1)
    assert [a.id for a in plan_caps(facts, now=NOW, policy=tight)] == [2, 3, 4, 5]


# ------------------------------------------------------------------------------ runs


def test_schedule_windows_are_aligned_to_the_epoch() -> None:
    w = window_for(datetime(2025, 9, 1, 9, 7, 31, tzinfo=UTC), timedelta(minutes=5))
    assert (w.start, w.end) == (
        datetime(2025, 9, 1, 9, 5, tzinfo=UTC),
        datetime(2025, 9, 1, 9, 10, tzinfo=UTC),
    )
    assert window_for(w.end, timedelta(minutes=5)).start == w.end
    with pytest.raises(ValueError):
        window_for(NOW, timedelta(0))


def test_every_job_has_its_own_lock_key_and_unknown_jobs_are_rejected() -> None:
    assert len({lock_key(j) for j in JOBS}) == len(JOBS)
    with pytest.raises(UnknownJob, match="sweep"):
        lock_key("compact")


def test_every_query_consolidation_uses_exists() -> None:
    queries = load_queries("consolidation")
    package = Path(__file__).resolve().parents[2] / "consolidation"
    pattern = re.compile(r"Q\[\"(\w+)\"\]|\"(\w+_tenants)\"")  # tenants() takes a name
    used = {
        a or b for path in package.glob("*.py") for a, b in pattern.findall(path.read_text("utf-8"))
    }
    assert used and used <= queries.keys()
