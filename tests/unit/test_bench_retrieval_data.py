"""The retrieval benchmark's synthetic data: skewed users, spread entries, distinct text."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from ops.bench.retrieval import probe_rank, query_plan
from ops.bench.statements import questions, statements
from ops.bench.synthetic import interleaved, skewed_counts


@given(st.integers(2, 2000), st.integers(10, 50))
def test_skewed_counts_sum_to_the_entries_largest_first_and_every_user_has_one(
    users: int, per_user: int
) -> None:
    entries = users * per_user + 7
    counts = skewed_counts(entries, users)
    assert sum(counts) == entries and len(counts) == users
    assert counts == sorted(counts, reverse=True) and counts[-1] >= 1


def test_a_million_entries_of_ten_thousand_users_are_zipf_like() -> None:
    counts = skewed_counts(1_000_000, 10_000)
    assert counts[0] > 100_000 and sorted(counts)[5000] == 20
    assert counts[probe_rank(counts) - 1] == 20


def test_interleaving_covers_every_entry_in_bursts_spread_through_the_load() -> None:
    owners = [("a", 20), ("b", 3), ("c", 9)]
    bursts = list(interleaved(owners, seed=1, burst=4))
    totals: Counter[str] = Counter()
    for user, n in bursts:
        assert 1 <= n <= 4
        totals[user] += n
    assert totals == Counter(dict(owners))
    assert [u for u, _ in bursts] != sorted(u for u, _ in bursts)


def test_statements_and_questions_are_distinct_seeded_and_never_the_same_text() -> None:
    pool, asked = statements(500, seed=1), questions(200, seed=2)
    assert len(set(pool)) == 500 and pool == statements(500, seed=1)
    assert len(set(asked)) == 200 and not set(pool) & set(asked)
    assert all(q.endswith("?") for q in asked)


def test_the_query_plan_is_seeded_and_spreads_queries_over_the_tiers() -> None:
    counts = skewed_counts(100_000, 1000)
    plan = query_plan(counts, 300)
    assert plan == query_plan(counts, 300)
    tiers = Counter(tier for _, _, tier in plan)
    assert set(tiers) == {"large", "medium", "small"} and min(tiers.values()) > 60
