"""The context bundle: never over budget, whole items only, sections in priority order."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from observations.embed_local import MAX_POSITIONS, _load_tokenizer, default_model_files
from retrieval import (
    SECTIONS,
    MemoryItem,
    ProfileItem,
    Provenance,
    RecentMessage,
    SkillItem,
    SummaryItem,
    approx_count,
    pack,
    render_item,
    render_text,
    to_json,
    wordpiece_counter,
)
from retrieval.bundle import HEADERS
from retrieval.tokens import TokenCounter
from tests.examples import examples

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
PIECES = [*"abcdefghij klmnop.,'!?é0123456789", "Maya", " oat milk", "\n", "  "]
prose = st.lists(st.sampled_from(PIECES), min_size=1, max_size=60).map("".join).filter(str.strip)
when = st.integers(0, 400).map(lambda d: T0 + timedelta(days=d, minutes=d * 7))


def memory(statement: str, at: datetime = T0, kind: str = "preference") -> MemoryItem:
    return MemoryItem(
        statement=statement,
        valid_from=at,
        kind=kind,
        score=0.5,
        explain={"similarity": 0.5},
        provenance=Provenance(entry_ids=(1,), event_ids=(11,), external_ids=("D1:3",)),
    )


sections = st.fixed_dictionaries(
    {
        "profile": st.lists(
            st.builds(
                ProfileItem,
                key=st.just("k"),
                value=prose,
                statement=prose,
                valid_from=when,
                provenance=st.just(Provenance(entry_ids=(2,), event_ids=(12, 13))),
            ),
            max_size=5,
        ),
        "memories": st.lists(st.builds(memory, prose, when), max_size=12),
        "summaries": st.lists(
            st.builds(
                SummaryItem,
                statement=prose,
                started_at=when,
                ended_at=st.none() | when,
                topics=st.lists(prose, max_size=3).map(tuple),
                score=st.just(1.0),
                explain=st.just({}),
                provenance=st.just(Provenance()),
            ),
            max_size=5,
        ),
        "skills": st.lists(
            st.builds(
                SkillItem,
                skill_key=st.just("s"),
                goal=prose,
                steps=st.lists(prose, max_size=4).map(tuple),
                evidence_count=st.integers(1, 9),
                provenance=st.just(Provenance(entry_ids=(3,), event_ids=(14,))),
            ),
            max_size=3,
        ),
        "recent": st.lists(
            st.builds(RecentMessage, speaker=st.just("Maya"), occurred_at=when, content=prose),
            max_size=8,
        ),
    }
)


def statements(item: Any) -> list[str]:
    match item:
        case SkillItem():
            return [item.goal, *item.steps]
        case RecentMessage():
            return [item.content]
        case _:
            return [item.statement]


def is_subsequence(taken: Sequence[Any], offered: Sequence[Any]) -> bool:
    rest = iter(offered)
    return all(any(x is y for y in rest) for x in taken)


@given(sections, st.integers(0, 600))
def test_bundle_never_exceeds_its_budget_and_holds_whole_items(
    offered: dict[str, Any], budget: int
) -> None:
    bundle = pack(**offered, budget_tokens=budget, counter=approx_count)
    text = render_text(bundle)
    assert approx_count(text) == bundle.used_tokens <= budget
    lines = set(text.split("\n"))
    for name in SECTIONS:
        taken = bundle.section(name)
        assert is_subsequence(taken, offered[name])
        assert bundle.dropped[name] == len(offered[name]) - len(taken)
        assert (HEADERS[name] in lines) == bool(taken)
        for item in taken:
            assert render_item(item) in text
            assert all(s in text for s in statements(item))
    # nothing but headers and whole rendered items: no partial statement anywhere
    whole = {HEADERS[n] for n in SECTIONS} | {
        line for n in SECTIONS for i in bundle.section(n) for line in render_item(i).split("\n")
    }
    assert lines <= whole | {""}


@settings(max_examples=examples(30), deadline=None)
@given(sections, st.integers(0, 400))
def test_bundle_fits_the_wordpiece_budget(offered: dict[str, Any], budget: int) -> None:
    count = wordpiece_counter()
    bundle = pack(**offered, budget_tokens=budget, counter=count)
    assert count(render_text(bundle)) == bundle.used_tokens <= budget


@settings(deadline=None)
@given(st.text(max_size=60), st.text(max_size=60), st.sampled_from(["\n", " ", "\n\n"]))
def test_counters_add_up_over_whitespace_joins(a: str, b: str, gap: str) -> None:
    for count in (approx_count, wordpiece_counter()):
        assert count(a + gap + b) == count(a) + count(b)


@settings(deadline=None, max_examples=examples(300))
@given(
    st.lists(
        st.text(max_size=12)
        | st.sampled_from(["\x0b", "\x1c", "\x85", "\u2028", "\u3000", "\xa0", "[CLS]", "é"]),
        max_size=12,
    ).map("".join)
)
def test_the_wordpiece_count_is_the_tokenizers_count_of_the_whole_text(text: str) -> None:
    tokenizer, count = tokenizer_and_counter()
    assert count(text) == len(tokenizer.encode(text, add_special_tokens=False))


@cache
def tokenizer_and_counter() -> tuple[Tokenizer, TokenCounter]:
    """Loaded once for all examples (each load reads and checks the tokenizer file)."""
    tokenizer = _load_tokenizer(default_model_files(), MAX_POSITIONS)
    tokenizer.no_truncation()
    return tokenizer, wordpiece_counter()


def test_the_approximate_count_follows_wordpiece_splits() -> None:
    assert approx_count("Maya likes tea.") == 4  # Maya likes tea .
    assert approx_count("[2023-05-08] extraordinarily") == 7 + 3  # 15 letters: ⌈15/6⌉
    # the real thing, without [CLS]/[SEP]: maya prefers o ##at milk .
    assert wordpiece_counter()("Maya prefers oat milk.") == 6


def test_a_large_item_is_dropped_whole_and_smaller_later_ones_still_fit() -> None:
    big, small = memory("word " * 200), memory("Maya prefers oat milk.")
    bundle = pack(memories=[big, small], budget_tokens=60, counter=approx_count)
    assert bundle.memories == (small,)
    assert "word" not in render_text(bundle)
    assert bundle.dropped["memories"] == 1


def test_unused_shares_flow_to_the_sections_that_need_them() -> None:
    mems = [memory(f"Maya fact number {i} about tea.") for i in range(40)]
    one = approx_count(render_item(mems[0]))
    alone = pack(memories=mems, budget_tokens=200, counter=approx_count)
    assert alone.used_tokens > 200 - one  # nearly the whole budget, not only the 40 % share
    shared = pack(
        memories=mems,
        recent=[RecentMessage(speaker="Maya", occurred_at=T0, content="x " * 50)],
        budget_tokens=200,
        counter=approx_count,
    )
    assert len(shared.recent) == 1
    assert len(alone.memories) > len(shared.memories) >= 200 * 0.4 // one


def test_each_section_is_guaranteed_its_share() -> None:
    mems = [memory(f"Maya fact number {i} about tea.") for i in range(40)]
    recent = [
        RecentMessage(speaker="Maya", occurred_at=T0 + timedelta(minutes=i), content=f"msg {i}")
        for i in range(40)
    ]
    bundle = pack(memories=mems, recent=recent, budget_tokens=300, counter=approx_count)
    recent_cost = sum(approx_count(render_item(r)) for r in bundle.recent)
    assert recent_cost + approx_count(HEADERS["recent"]) >= 0.2 * 300 - 10


def test_recent_messages_keep_the_newest_in_time_order() -> None:
    recent = [
        RecentMessage(speaker="Maya", occurred_at=T0 + timedelta(minutes=i), content=f"m{i}")
        for i in range(30)
    ]
    bundle = pack(recent=recent, budget_tokens=60, counter=approx_count)
    assert 0 < len(bundle.recent) < 30
    assert list(bundle.recent) == recent[-len(bundle.recent) :]


def test_a_zero_budget_gives_an_empty_bundle() -> None:
    bundle = pack(
        memories=[memory("Maya prefers oat milk.")], budget_tokens=0, counter=approx_count
    )
    assert render_text(bundle) == "" and bundle.used_tokens == 0


def test_shares_must_be_valid() -> None:
    with pytest.raises(ValueError, match="sum to at most 1"):
        pack(budget_tokens=10, counter=len, shares={"memories": 0.8, "recent": 0.5})
    with pytest.raises(ValueError, match="name only"):
        pack(budget_tokens=10, counter=len, shares={"memos": 0.5})


def test_render_shows_dates_kinds_windows_and_speakers() -> None:
    bundle = pack(
        profile=[
            ProfileItem(
                key="k",
                value="v",
                statement="Maya is a nurse.",
                valid_from=T0,
                provenance=Provenance(),
            )
        ],
        memories=[memory("Maya prefers oat milk.")],
        summaries=[
            SummaryItem(
                statement="Maya and Leo talked about tea.",
                started_at=T0,
                ended_at=T0 + timedelta(hours=1),
                topics=("tea", "milk"),
                score=1.0,
                explain={},
                provenance=Provenance(),
            )
        ],
        skills=[
            SkillItem(
                skill_key="s",
                goal="Book a table",
                steps=("Call", "Pay"),
                evidence_count=2,
                provenance=Provenance(),
            )
        ],
        recent=[RecentMessage(speaker="Maya", occurred_at=T0, content="Hi Leo!")],
        budget_tokens=1000,
        counter=approx_count,
    )
    assert render_text(bundle) == (
        "## User profile\n[2023-05-08] Maya is a nurse.\n\n"
        "## Relevant memories\n[2023-05-08] (preference) Maya prefers oat milk.\n\n"
        "## Earlier sessions\n"
        "[2023-05-08 13:56–14:56] (topics: tea, milk) Maya and Leo talked about tea.\n\n"
        "## Skills\n- Book a table (evidence: 2 sessions)\n  1. Call\n  2. Pay\n\n"
        "## Recent messages\n[2023-05-08 13:56] Maya: Hi Leo!"
    )


def test_a_memory_whose_statement_begins_with_its_date_shows_the_date_once() -> None:
    said = memory("On 8 May 2023, Maya said to Leo: Maya prefers oat milk.", kind="episodic")
    other_day = memory("On 7 May 2023, Maya said to Leo: Maya prefers oat milk.", kind="episodic")
    assert render_item(said) == "(episodic) On 8 May 2023, Maya said to Leo: Maya prefers oat milk."
    assert render_item(other_day).startswith("[2023-05-08] (episodic) On 7 May 2023,")
    record = memory("Maya to Leo, 8 May 2023: I prefer oat milk.", kind="episodic")
    assert render_item(record) == "(episodic) Maya to Leo, 8 May 2023: I prefer oat milk."
    in_words = memory("Maya moved on 8 May 2023.", kind="event")
    assert render_item(in_words).startswith("[2023-05-08] (event) Maya moved")


def asdict_walk(value: Any) -> Any:
    """The JSON form as first defined: ``dataclasses.asdict``, then datetimes in ISO 8601,
    floats rounded to 6 decimals, mappings with string keys, sequences as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return asdict_walk(dataclasses.asdict(value))
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, Mapping):
        return {str(k): asdict_walk(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [asdict_walk(v) for v in value]
    return value


numbers = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**40), 2**40)
scored_memory = st.builds(
    MemoryItem,
    statement=prose,
    valid_from=when,
    kind=st.sampled_from(["preference", "event"]),
    score=st.floats(0, 10),
    explain=st.dictionaries(st.sampled_from(["similarity", "rrf", "covered_by"]), numbers),
    provenance=st.builds(
        Provenance,
        entry_ids=st.lists(st.integers(1, 2**40), max_size=3).map(tuple),
        event_ids=st.lists(st.integers(1, 2**40), max_size=3).map(tuple),
        external_ids=st.lists(prose, max_size=3).map(tuple),
        session_id=st.none() | st.integers(1, 2**40),
    ),
)


@given(sections, st.lists(scored_memory, max_size=6), st.integers(0, 600))
def test_json_is_the_asdict_form_of_the_bundle(
    offered: dict[str, Any], memories: list[MemoryItem], budget: int
) -> None:
    offered["memories"] = memories + offered["memories"]
    bundle = pack(**offered, budget_tokens=budget, counter=approx_count)
    assert to_json(bundle) == asdict_walk(bundle)


def test_json_carries_provenance_explain_and_token_counts() -> None:
    bundle = pack(
        memories=[memory("Maya prefers oat milk.")], budget_tokens=50, counter=approx_count
    )
    data = json.loads(json.dumps(to_json(bundle)))
    assert data["budget_tokens"] == 50 and data["used_tokens"] == bundle.used_tokens
    [item] = data["memories"]
    assert item["valid_from"] == "2023-05-08T13:56:00+00:00"
    assert item["provenance"]["external_ids"] == ["D1:3"]
    assert item["explain"] == {"similarity": 0.5}
