"""The digest policy by example: topics of one owner's facts, what to write and archive."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from consolidation.digest import DigestPolicy, plan_digests, plan_topics
from consolidation.model import EntryState, union_provenance

T0 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
POLICY = DigestPolicy()
MODEL = "m"
DIM = 16


def fact(
    id: int,
    topic: int,
    *,
    day: int = 0,
    status: str = "active",
    model: str = MODEL,
) -> EntryState:
    """A fact whose vector is what every fact of the owner shares (its name, its context)
    plus a direction of its own topic and a little noise."""
    rng = np.random.default_rng(id)
    vector = np.zeros(DIM, dtype=np.float32)
    vector[0] = 3.0  # the owner's share
    vector[1 + topic] = 1.0
    vector += rng.normal(0, 0.05, DIM).astype(np.float32)
    return EntryState(
        id=id,
        owner_type="user",
        owner_id="maya",
        kind="experience",
        key=f"experience:{id}",
        statement=f"Maya did thing {id}",
        valid_from=T0 + timedelta(days=day),
        recorded_at=T0 + timedelta(days=day),
        status=status,
        embedding=vector,
        embedding_model=model,
        source_event_ids=(100 + id,),
        source_external_ids=(f"D{id}",),
    )


HIKES = [fact(i, 0, day=10 - i) for i in (1, 2, 3, 4)]
POTTERY = [fact(i, 1, day=i) for i in (5, 6, 7, 8)]
LONE = fact(9, 2)


def test_facts_on_one_topic_make_one_digest_and_a_lone_fact_none() -> None:
    # every pair's raw cosine is about 0.9 (the owner's share): only centred do they part
    assert plan_topics([*HIKES, *POTTERY, LONE], POLICY, MODEL) == [(1, 2, 3, 4), (5, 6, 7, 8)]


def test_the_topics_do_not_depend_on_the_order_facts_come_in() -> None:
    facts = [*HIKES, *POTTERY, LONE]
    for seed in range(5):
        random.Random(seed).shuffle(facts)
        assert plan_topics(facts, POLICY, MODEL) == [(1, 2, 3, 4), (5, 6, 7, 8)]


def test_too_few_facts_inactive_ones_and_vectors_of_another_model_make_no_topic() -> None:
    assert plan_topics(HIKES[:2], POLICY, MODEL) == []
    gone = [fact(1, 0, status="superseded"), fact(2, 0, model="other"), *HIKES[2:], *POTTERY]
    assert plan_topics(gone, POLICY, MODEL) == [(5, 6, 7, 8)]


def test_a_topic_takes_at_most_size_free_facts_and_overlap_facts_of_other_topics() -> None:
    hikes = [fact(i, 0) for i in range(11, 18)]  # seven
    policy = DigestPolicy(size=4, overlap=2, min_facts=3)
    topics = plan_topics([*hikes, *POTTERY], policy, MODEL)
    # four hikes and the two nearest of the other three; those three and two taken hikes;
    # the pottery (no hike is near it)
    assert [len(t) for t in topics] == [6, 5, 4]
    assert set(topics[0]) | set(topics[1]) == {f.id for f in hikes}
    assert topics[2] == (5, 6, 7, 8)
    without = plan_topics([*hikes, *POTTERY], DigestPolicy(size=4, overlap=0), MODEL)
    assert [len(t) for t in without] == [4, 3, 4]


def test_a_digest_says_its_facts_in_time_order_with_their_provenance() -> None:
    plan = plan_digests([*HIKES, *POTTERY], {}, POLICY, MODEL)
    hikes = next(d for d in plan.write if d.ids == (1, 2, 3, 4))
    assert [f.id for f in hikes.facts] == [4, 3, 2, 1]  # day 6, 7, 8, 9
    assert (
        hikes.statement == "Maya did thing 4. Maya did thing 3. Maya did thing 2. Maya did thing 1."
    )
    assert hikes.valid_from == HIKES[0].valid_from  # the latest fact's
    assert hikes.provenance == ((101, 102, 103, 104), ("D1", "D2", "D3", "D4"))
    assert hikes.key.startswith("digest:") and hikes.key != plan.write[1].key


def test_a_digest_that_is_still_a_topic_stays_and_one_that_is_not_is_archived() -> None:
    digests = {50: ("active", (1, 2, 3, 4)), 51: ("active", (5, 6, 7))}
    plan = plan_digests([*HIKES, *POTTERY], digests, POLICY, MODEL)
    assert plan.archive == (51,)
    assert [d.ids for d in plan.write] == [(5, 6, 7, 8)]
    assert not plan_digests([*HIKES, *POTTERY], {50: digests[50], 52: ("active", (5, 6, 7, 8))},
                            POLICY, MODEL)  # fmt: skip


def test_a_topic_whose_digest_was_deleted_is_not_written_again() -> None:
    plan = plan_digests([*HIKES, *POTTERY], {50: ("deleted", (1, 2, 3, 4))}, POLICY, MODEL)
    assert [d.ids for d in plan.write] == [(5, 6, 7, 8)]


def test_an_owner_without_facts_keeps_no_digest() -> None:
    assert plan_digests([], {50: ("active", (1, 2, 3))}, POLICY, MODEL).archive == (50,)


def test_provenance_unions_keep_each_external_id_beside_its_event() -> None:
    """A merge or a digest of facts from several sessions: the pairs stay aligned (sorting
    the two lists apart would pair event 66 with another turn's id)."""
    late = replace(fact(1, 0), source_event_ids=(338,), source_external_ids=("D16:4",))
    early = replace(fact(2, 0), source_event_ids=(66,), source_external_ids=("D4:8",))
    assert union_provenance([late, early]) == ((66, 338), ("D4:8", "D16:4"))
    retained = replace(late, source_external_ids=())
    assert union_provenance([retained, early]) == ((66, 338), ("D4:8",))
