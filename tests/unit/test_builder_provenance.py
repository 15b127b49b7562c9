"""Provenance through extraction and quality gates, for generated sessions.

Whatever a session says — users stating facts and chatting, an assistant answering, tool
calls that fail or succeed — every item the heuristic extractor and the gates let
through names a non-empty set of the session's own events, and the gates account for
every item they drop.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from observations.extract.base import KINDS, Extraction, SessionEvent, SessionInput
from observations.extract.heuristic import HeuristicExtractor
from observations.gates import GATES, apply_gates
from tests.examples import examples

START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
USERS = {"caroline": "Caroline Reyes", "tom": "Tom Okafor", "u3": None}
AGENT = ("atlas", "Atlas")

THINGS = ["hiking", "jazz", "strong black coffee", "window seats", "sushi", "painting"]
PEOPLE = ["Lena", "Rui", "Ana", "Marcus"]
PLACES = ["Lisbon", "Porto", "Amsterdam", "Boston", "Berlin"]
WHEN = ["yesterday", "last Friday", "next March", "two years ago", "on 14 November", "today"]
FACTS = [
    "I love {thing}.",
    "I prefer {thing} when I travel.",
    "I'm allergic to peanuts, so no pad thai for me.",
    "I'm vegetarian and I can't travel on Sundays.",
    "My sister {person} lives in {place} and I visit her most weekends.",
    "My wife {person} and I moved to {place} {when}.",
    "I work as a pediatric nurse at the hospital in {place}.",
    "I'm a backend engineer and I know Rust and Go.",
    "My goal is to run the {place} half marathon {when}.",
    "I went hiking {when} with my colleague {person}. It was beautiful.",
    "I want to learn to sail before next summer.",
    "I've been {thing} for 10 years and I'm really good at it.",
    "Actually I now prefer {thing}, my knee needs the space.",
    "Can you book me a train from {place} to {place} for {when}?",
    "Not yet, I need to check my shifts first. Can you remind me on Friday?",
    "Thanks! I'm presenting our new API at a conference there.",
    "lol ok",
    "Did you see that?",
]
REPLIES = [
    "Nice to meet you! How can I help today?",
    "Noted. Anything else I should know?",
    "Booked the 08:09 train to {place} {when}, window seat 42.",
    "Sounds lovely! Did you do the Pena trail?",
    "Understood.",
]
TOOLS = ["train_search", "flight_search", "book_ticket", "weather"]


def fill(template: str, draw: st.DrawFn) -> str:
    values = {
        "thing": draw(st.sampled_from(THINGS)),
        "person": draw(st.sampled_from(PEOPLE)),
        "place": draw(st.sampled_from(PLACES)),
        "when": draw(st.sampled_from(WHEN)),
    }
    return template.format(**values)


@st.composite
def turn(draw: st.DrawFn) -> list[tuple[str, str, str | None, str, dict[str, Any]]]:
    """One turn as (role, actor id, actor name, content, metadata) events."""
    kind = draw(st.sampled_from(["user", "user", "user", "assistant", "tools", "noise"]))
    if kind == "user":
        actor = draw(st.sampled_from(sorted(USERS)))
        said = [fill(draw(st.sampled_from(FACTS)), draw) for _ in range(draw(st.integers(1, 2)))]
        return [("user", actor, USERS[actor], " ".join(said), {})]
    if kind == "assistant":
        return [("assistant", *AGENT, fill(draw(st.sampled_from(REPLIES)), draw), {})]
    if kind == "noise":  # arbitrary text from anyone
        actor = draw(st.sampled_from([*sorted(USERS), AGENT[0]]))
        text = draw(st.text(min_size=1, max_size=80).filter(str.strip))
        role = "assistant" if actor == AGENT[0] else "user"
        return [(role, actor, USERS.get(actor, AGENT[1]), text, {})]
    events: list[tuple[str, str, str | None, str, dict[str, Any]]] = []
    for _ in range(draw(st.integers(1, 3))):
        tool = draw(st.sampled_from(TOOLS))
        place = draw(st.sampled_from(PLACES))
        ok = draw(st.booleans())
        events.append(
            ("tool_call", *AGENT, f"{tool} {place}", {"tool": tool, "args": {"to": place}})
        )
        if draw(st.integers(0, 4)):  # a call may go unanswered
            result = f"3 results for {place}" if ok else "Error: timeout after 30s"
            status = {"tool": tool, "status": "ok" if ok else "error"}
            events.append(("tool_result", *AGENT, result, status))
    return events


@st.composite
def sessions(draw: st.DrawFn) -> SessionInput:
    turns = draw(st.lists(turn(), min_size=1, max_size=10))
    offset = timezone(timedelta(hours=draw(st.integers(-8, 10))))
    next_id = draw(st.integers(1, 10**9))
    at = START.astimezone(offset)
    events: list[SessionEvent] = []
    for role, actor, name, content, meta in (e for t in turns for e in t):
        events.append(SessionEvent(next_id, len(events) + 1, role, actor, name, content, at, meta))
        next_id += draw(st.integers(1, 5))  # ids of other channels interleave
        at += timedelta(minutes=draw(st.integers(0, 20)))
    return SessionInput("tenant", 42, "dm-1", events[0].occurred_at, events[-1].occurred_at, events)


@settings(max_examples=examples(150), deadline=None)
@given(sessions())
def test_gated_items_have_provenance_within_their_session(session: SessionInput) -> None:
    event_ids = {e.id for e in session.events}
    extraction = HeuristicExtractor().extract(session)
    gated = apply_gates(extraction, session)
    for item in gated.items:
        assert item.source_event_ids, item
        assert set(item.source_event_ids) <= event_ids, item
        assert item.kind in KINDS and item.statement.strip()
    # The survivors are extracted items in their order; every other item is counted once.
    survivors = iter(extraction.items)
    assert all(any(kept is item for item in survivors) for kept in gated.items)
    assert set(gated.dropped) == set(GATES)
    assert sum(gated.dropped.values()) + len(gated.items) == len(extraction.items)


@settings(max_examples=examples(100), deadline=None)
@given(sessions(), st.data())
def test_gates_drop_every_item_whose_provenance_leaves_the_session(
    session: SessionInput, data: st.DataObject
) -> None:
    extraction = HeuristicExtractor().extract(session)
    foreign = max(e.id for e in session.events) + data.draw(st.integers(1, 1000))
    tampered_at = data.draw(
        st.sets(st.integers(0, max(0, len(extraction.items) - 1)), max_size=len(extraction.items))
    )
    items = []
    for i, item in enumerate(extraction.items):
        if i in tampered_at:
            ids = data.draw(st.sampled_from([(), (foreign,), (*item.source_event_ids, foreign)]))
            item = replace(item, source_event_ids=ids)
        items.append(item)
    gated = apply_gates(Extraction(tuple(items), extraction.extractor, extraction.version), session)
    event_ids = {e.id for e in session.events}
    assert all(set(i.source_event_ids) <= event_ids and i.source_event_ids for i in gated.items)
    assert gated.dropped["bad_provenance"] == len(tampered_at)
