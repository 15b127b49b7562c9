"""Quality gates: each gate drops what it should, good items pass, counts add up."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from observations.extract.base import (
    AGENT_EXPERIENCE,
    EPISODIC,
    KINDS,
    SESSION_SUMMARY,
    Extracted,
    Extraction,
    SessionEvent,
    SessionInput,
)
from observations.gates import GATES, apply_gates, claim_stems, support
from tests.examples import examples

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS: list[tuple[int, str, str, str, str, Mapping[str, Any]]] = [
    (11, "user", "caroline", "Caroline", "I went to a LGBTQ support group yesterday.", {}),
    (12, "user", "melanie", "Melanie", "Wow! I'm a nurse, and I love to paint landscapes.", {}),
    (
        13,
        "user",
        "caroline",
        "Caroline",
        "Here's what I painted last week.",
        {"blip_caption": "a painting of a sunset over a lake"},
    ),
    (14, "user", "melanie", "Melanie", "Can you book me a table at Luigi's for Friday?", {}),
    (
        15,
        "tool_call",
        "agent-1",
        "Concierge",
        'book_table({"restaurant": "Luigi\'s"})',
        {"tool": "book_table", "args": {"restaurant": "Luigi's", "party": 2}},
    ),
    (16, "tool_result", "agent-1", "Concierge", "confirmed, table for 2", {"status": "ok"}),
]


def _session(
    turns: list[tuple[int, str, str, str, str, Mapping[str, Any]]] = TURNS,
) -> SessionInput:
    events = [
        SessionEvent(eid, seq, role, actor, name, text, T0 + timedelta(minutes=seq), meta)
        for seq, (eid, role, actor, name, text, meta) in enumerate(turns, start=1)
    ]
    return SessionInput("t1", 7, "dm-1", T0, events[-1].occurred_at, events)


SESSION = _session()


def _item(
    statement: str,
    sources: tuple[int, ...] = (12,),
    *,
    kind: str = "identity",
    key: str | None = None,  # by default, one of its own
    owner: str = "melanie",
    confidence: float = 0.8,
    importance: float = 0.6,
) -> Extracted:
    owner_type = {SESSION_SUMMARY: "channel", AGENT_EXPERIENCE: "agent"}.get(kind, "user")
    return Extracted(
        kind=kind,
        key=key or f"{kind}:{statement}",
        owner_type=owner_type,  # type: ignore[arg-type]
        owner_id=owner,
        statement=statement,
        confidence=confidence,
        importance=importance,
        source_event_ids=sources,
        valid_from=T0,
    )


# Items shaped like the heuristic extractor's: names for pronouns, absolute dates, framing.
HEURISTIC_LIKE = [
    _item("Melanie is a nurse."),
    _item(
        "Melanie loves painting landscapes.",
        kind="preference",
        key="preference:painting",
    ),
    _item(
        "Caroline went to a LGBTQ support group on 7 May 2023.",
        (11,),
        kind="event",
        key="event:2023-05-07:lgbtq-support-group",
        owner="caroline",
    ),
    _item(
        "On 8 May 2023, Caroline said to Melanie: Here's what Caroline painted in the week of "
        "1-7 May 2023. Caroline shared a photo: a painting of a sunset over a lake.",
        (13,),
        kind=EPISODIC,
        key="episodic:13",
        owner="caroline",
        confidence=0.7,
    ),
    _item(
        "On 8 May 2023, Concierge handled Melanie's request to book Melanie a table at Luigi's "
        "for Friday: it worked by calling book_table.",
        (14, 15, 16),
        kind=AGENT_EXPERIENCE,
        key="agent_experience:book-table",
        owner="agent-1",
    ),
    _item(
        "On 8 May 2023, Caroline and Melanie talked. Caroline: Caroline went to a LGBTQ support "
        "group on 7 May 2023. Melanie: Melanie is a nurse, and Melanie loves to paint landscapes.",
        (11, 12),
        kind=SESSION_SUMMARY,
        key="summary:7",
        owner="dm-1",
        confidence=0.7,
        importance=0.5,
    ),
]


def _counts(**nonzero: int) -> dict[str, int]:
    return {gate: nonzero.get(gate, 0) for gate in GATES}


def test_gates_keep_heuristic_like_items_and_report_every_gate_at_zero() -> None:
    result = apply_gates(Extraction(tuple(HEURISTIC_LIKE), "heuristic", "1"), SESSION)
    assert result.items == tuple(HEURISTIC_LIKE)
    assert result.dropped == _counts()


def test_gates_drop_items_whose_provenance_is_empty_or_outside_the_session() -> None:
    good = _item("Melanie is a nurse.")
    foreign = _item("Melanie is a nurse in Boston.", (12, 999))
    empty = _item("Melanie loves painting landscapes.", ())
    result = apply_gates([foreign, good, empty], SESSION)
    assert result.items == (good,)
    assert result.dropped == _counts(bad_provenance=2)


@pytest.mark.parametrize("statement", ["", "   ", "She did it.", "They were there with him."])
def test_gates_drop_empty_and_pronoun_only_statements(statement: str) -> None:
    result = apply_gates([_item(statement)], SESSION)
    assert result.items == ()
    assert result.dropped == _counts(empty_statement=1)


def test_gates_drop_first_and_second_person_statements_but_not_the_us() -> None:
    first_person = _item("I am a nurse, and I love to paint landscapes.")
    second_person = _item("You went to a LGBTQ support group.", (11,))
    shouted = _item("MELANIE IS A NURSE AND MY FAVORITE PAINTER.")
    country = _item("Melanie is a nurse who moved to the US.", (12,), confidence=0.9)
    session = _session(
        [*TURNS[:1], (12, "user", "melanie", "Melanie", "I'm a nurse, I moved to the US.", {})]
    )
    result = apply_gates([first_person, second_person, shouted, country], session)
    assert result.items == (country,)
    assert result.dropped == _counts(not_self_contained=3)


def test_gates_drop_items_below_min_confidence_and_keep_those_at_it() -> None:
    at = _item("Melanie is a nurse.", confidence=0.7)
    below = _item("Melanie loves painting landscapes.", confidence=0.65)
    assert apply_gates([at, below], SESSION).items == (at,)
    assert apply_gates([at, below], SESSION).dropped == _counts(low_confidence=1)
    assert apply_gates([at, below], SESSION, min_confidence=0.6).items == (at, below)


def test_gates_drop_world_knowledge_that_no_source_event_said() -> None:
    invented = [
        _item("Melanie works night shifts at Boston General Hospital."),
        _item("Melanie is a registered nurse who studied at Johns Hopkins University."),
        _item(
            "Caroline is a transgender activist who campaigns for equal marriage rights.",
            (11,),
            owner="caroline",
        ),
    ]
    faithful = _item(
        "Melanie enjoys painting landscapes.", kind="preference", key="preference:painting"
    )
    result = apply_gates([*invented, faithful], SESSION)
    assert result.items == (faithful,)
    assert result.dropped == _counts(unsupported=3)


def test_support_checks_the_items_own_source_events_not_the_whole_session() -> None:
    # True of the session (turn 12 says it) but not of the event it cites.
    misattributed = _item("Melanie is a nurse who loves painting landscapes.", (11,))
    result = apply_gates([misattributed], SESSION)
    assert result.dropped == _counts(unsupported=1)


def test_support_does_not_count_names_dates_or_framing_against_a_statement() -> None:
    names = frozenset({"caroline", "melanie"})
    statement = (
        "On 8 May 2023, Caroline said to Melanie: Caroline went to a support group on Sunday."
    )
    assert claim_stems(statement, names) == {"support", "group"}
    assert support(statement, ["I went to a support group yesterday."], names) == 1.0
    assert support("Caroline is 30.", ["I'm 30."], names) == 1.0  # nothing claimed beyond a name
    assert support("Melanie paints lakes.", ["I love painting a lake."], names) == 1.0  # stems
    # a chat spelling supports the word it stands for
    assert support("Melanie's birthday is on 13 June.", ["my bday is june 13"], names) == 1.0


def test_support_reads_strings_in_event_metadata_such_as_image_captions() -> None:
    caption = _item("Caroline shared a photo of a sunset over a lake.", (13,), owner="caroline")
    assert apply_gates([caption], SESSION).items == (caption,)
    no_caption = _session(
        [*TURNS[:2], (13, "user", "caroline", "Caroline", "Here's what I painted.", {})]
    )
    assert apply_gates([caption], no_caption).dropped == _counts(unsupported=1)


def test_min_support_is_the_share_of_claimed_words_the_sources_must_contain() -> None:
    half = _item("Melanie is a nurse and a surgeon.")  # nurse yes, surgeon no
    assert apply_gates([half], SESSION, min_support=0.5).items == (half,)
    assert apply_gates([half], SESSION, min_support=0.6).dropped == _counts(unsupported=1)


def test_gates_keep_one_item_per_owner_and_key_the_last_said() -> None:
    job = "identity:occupation"
    first = _item("Melanie is a nurse.", key=job, confidence=0.8)
    same_text_other_case = _item("melanie is a NURSE", key=job, confidence=0.95)
    other = _item(
        "Melanie loves painting landscapes.", kind="preference", key="preference:painting"
    )
    changed = _item("Melanie is a nurse, and now a surgeon too.", key=job, confidence=0.9)
    result = apply_gates([first, same_text_other_case, other, changed], SESSION)
    assert result.items == (other, changed)
    assert result.dropped == _counts(duplicate=2)


def test_an_item_dropped_by_a_gate_does_not_displace_an_earlier_one_of_its_key() -> None:
    sure = _item("Melanie is a nurse.", key="identity:occupation", confidence=0.9)
    unsure = _item("Melanie is a surgeon.", key="identity:occupation", confidence=0.2)
    result = apply_gates([sure, unsure], SESSION)
    assert result.items == (sure,)
    assert result.dropped == _counts(low_confidence=1)


def test_one_sentence_stating_two_facts_or_said_of_two_owners_is_not_a_duplicate() -> None:
    sentence = "Melanie is a nurse, and Melanie loves to paint landscapes."
    identity = _item(sentence)
    preference = _item(sentence, kind="preference", key="preference:painting")
    other_key = _item(sentence, kind="preference", key="preference:landscape")
    for_caroline = _item(sentence, owner="caroline")
    result = apply_gates([identity, preference, other_key, for_caroline], SESSION)
    assert result.items == (identity, preference, other_key, for_caroline)


def test_gate_cap_keeps_the_highest_importance_times_confidence_and_every_summary() -> None:
    low = _item("Melanie loves painting landscapes.", importance=0.3, confidence=0.8)
    high = _item("Melanie is a nurse.", importance=0.9, confidence=0.9)
    mid = _item("Caroline went to a support group.", (11,), owner="caroline", importance=0.6)
    tie = _item("Caroline went to a LGBTQ group.", (11,), owner="caroline", importance=0.6)
    summary = HEURISTIC_LIKE[-1]
    result = apply_gates([low, summary, high, mid, tie], SESSION, max_items=3)
    assert result.items == (summary, high, mid)  # input order kept; ties go to the earlier
    assert result.dropped == _counts(over_cap=2)
    assert apply_gates([summary, high], SESSION, max_items=0).items == (summary,)


def test_an_item_failing_several_gates_is_counted_once_under_the_first() -> None:
    bad = _item("I work at Boston General Hospital.", (999,), confidence=0.1)
    result = apply_gates([bad, *HEURISTIC_LIKE], SESSION, max_items=None)
    assert result.dropped == _counts(bad_provenance=1)
    assert len(result.items) + sum(result.dropped.values()) == len(HEURISTIC_LIKE) + 1


def test_gates_pass_the_real_heuristic_extractors_output() -> None:
    heuristic = pytest.importorskip("observations.extract.heuristic")
    extraction = heuristic.HeuristicExtractor().extract(SESSION)
    result = apply_gates(extraction, SESSION, min_confidence=0.0)
    assert extraction.items, "the heuristic found nothing to check"
    assert result.items == extraction.items


# -- properties ----------------------------------------------------------------------------

_WORDS = ["nurse", "paint", "lake", "Boston", "hospital", "group", "I", "she", "the", "May", "2023"]
_statements = st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join)


@st.composite
def _sessions_and_items(draw: st.DrawFn) -> tuple[SessionInput, list[Extracted]]:
    ids = draw(st.lists(st.integers(1, 40), min_size=1, max_size=6, unique=True))
    turns: list[tuple[int, str, str, str, str, Mapping[str, Any]]] = [
        (eid, "user", f"u{eid % 2}", draw(st.sampled_from(["Ana", "Bo"])), draw(_statements), {})
        for eid in ids
    ]
    session = _session(turns)
    item = st.builds(
        _item,
        _statements,
        st.lists(st.sampled_from([*ids, 99, 100]), max_size=3).map(tuple),
        kind=st.sampled_from(KINDS),
        confidence=st.floats(0, 1),
        importance=st.floats(0, 1),
    )
    return session, draw(st.lists(item, max_size=12))


@settings(max_examples=examples(300), deadline=None)
@given(case=_sessions_and_items(), max_items=st.none() | st.integers(0, 8))
def test_gates_never_add_items_and_keep_only_real_provenance(
    case: tuple[SessionInput, list[Extracted]], max_items: int | None
) -> None:
    session, items = case
    result = apply_gates(items, session, max_items=max_items)
    positions = [next(i for i, item in enumerate(items) if item is kept) for kept in result.items]
    assert positions == sorted(set(positions))  # a subsequence of the input, order kept
    assert len(result.items) + sum(result.dropped.values()) == len(items)
    session_ids = {e.id for e in session.events}
    for kept in result.items:
        assert kept.source_event_ids and set(kept.source_event_ids) <= session_ids
    assert apply_gates(result.items, session, max_items=max_items).items == result.items
    assert apply_gates(items, session, max_items=max_items) == result  # deterministic
