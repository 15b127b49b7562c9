"""Fusion, scoring and reranking: deterministic, monotone in recency, dedupe as documented."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval import Candidate, RetrievalWeights, Scored, fuse, rerank, score
from retrieval.periods import query_periods

NOW = datetime(2023, 6, 1, 12, 0, tzinfo=UTC)
W = RetrievalWeights()


def cand(entry_id: int, **kw: Any) -> Candidate:
    base: dict[str, Any] = {
        "entry_id": entry_id,
        "kind": "preference",
        "owner_type": "user",
        "owner_id": "maya",
        "key": f"preference:k{entry_id}",
        "statement": f"Maya statement number {entry_id}.",
        "valid_from": NOW - timedelta(days=3),
        "confidence": 0.8,
        "importance": 0.5,
        "source_event_ids": (entry_id,),
        "similarity": 0.5,
        "vector_rank": 1,
    }
    return Candidate(**{**base, **kw})


def scored(entry_id: int, value: float, **kw: Any) -> Scored:
    return Scored(cand(entry_id, **kw), value, {"score": value})


def ids(items: list[Scored]) -> list[int]:
    return [s.candidate.entry_id for s in items]


VOCABULARY = "maya oat milk paris dog hiking tea jazz mother nurse painting"
WORDS = st.sampled_from(VOCABULARY.split(" "))


@st.composite
def candidate_lists(draw: st.DrawFn) -> list[Candidate]:
    """Up to 25 candidates with unique ids and overlapping words, events and kinds."""
    out = []
    for i in range(1, draw(st.integers(0, 25)) + 1):
        similarity = draw(st.none() | st.floats(0, 1))
        item = cand(
            i,
            statement=" ".join(draw(st.lists(WORDS, min_size=1, max_size=6))),
            valid_from=NOW - timedelta(days=draw(st.floats(0, 400))),
            similarity=similarity,
            vector_rank=None if similarity is None else i,
            text_rank=draw(st.none() | st.integers(1, 50)),
            access_count=draw(st.integers(0, 500)),
            importance=draw(st.sampled_from([0.0, 0.5, 1.0])),
            kind=draw(st.sampled_from(["preference", "event", "session_summary"])),
            source_event_ids=tuple(sorted(draw(st.frozensets(st.integers(1, 8), min_size=1)))),
        )
        out.append(item)
    return out


candidates = candidate_lists()


def rank(items: list[Candidate], limit: int = 10) -> list[Scored]:
    return rerank(score(items, now=NOW, weights=W), weights=W, limit=limit)


@given(candidates, st.randoms())
def test_ranking_is_deterministic_and_independent_of_input_order(
    items: list[Candidate], rnd: Any
) -> None:
    expected = rank(items)
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert rank(shuffled) == expected
    scored = score(items, now=NOW, weights=W)
    rnd.shuffle(scored)
    assert rerank(scored, weights=W, limit=10) == expected


@given(candidates)
def test_ranking_is_sorted_by_score_then_entry_id(items: list[Candidate]) -> None:
    ranked = rank(items, limit=100)
    keys = [(-s.score, s.candidate.entry_id) for s in ranked]
    assert keys == sorted(keys)
    assert all(s.score >= W.min_score for s in ranked)


@given(candidates, st.integers(0, 12))
def test_stopping_early_at_the_limit_changes_nothing(items: list[Candidate], limit: int) -> None:
    assert rank(items, limit=limit) == rank(items, limit=1000)[:limit]


def test_equal_scores_are_ordered_by_entry_id() -> None:
    assert ids(rank([cand(9), cand(3), cand(5)])) == [3, 5, 9]


@given(st.floats(0, 1000), st.floats(0, 1000), st.integers(0, 200), st.floats(0, 1))
def test_a_newer_entry_scores_at_least_as_high(
    age_a: float, age_b: float, access: int, similarity: float
) -> None:
    newer, older = sorted([age_a, age_b])
    kw: dict[str, Any] = {"access_count": access, "similarity": similarity}
    items = [
        cand(1, valid_from=NOW - timedelta(days=newer), **kw),
        cand(2, valid_from=NOW - timedelta(days=older), **kw),
    ]
    got = {s.candidate.entry_id: s.score for s in score(items, now=NOW, weights=W)}
    assert got[1] >= got[2]


def test_score_explains_each_component() -> None:
    [s] = score([cand(1, similarity=0.9, access_count=3, text_rank=2)], now=NOW, weights=W)
    expected = {"similarity", "recency", "access", "rrf", "importance_factor", "type_bonus"}
    assert expected <= set(s.explain)
    assert s.explain["similarity"] == 0.9
    assert s.explain["recency"] == pytest.approx(math.exp(-3 / 30), abs=1e-6)
    assert s.explain["score"] == pytest.approx(s.score, abs=1e-6)


def test_session_summary_gets_the_type_bonus() -> None:
    summary, fact = score([cand(1), cand(2, kind="session_summary")], now=NOW, weights=W)
    assert summary.candidate.kind == "session_summary"
    assert summary.score == pytest.approx(fact.score * W.summary_bonus)
    assert summary.explain["type_bonus"] == W.summary_bonus


def test_an_entry_said_or_dated_within_the_period_the_query_names_is_boosted() -> None:
    periods = query_periods("what did maya cook in May?", NOW)
    assert periods == ((date(2023, 5, 1), date(2023, 5, 31)),)  # asked on 1 June 2023
    said_in_may = cand(1, valid_from=datetime(2023, 5, 20, tzinfo=UTC))
    # said in June about a day in May
    about_may = cand(2, valid_from=NOW - timedelta(hours=1), fields={"valid_at": "2023-05-14"})
    neither = cand(3, valid_from=datetime(2023, 4, 30, 23, tzinfo=UTC), fields={"valid_at": "x"})
    got = {
        s.candidate.entry_id: s
        for s in score([said_in_may, about_may, neither], now=NOW, weights=W, periods=periods)
    }
    unboosted = {
        s.candidate.entry_id: s
        for s in score([said_in_may, about_may, neither], now=NOW, weights=W)
    }
    for entry_id in (1, 2):
        assert got[entry_id].explain["period_factor"] == 1 + W.period_boost
        assert got[entry_id].score == pytest.approx(
            unboosted[entry_id].score * (1 + W.period_boost)
        )
    assert got[3].explain["period_factor"] == 1.0 and got[3].score == unboosted[3].score


def test_a_query_naming_no_period_boosts_nothing() -> None:
    assert query_periods("what does maya like to cook?", NOW) == ()


def test_access_is_log_scaled_and_saturates() -> None:
    counts = [0, 1, 10, 100, 10_000]
    got = {
        s.candidate.access_count: s.explain["access"]
        for s in score([cand(n + 1, access_count=n) for n in counts], now=NOW, weights=W)
    }
    assert got[0] == 0 and got[100] == got[10_000] == 1
    assert got[10] == pytest.approx(math.log(11) / math.log(101), abs=1e-6)


def test_score_uses_the_given_now_not_the_clock() -> None:
    item = cand(1, valid_from=datetime(2020, 1, 1, tzinfo=UTC))
    early = score([item], now=datetime(2020, 1, 2, tzinfo=UTC), weights=W)[0]
    late = score([item], now=datetime(2021, 1, 2, tzinfo=UTC), weights=W)[0]
    assert early.explain["age_days"] == 1 and late.explain["age_days"] == 367
    assert early.score > late.score


def test_fuse_merges_an_entry_found_by_both_lists() -> None:
    vector = [cand(1, similarity=0.9), cand(2, similarity=0.8)]
    text = [cand(2, similarity=None, vector_rank=None), cand(3, similarity=None)]
    fused = {c.entry_id: c for c in fuse(vector, text)}
    assert (fused[2].similarity, fused[2].vector_rank, fused[2].text_rank) == (0.8, 2, 1)
    assert (fused[1].vector_rank, fused[1].text_rank) == (1, None)
    assert (fused[3].similarity, fused[3].vector_rank, fused[3].text_rank) == (None, None, 2)
    assert [c.entry_id for c in fuse(vector, text)] == [2, 1, 3]


def test_fuse_keeps_the_first_position_and_copy_of_a_repeated_entry() -> None:
    fused = fuse([cand(1, similarity=0.9), cand(2), cand(1, similarity=0.1)], [])
    assert [(c.entry_id, c.vector_rank) for c in fused] == [(1, 1), (2, 2)]
    assert fused[0].similarity == 0.9


def test_a_text_only_hit_competes_through_its_fusion_rank() -> None:
    text_only = fuse([], [cand(1, similarity=None)])[0]
    [s] = score([text_only], now=NOW, weights=W)
    assert s.explain["similarity"] == 0 and s.explain["rrf"] == pytest.approx(0.5)


@given(
    st.lists(WORDS, min_size=2, max_size=8, unique=True),
    st.floats(0.1, 1),
    st.floats(0.1, 1),
    st.booleans(),
)
def test_near_duplicate_removal_keeps_the_higher_scored(
    words: list[str], a: float, b: float, upper: bool
) -> None:
    first = " ".join(words) + "."
    second = " ".join(reversed(words)).upper() if upper else first + "!"
    kept = rerank(
        [scored(1, a, statement=first), scored(2, b, statement=second)], weights=W, limit=5
    )
    assert ids(kept) == [1 if a >= b else 2]  # on a tie, the lower entry id ranks first


def test_different_statements_are_not_near_duplicates() -> None:
    items = [
        scored(1, 0.9, statement="Maya prefers oat milk."),
        scored(2, 0.8, statement="Maya likes almond milk in tea."),
    ]
    assert ids(rerank(items, weights=W, limit=5)) == [1, 2]


@given(
    st.frozensets(st.integers(1, 10), min_size=1),
    st.frozensets(st.integers(1, 10), min_size=1),
)
def test_coverage_penalty_applies_only_when_fully_covered(
    summary_events: frozenset[int], entry_events: frozenset[int]
) -> None:
    summary = scored(1, 0.9, kind="session_summary", source_event_ids=tuple(summary_events))
    entry = scored(2, 0.8, source_event_ids=tuple(entry_events))
    [_, after] = rerank([summary, entry], weights=W, limit=5)
    if entry_events <= summary_events:
        assert after.score == pytest.approx(0.8 * W.coverage_penalty)
        assert after.explain["covered_by"] == 1
        assert after.explain["coverage_penalty"] == W.coverage_penalty
    else:
        assert after == entry


def test_coverage_needs_the_summary_ranked_above_the_entry() -> None:
    summary = scored(1, 0.5, kind="session_summary", source_event_ids=(1, 2, 3))
    entry = scored(2, 0.8, source_event_ids=(2,))
    assert rerank([summary, entry], weights=W, limit=5) == [entry, summary]


def test_a_covered_entry_falls_below_an_uncovered_one() -> None:
    summary = scored(1, 0.9, kind="session_summary", source_event_ids=(1, 2, 3))
    covered = scored(2, 0.8, source_event_ids=(2, 3))
    other = scored(3, 0.5, source_event_ids=(7,))
    assert ids(rerank([covered, other, summary], weights=W, limit=5)) == [1, 3, 2]


def test_an_entry_whose_turns_entries_above_it_showed_falls_below_one_with_new_turns() -> None:
    first = scored(1, 0.9, statement="Maya said she runs.", source_event_ids=(1, 2))
    second = scored(2, 0.85, statement="Tom asked about races.", source_event_ids=(2, 3))
    repeat = scored(3, 0.8, statement="Maya runs every morning.", source_event_ids=(1, 3))
    new = scored(4, 0.6, statement="Maya moved to Lisbon.", source_event_ids=(9,))
    kept = rerank([first, second, repeat, new], weights=W, limit=5)
    assert ids(kept) == [1, 2, 4, 3]
    assert kept[-1].explain["covered_by"] == 1
    assert kept[-1].score == pytest.approx(0.8 * W.coverage_penalty)


def test_rerank_drops_scores_below_the_threshold_then_applies_the_limit() -> None:
    items = [scored(i, s) for i, s in enumerate([0.9, 0.7, 0.5, 0.04, 0.01], 1)]
    assert ids(rerank(items, weights=W, limit=10)) == [1, 2, 3]
    assert ids(rerank(items, weights=W, limit=2)) == [1, 2]
    assert rerank(items, weights=W, limit=0) == []


def test_rerank_rejects_repeated_entry_ids() -> None:
    with pytest.raises(ValueError, match="unique entry ids"):
        rerank([scored(1, 0.9), scored(1, 0.8)], weights=W, limit=5)


@given(candidates, st.none() | st.integers(1, 50), st.none() | st.integers(1, 50))
def test_ranked_is_the_candidate_with_its_ranks_replaced(
    items: list[Candidate], vector_rank: int | None, text_rank: int | None
) -> None:
    for c in items:
        got = c.ranked(vector_rank, text_rank)
        assert got == replace(c, vector_rank=vector_rank, text_rank=text_rank)
