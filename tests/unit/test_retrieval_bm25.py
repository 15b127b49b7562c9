"""BM25 baseline: exact terms win, rare terms weigh more, ties and order are deterministic."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval import BM25, bm25
from retrieval.bm25 import rank, terms

DOCS = [
    "[8 May 2023] Caroline: I went to a LGBTQ support group yesterday.",
    "[8 May 2023] Melanie: I love to paint landscapes, mostly sunsets.",
    "[9 May 2023] Caroline: The support group made me feel accepted.",
    "[9 May 2023] Melanie: My kids love camping by the lake.",
]


def test_terms_are_lower_case_alphanumeric_without_stop_words() -> None:
    assert terms("The LGBTQ support-group, it's 2023!") == ["lgbtq", "support", "group", "2023"]


def test_the_document_with_the_exact_terms_ranks_first() -> None:
    top = BM25(DOCS).top("Where does Melanie go camping?", 3)
    assert top[0][0] == 3
    assert top[0][1] > top[1][1] > 0


def test_a_rare_term_weighs_more_than_a_common_one() -> None:
    docs = ["coffee morning", "coffee evening", "coffee night", "zebra morning"]
    index = BM25(docs)
    scores = index.scores("coffee zebra")
    assert scores[3] > scores[0] == scores[1] == scores[2] > 0


def test_a_shorter_document_with_the_same_match_ranks_higher() -> None:
    index = BM25(["camping trip with a long list of other words here", "camping trip"])
    assert [i for i, _ in index.top("camping", 2)] == [1, 0]


def test_ties_go_to_the_lower_index_and_k_limits_the_result() -> None:
    index = BM25(["oat milk", "tea", "oat milk", "oat milk"])
    assert index.top("oat", 2) == [(0, index.scores("oat")[0]), (2, index.scores("oat")[0])]


def test_a_query_of_stop_words_or_unknown_terms_finds_nothing() -> None:
    index = BM25(DOCS)
    assert index.top("what was it that they did", 5) == []
    assert index.top("xylophone", 5) == []
    assert BM25([]).top("anything", 5) == []


words = st.lists(st.sampled_from(["oat", "milk", "tea", "the", "Maya", "Paris"]), max_size=8)


@given(st.lists(words.map(" ".join), max_size=20), words.map(" ".join))
def test_ranking_is_deterministic_and_follows_the_scores(docs: list[str], query: str) -> None:
    index = BM25(docs)
    top = index.top(query, 5)
    assert top == BM25(list(docs)).top(query, 5)
    keys = [(-score, i) for i, score in top]
    assert keys == sorted(keys)
    everything = sorted(((-s, i) for i, s in index.scores(query).items()))
    assert keys == everything[:5]


def test_documents_are_weighed_once_and_a_question_only_adds_up_their_weights(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rnd = random.Random(7)
    vocabulary = [f"w{i}" for i in range(3000)]
    docs = [" ".join(rnd.choices(vocabulary, k=25)) for _ in range(700)]
    questions = [" ".join(rnd.choices(vocabulary, k=8)) for _ in range(200)]
    split: list[str] = []  # every text the index splits into terms
    logs = [0]  # every idf it computes

    def counted_terms(text: str) -> list[str]:
        split.append(text)
        return terms(text)

    def counted_log(x: float) -> float:
        logs[0] += 1
        return math.log(x)

    monkeypatch.setattr(bm25, "terms", counted_terms)
    monkeypatch.setattr(bm25, "math", SimpleNamespace(log=counted_log))
    index = BM25(docs)
    assert split == docs  # each document read once
    weighed = logs[0]
    assert weighed > 0
    split.clear()
    for q in questions:
        assert len(index.top(q, 10)) <= 10
    assert split == questions  # no document read again
    assert logs[0] == weighed  # no weight computed again


mixed = st.lists(
    st.sampled_from(["Maya", "maya", "oat", "the", "Café", "déjà", "İstanbul", "ß", "2023",
                     "x_y", "a-b", "ÄÖ", "\t", "milk,", "MILK"]),
    max_size=12,
).map(" ".join)  # fmt: skip


@given(st.lists(mixed, max_size=25), mixed, st.integers(1, 30))
def test_rank_for_one_query_equals_the_index_to_the_last_bit(
    docs: list[str], query: str, k: int
) -> None:
    assert rank(docs, query, k) == BM25(docs).top(query, k)
