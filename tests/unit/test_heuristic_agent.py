"""The heuristic extractor: agent experiences from tool use, and the session summary."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from observations.extract.base import (
    AGENT_EXPERIENCE,
    SESSION_SUMMARY,
    Extracted,
    SessionEvent,
    SessionInput,
)
from observations.extract.heuristic import HeuristicExtractor
from observations.extract.tools import result_ok
from observations.gates import apply_gates

START = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)  # Monday
NAMES = {"u1": "Caroline", "u2": "Melanie", "bot": "TravelBot"}

Row = tuple[str, str, str, Mapping[str, Any]]


def session(rows: Sequence[Row], session_id: int = 7) -> SessionInput:
    """(role, actor id, content, metadata) rows, ids 100, 101, … a minute apart."""
    events = [
        SessionEvent(
            100 + i, i, role, actor, NAMES[actor], text, START + timedelta(minutes=i), meta
        )
        for i, (role, actor, text, meta) in enumerate(rows)
    ]
    return SessionInput("tenant", session_id, "chan-1", START, events[-1].occurred_at, events)


def items_of(rows: Sequence[Row], kind: str) -> list[Extracted]:
    return [i for i in HeuristicExtractor().extract(session(rows)).items if i.kind == kind]


BOOKING: list[Row] = [
    ("user", "u1", "Hi! Can you book me a flight to Paris for next Friday?", {}),
    ("assistant", "bot", "Sure, let me look.", {}),
    (
        "tool_call",
        "bot",
        "search_flights(to=Paris)",
        {"tool": "search_flights", "args": {"to": "Paris"}, "call_id": "c1"},
    ),
    (
        "tool_result",
        "bot",
        "upstream timeout",
        {"tool": "search_flights", "status": "error", "call_id": "c1"},
    ),
    (
        "tool_call",
        "bot",
        "search_flights_v2(to=Paris)",
        {"tool": "search_flights_v2", "args": {"to": "Paris"}, "call_id": "c2"},
    ),
    (
        "tool_result",
        "bot",
        "3 flights found: AF123, BA456, LH789",
        {"tool": "search_flights_v2", "status": "ok", "call_id": "c2"},
    ),
    (
        "tool_call",
        "bot",
        "book_flight(AF123)",
        {"tool": "book_flight", "args": {"flight": "AF123"}},
    ),
    ("tool_result", "bot", "Booked AF123, confirmation XYZ", {}),
    ("assistant", "bot", "Done! You're on AF123 on Friday.", {}),
    ("user", "u1", "Great, thanks! Will the meal be vegetarian?", {}),
]


def test_extracts_successful_path_and_failure_from_tool_calls() -> None:
    (item,) = items_of(BOOKING, AGENT_EXPERIENCE)
    assert item.owner_type == "agent" and item.owner_id == "bot"
    assert item.fields["goal"] == "book the user a flight to {to} for {date}"
    assert [step["tool"] for step in item.fields["path"]] == ["search_flights_v2", "book_flight"]
    assert item.fields["path"][1]["args"] == {"flight": "{flight}"}
    assert [f["tool"] for f in item.fields["failures"]] == ["search_flights"]
    assert item.fields["failures"][0]["error"] == "upstream timeout"
    assert item.fields["outcome"] == "success"
    assert item.fields["applies_to"] == ["search_flights", "search_flights_v2", "book_flight"]
    assert item.statement == (
        "On 4 March 2024, TravelBot handled a request to book the user a flight to {to} for "
        "{date}: it worked by calling search_flights_v2 then book_flight; "
        'failed and to avoid: search_flights ("upstream timeout").'
    )


def test_an_experience_keeps_nothing_of_the_conversation_it_came_from() -> None:
    """The agent's experience is offered to all its users: no name, place, date or id of
    this request stays in it, although its provenance leads back to the events."""
    (item,) = items_of(BOOKING, AGENT_EXPERIENCE)
    kept = json.dumps([item.statement, item.fields])
    for particular in ("Caroline", "Paris", "Friday", "8 March", "AF123", "XYZ"):
        assert particular not in kept


def test_a_tool_error_speaking_to_you_is_quoted_and_the_experience_kept() -> None:
    rows = [
        (role, actor, 'Error 403: "your API key" is not valid' if text == "upstream timeout"
         else text, meta)
        for role, actor, text, meta in BOOKING
    ]  # fmt: skip
    extraction = HeuristicExtractor().extract(session(rows))
    (item,) = [i for i in extraction.items if i.kind == AGENT_EXPERIENCE]
    assert "search_flights (\"Error 403: 'your API key' is not valid\")" in item.statement
    assert item in apply_gates(extraction, session(rows)).items


def test_agent_experience_provenance_is_the_request_and_tool_events_only() -> None:
    (item,) = items_of(BOOKING, AGENT_EXPERIENCE)
    assert item.source_event_ids == (100, 102, 103, 104, 105, 106, 107)


def test_skill_key_is_the_procedure_whatever_the_request_says() -> None:
    other: list[Row] = [
        ("user", "u2", "ok rome on monday then, same as last time", {}),
        ("tool_call", "bot", "search_flights_v2(to=Rome)", {"tool": "search_flights_v2"}),
        ("tool_result", "bot", "1 flight: FR1", {"tool": "search_flights_v2", "status": "ok"}),
        ("tool_call", "bot", "book_flight(FR1)", {"tool": "book_flight"}),
        ("tool_result", "bot", "Booked FR1", {"tool": "book_flight", "status": "ok"}),
    ]
    (first,) = items_of(BOOKING, AGENT_EXPERIENCE)
    (second,) = items_of(other, AGENT_EXPERIENCE)
    assert first.fields["skill_key"] == second.fields["skill_key"]
    assert first.key == second.key == "agent_experience:search_flights_v2+book_flight"


def test_second_task_of_the_same_kind_in_a_session_gets_a_distinct_key() -> None:
    rows: list[Row] = [
        ("user", "u1", "Book a flight to Paris for me please.", {}),
        ("tool_call", "bot", "book_flight(AF1)", {"tool": "book_flight"}),
        ("tool_result", "bot", "Booked AF1", {"tool": "book_flight", "status": "ok"}),
        ("user", "u1", "Now book a flight back from Paris to Oslo.", {}),
        ("tool_call", "bot", "book_flight(AF2)", {"tool": "book_flight"}),
        ("tool_result", "bot", "Booked AF2", {"tool": "book_flight", "status": "ok"}),
    ]
    first, second = items_of(rows, AGENT_EXPERIENCE)
    assert (first.key, second.key) == (
        "agent_experience:book_flight",
        "agent_experience:book_flight:2",
    )
    assert first.fields["skill_key"] == second.fields["skill_key"]
    assert (first.source_event_ids, second.source_event_ids) == ((100, 101, 102), (103, 104, 105))


def test_short_follow_up_continues_the_same_task() -> None:
    rows: list[Row] = [
        ("user", "u1", "Find me a hotel in Lisbon for the conference.", {}),
        ("tool_call", "bot", "hotels(Lisbon)", {"tool": "hotels"}),
        ("tool_result", "bot", "Error: rate limited", {"tool": "hotels"}),
        ("assistant", "bot", "That failed. Retry with the other provider?", {}),
        ("user", "u1", "yes please", {}),
        ("tool_call", "bot", "hotels_b(Lisbon)", {"tool": "hotels_b"}),
        ("tool_result", "bot", "Found Hotel Avenida", {"tool": "hotels_b"}),
    ]
    (item,) = items_of(rows, AGENT_EXPERIENCE)
    assert item.fields["skill_key"] == "hotels_b"
    assert [s["tool"] for s in item.fields["path"]] == ["hotels_b"]
    assert [f["tool"] for f in item.fields["failures"]] == ["hotels"]
    assert item.source_event_ids == (100, 101, 102, 104, 105, 106)


def test_all_failing_task_is_recorded_as_failure_with_nothing_to_repeat() -> None:
    rows: list[Row] = [
        ("user", "u1", "Cancel my dentist appointment tomorrow.", {}),
        ("tool_call", "bot", '{"name": "calendar_cancel", "arguments": {"id": 4}}', {}),
        ("tool_result", "bot", "Traceback (most recent call last): KeyError", {}),
    ]
    (item,) = items_of(rows, AGENT_EXPERIENCE)
    assert item.fields["path"] == []
    assert item.fields["failures"][0]["tool"] == "calendar_cancel"
    assert item.fields["failures"][0]["args"] == {"id": "{id}"}
    assert item.fields["failures"][0]["error"] == "Traceback (most recent call last): KeyError"
    assert item.fields["skill_key"] == "calendar_cancel"
    assert item.fields["outcome"] == "failure"
    assert "no tool call succeeded" in item.statement


def test_result_status_comes_from_metadata_before_content() -> None:
    def result(content: str, meta: Mapping[str, Any]) -> SessionEvent:
        return SessionEvent(1, 0, "tool_result", "bot", None, content, START, meta)

    assert result_ok(result("error: looks bad but fine", {"status": "ok"}))
    assert not result_ok(result("all good", {"status": "error"}))
    assert not result_ok(result("all good", {"ok": False}))
    assert not result_ok(result("Request failed after 3 retries", {}))
    assert not result_ok(result("Error: boom", {}))
    assert result_ok(result("42 rows", {}))


def test_sessions_without_tools_have_no_agent_experience() -> None:
    assert items_of([("user", "u1", "I love hiking in the Alps.", {})], AGENT_EXPERIENCE) == []


CHAT: list[Row] = [
    ("user", "u1", "Hey Mel! I went to a pottery workshop in Lisbon yesterday.", {}),
    ("user", "u2", "Wow, how was it? Did you make a bowl?", {}),
    ("user", "u1", "I made a blue bowl and a small vase. The teacher, Rosa, was amazing.", {}),
    ("user", "u2", "Pottery sounds relaxing. Let's book a pottery class together next week.", {}),
    ("user", "u1", "Deal! Rosa teaches on Thursdays at the studio near the harbour.", {}),
    ("user", "u2", "Perfect. Should we bring our own aprons to the studio?", {}),
]


def summary_of(rows: Sequence[Row]) -> Extracted:
    (item,) = items_of(rows, SESSION_SUMMARY)
    return item


def test_summary_is_one_channel_item_per_session() -> None:
    item = summary_of(CHAT)
    assert item.key == "summary:7"
    assert item.owner_type == "channel" and item.owner_id == "chan-1"
    assert item.statement.startswith("On 4 March 2024, Caroline and Melanie talked. ")


def test_summary_sentences_name_their_speaker_and_their_source_event() -> None:
    item = summary_of(CHAT)
    texts = {e.id: e.content for e in session(CHAT).events}
    for sentence, sources in item.fields["sentence_sources"]:
        speaker, _, _ = sentence.partition(": ")
        assert speaker in ("Caroline", "Melanie")
        assert sources and all(s in texts for s in sources)
        (source,) = sources
        assert NAMES[session(CHAT).events[source - 100].actor_id] == speaker
    summary_sentences = [s for s, _ in item.fields["sentence_sources"] if s in item.statement]
    assert summary_sentences, item.statement


def test_summary_provenance_is_exactly_the_quoted_events() -> None:
    item = summary_of(CHAT)
    quoted = {i for _, ids in item.fields["sentence_sources"] for i in ids}
    assert set(item.source_event_ids) == quoted
    assert len(item.source_event_ids) < len(CHAT)


def test_summary_resolves_dates_and_pronouns() -> None:
    item = summary_of(CHAT)
    assert "Caroline: Caroline went to a pottery workshop in Lisbon on 3 March 2024." in (
        item.statement
    )


def test_summary_lists_decisions_open_questions_entities_and_topics() -> None:
    fields = summary_of(CHAT).fields
    assert fields["decisions"] == [
        "Melanie: Let's book a pottery class together in the week of 11 March 2024."
    ]
    assert fields["open_questions"] == [
        "Melanie: Should Melanie and others bring Melanie's own aprons to the studio?"
    ]
    assert {"Lisbon", "Rosa"} <= set(fields["entities"])
    assert "Caroline" not in fields["entities"]
    assert "pottery" in fields["topics"]


def test_answered_questions_are_not_open() -> None:
    fields = summary_of(CHAT).fields
    assert all("bowl" not in q for q in fields["open_questions"])


def test_summary_ignores_tool_traffic_but_keeps_the_conversation() -> None:
    item = summary_of(BOOKING)
    quoted = {i for _, ids in item.fields["sentence_sources"] for i in ids}
    assert quoted <= {100, 101, 108, 109}
    assert item.fields["open_questions"] == ["Caroline: Will the meal be vegetarian?"]


def test_session_with_nothing_said_has_no_summary() -> None:
    rows: list[Row] = [("tool_call", "bot", "ping()", {"tool": "ping"})]
    assert items_of(rows, SESSION_SUMMARY) == []


def test_a_value_said_anywhere_in_the_conversation_is_no_constant_of_the_procedure() -> None:
    rows: list[Row] = [
        ("user", "u1", "I prefer aisle seats these days.", {}),
        ("user", "u1", "Find me a flight to Berlin on Friday.", {}),
        ("tool_call", "bot", "flight_search",
         {"tool": "flight_search", "args": {"to": "BER", "seat": "aisle", "cabin": "economy"}}),
        ("tool_result", "bot", "TP 540, 18C", {"tool": "flight_search", "status": "ok"}),
    ]  # fmt: skip
    (item,) = items_of(rows, AGENT_EXPERIENCE)
    assert item.fields["path"][0]["args"] == {"to": "{to}", "seat": "{seat}", "cabin": "economy"}


def test_a_participants_id_or_name_passed_to_a_tool_is_no_constant_either() -> None:
    rows: list[Row] = [
        ("user", "u1", "Book me a table for tonight.", {}),
        ("tool_call", "bot", "book",
         {"tool": "book_table", "args": {"guest": "caroline", "account": "u1", "size": "small"}}),
        ("tool_result", "bot", "booked", {"tool": "book_table", "status": "ok"}),
    ]  # fmt: skip
    (item,) = items_of(rows, AGENT_EXPERIENCE)
    args = item.fields["path"][0]["args"]
    assert args == {"guest": "{guest}", "account": "{account}", "size": "small"}
