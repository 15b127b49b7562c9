"""The heuristic extractor: user facts, episodic restatements, provenance, determinism."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from observations.extract.base import (
    EPISODIC,
    FACT_KINDS,
    KINDS,
    Extracted,
    SessionEvent,
    SessionInput,
)
from observations.extract.heuristic import HeuristicExtractor
from observations.extract.people import Person
from observations.extract.turns import strip_vocative
from observations.gates import apply_gates
from tests.examples import examples

# Monday 8 May 2023, 13:56 UTC.
START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|my|me|mine|myself)\b", re.IGNORECASE)
PEOPLE = {"caroline": "Caroline", "melanie": "Melanie"}


def session(lines: Sequence[tuple[str, str]], session_id: int = 1) -> SessionInput:
    """A LoCoMo-style chat: (actor id, text) pairs, both speakers users, a minute apart."""
    events = [
        SessionEvent(
            id=100 + i,
            seq=i,
            role="user",
            actor_id=actor,
            actor_name=PEOPLE.get(actor, actor),
            content=text,
            occurred_at=START + timedelta(minutes=i),
        )
        for i, (actor, text) in enumerate(lines)
    ]
    return SessionInput("tenant", session_id, "chat-1", START, events[-1].occurred_at, events)


def extract(lines: Sequence[tuple[str, str]]) -> list[Extracted]:
    return list(HeuristicExtractor().extract(session(lines)).items)


def only(items: list[Extracted], key: str) -> Extracted:
    matching = [i for i in items if i.key == key]
    assert len(matching) == 1, (key, [i.key for i in items])
    return matching[0]


def assert_self_contained(item: Extracted, name: str) -> None:
    assert not FIRST_PERSON.search(item.statement), item.statement
    assert name in item.statement, item.statement


CHAT = [
    ("caroline", "Hey Mel! My sister Anna just moved to Boston with her husband."),
    ("melanie", "Oh nice! I love jazz, by the way. I went to a jazz bar downtown last Friday."),
    ("caroline", "I tried sushi for the first time at a tiny place near the harbour."),
    ("melanie", "I'm really good at baking bread, and I've been painting for 10 years."),
    ("caroline", "My goal is to run a marathon before I turn forty."),
    ("melanie", "I'm allergic to peanuts, so I never order pad thai."),
    ("caroline", "I work as a nurse at the children's hospital."),
    ("melanie", "I got married last May! It was a small wedding by the lake."),
]


def test_extracts_what_is_said_of_a_sister_as_a_relationship_with_her_name() -> None:
    item = only(extract(CHAT), "relationship:sister:anna:city")
    assert item.kind == "relationship"
    assert item.owner_type == "user" and item.owner_id == "caroline"
    assert item.statement == "Caroline's sister Anna moved to Boston with Anna's husband."
    assert item.fields["persons"] == ["Anna"]
    assert item.fields["object"] == "Boston"
    assert item.source_event_ids == (100,)


def test_extracts_a_liking_as_preference_of_the_speaker() -> None:
    item = only(extract(CHAT), "preference:jazz")
    assert item.kind == "preference"
    assert item.owner_id == "melanie"
    assert item.fields["polarity"] == "positive"
    assert_self_contained(item, "Melanie")


def test_extracts_dated_outing_as_event_with_absolute_date() -> None:
    (item,) = [i for i in extract(CHAT) if i.kind == "event"]
    assert item.key.startswith("event:2023-05-05:go-")
    assert item.statement == "Melanie went to a jazz bar downtown on 5 May 2023."
    assert item.fields["event_time"] == "2023-05-05"
    assert item.valid_from == datetime(2023, 5, 5, tzinfo=UTC)
    assert item.source_event_ids == (101,)


def test_extracts_undated_first_time_as_experience() -> None:
    items = extract(CHAT)
    (item,) = [i for i in items if i.kind == "experience"]
    assert item.key == "experience:try-sushi"
    assert item.statement.startswith("Caroline tried sushi for the first time")
    assert item.valid_from == START + timedelta(minutes=2)


def test_extracts_skills_from_good_at_and_years_of_practice() -> None:
    items = extract(CHAT)
    baking = only(items, "skill:baking-bread")
    painting = only(items, "skill:painting")
    assert baking.kind == painting.kind == "skill"
    assert_self_contained(baking, "Melanie")
    assert "Melanie has been painting for 10 years" in painting.statement


def test_extracts_goal_from_my_goal_is() -> None:
    item = only(extract(CHAT), "goal:run-marathon")
    assert item.kind == "goal"
    assert item.fields["object"] == "run a marathon before Caroline turns forty"
    assert item.statement == "Caroline's goal is to run a marathon before Caroline turns forty."


def test_keys_keep_the_words_of_any_script_so_distinct_objects_stay_distinct() -> None:
    items = extract([
        ("melanie", "I love Zürich."),
        ("melanie", "I love München."),
        ("melanie", "My goal is to learn Русский."),
        ("melanie", "My goal is to learn 日本語."),
    ])  # fmt: skip
    keys = {i.key for i in items}
    assert {"preference:zürich", "preference:münchen"} <= keys
    assert {"goal:learn-русский", "goal:learn-日本語"} <= keys


def test_extracts_allergy_as_constraint() -> None:
    item = only(extract(CHAT), "constraint:allergy:peanut")
    assert item.kind == "constraint"
    assert item.fields["object"] == "peanuts"
    assert_self_contained(item, "Melanie")


def test_extracts_occupation_as_identity() -> None:
    item = only(extract(CHAT), "identity:occupation")
    assert item.kind == "identity"
    assert item.owner_id == "caroline"
    assert item.statement == "Caroline works as a nurse at the children's hospital."


def test_extracts_wedding_last_may_as_status_dated_the_previous_year() -> None:
    item = only(extract(CHAT), "identity:relationship-status")
    assert item.kind == "identity"
    assert item.statement == "Melanie got married in May 2022."
    assert item.fields["event_time"] == "2022-05"
    assert item.valid_from == START + timedelta(minutes=7)  # said: the profile's order


def test_every_fact_kind_is_covered_by_the_sample_chat() -> None:
    kinds = {i.kind for i in extract(CHAT)}
    assert set(FACT_KINDS) <= kinds


def test_fact_statements_name_the_speaker_instead_of_first_person() -> None:
    for item in extract(CHAT):
        if item.kind in FACT_KINDS:
            assert_self_contained(item, PEOPLE[item.owner_id])


@pytest.mark.parametrize(
    "text",
    [
        "My favorite drink is a flat white.",
        "My preferred drink is a flat white.",
        "I like to drink flat whites.",
        "I love drinking flat whites.",
    ],
)
def test_drink_preferences_share_one_key_whatever_the_phrasing(text: str) -> None:
    (item,) = [i for i in extract([("melanie", text)]) if i.kind == "preference"]
    assert item.key == "preference:drink"


def test_future_plan_with_date_is_an_event_valid_from_when_it_was_said() -> None:
    item = only(
        extract([("melanie", "I'm going to a concert next Friday with my husband.")]),
        "event:2023-05-12:go-concert",
    )
    assert item.statement == "Melanie is going to a concert on 12 May 2023 with Melanie's husband."
    assert item.valid_from == START


def test_identity_patterns_cover_origin_gender_and_age() -> None:
    items = extract(
        [("caroline", "I'm from Sweden. I'm a transgender woman and I'm 31 years old.")]
    )
    assert only(items, "identity:origin").fields["location"] == "Sweden"
    assert only(items, "identity:gender").fields["object"] == "transgender woman"
    assert only(items, "identity:age").fields["object"] == "31"


def test_dietary_rules_and_inabilities_are_constraints() -> None:
    items = extract([("melanie", "I'm vegetarian and I don't eat fish. I can't drive at night.")])
    assert {"constraint:diet", "constraint:diet:fish", "constraint:drive"} <= {i.key for i in items}


def test_conversational_reactions_are_not_preferences() -> None:
    items = extract([("melanie", "I love that! I love your painting. I can't wait to see it.")])
    assert [i.kind for i in items if i.kind in FACT_KINDS] == []


def test_questions_state_no_facts() -> None:
    items = extract([("caroline", "Do you like jazz? Have you ever been to Boston?")])
    assert [i for i in items if i.kind in FACT_KINDS] == []


def test_substantive_turn_without_facts_becomes_a_record_in_the_speakers_own_words() -> None:
    lines = [
        ("caroline", "How did the exhibition go?"),
        ("melanie", "The support group has made me feel accepted and given me courage."),
    ]
    item = only(extract(lines), "episodic:101")
    assert item.kind == EPISODIC
    assert item.statement == (
        "Caroline to Melanie, 8 May 2023: How did the exhibition go? Melanie replied: "
        "The support group has made me feel accepted and given me courage."
    )
    assert item.owner_id == "melanie"
    assert item.source_event_ids == (100, 101)  # the reply and the question it answers


def test_a_reply_restates_only_what_it_answers_of_the_turn_before() -> None:
    lines = [
        ("caroline", "That's great! Loving the support. Anything you're excited for next?"),
        ("melanie", "The pottery class I signed up for starts next week, I can't wait."),
        ("caroline", "Nice. I went to a support group yesterday. It was powerful."),
        ("melanie", "My sister found great courage and real friends in a support group."),
    ]
    items = extract(lines)
    asked = only(items, "episodic:101")
    assert asked.statement.startswith(
        "Caroline to Melanie, 8 May 2023: Anything you're excited for next? Melanie replied: "
    )  # the question, not the greeting before it
    told = only(items, "episodic:103")
    assert told.statement.startswith(
        "Caroline to Melanie, 8 May 2023: It was powerful. Melanie replied: "
    )  # no question: the last sentence
    assert asked.source_event_ids == (100, 101) and told.source_event_ids == (102, 103)


def test_the_speaker_giving_their_own_name_is_not_restated() -> None:
    [item] = [
        i
        for i in extract([("maya", "Hi, I'm Maya. I work as a nurse at St. Mary's in Lisbon.")])
        if i.kind == EPISODIC
    ]
    assert item.statement == (
        "Maya, 8 May 2023: I work as a nurse at St. Mary's in Lisbon."
    )  # the introduction says nothing a header does not


def test_turn_that_follows_its_own_speaker_is_restated_alone() -> None:
    lines = [
        ("melanie", "Guess what."),
        ("melanie", "The support group has made me feel accepted and given me courage."),
    ]
    item = only(extract(lines), "episodic:101")
    assert item.statement.startswith("Melanie, 8 May 2023: The support group has made me")
    assert item.source_event_ids == (101,)


def test_a_record_keeps_the_words_and_puts_each_dates_period_beside_it() -> None:
    lines = [
        ("caroline", "Your garden pictures were lovely."),
        ("melanie", "Thanks, Caroline! You were so right about the tomatoes last weekend."),
    ]
    item = only(extract(lines), "episodic:101")
    assert (
        "You were so right about the tomatoes last weekend [the weekend of 6-7 May 2023]."
        in item.statement
    )
    assert item.fields["event_time"] == "2023-05-06/2023-05-07"


def test_small_talk_gets_no_episodic_item() -> None:
    items = extract([("caroline", "Hey Mel!"), ("melanie", "Thanks, see you soon!")])
    assert [i for i in items if i.kind == EPISODIC] == []


def test_shared_photo_caption_is_restated() -> None:
    event = SessionEvent(
        7, 0, "user", "melanie", "Melanie", "Look!", START, {"image_caption": "a lake at sunrise"}
    )
    source = SessionInput("tenant", 1, "chat-1", START, START, [event])
    items = HeuristicExtractor().extract(source).items
    item = only(list(items), "episodic:7")
    assert item.statement == "Melanie, 8 May 2023: Melanie shared a photo: a lake at sunrise."


def test_same_key_twice_keeps_the_later_fact_and_restates_the_earlier() -> None:
    lines = [
        ("melanie", "My favorite drink is a flat white, always has been since college."),
        ("melanie", "These days I like to drink green tea in the evening."),
    ]
    items = extract(lines)
    drink = only(items, "preference:drink")
    assert drink.source_event_ids == (101,)
    assert "flat white" in only(items, "episodic:100").statement


@pytest.mark.parametrize(
    ("first", "then", "key", "kept"),
    [  # a weaker restatement of the same thing: the stronger statement stays
        ("I know how to swim.", "I can swim.", "skill:swimming", 100),
        ("I know how to play chess.", "I play chess.", "skill:chess", 100),
        # a weaker statement of another value: the later one wins, as any later one does
        ("My favorite drink is a flat white.", "I like to drink green tea.", "preference:drink",
         101),
        ("I work as a nurse.", "I am a teacher.", "identity:occupation", 101),
        # a weaker statement that says more: the later one wins
        ("My favorite drink is tea.", "I like to drink green tea.", "preference:drink", 101),
    ],
)  # fmt: skip
def test_one_fact_per_key_the_latest_unless_it_only_restates_the_kept_one_more_weakly(
    first: str, then: str, key: str, kept: int
) -> None:
    lines = [("melanie", first), ("melanie", then)]
    items = extract(lines)
    assert only(items, key).source_event_ids == (kept,)
    assert key in {i.key for i in apply_gates(items, session(lines)).items}  # not lost


def test_group_chat_facts_belong_to_each_speaker() -> None:
    lines = [("caroline", "I love hiking."), ("melanie", "I love hiking too.")]
    owners = sorted(i.owner_id for i in extract(lines) if i.key == "preference:hiking")
    assert owners == ["caroline", "melanie"]


def test_same_input_gives_same_output() -> None:
    first = HeuristicExtractor().extract(session(CHAT))
    second = HeuristicExtractor().extract(session(CHAT))
    assert first == second
    assert first.extractor == "heuristic" and first.version == HeuristicExtractor.version


def test_event_order_in_the_input_does_not_matter() -> None:
    ordered = session(CHAT)
    shuffled_events = list(ordered.events)
    random.Random(4).shuffle(shuffled_events)
    shuffled = SessionInput(
        "tenant", 1, "chat-1", ordered.started_at, ordered.ended_at, shuffled_events
    )
    assert HeuristicExtractor().extract(shuffled) == HeuristicExtractor().extract(ordered)


WORDS = [
    "I",
    "my",
    "me",
    "we",
    "you",
    "your",
    "love",
    "like",
    "went",
    "yesterday",
    "last",
    "week",
    "next",
    "Friday",
    "sister",
    "dog",
    "paint",
    "hiking",
    "tea",
    "can't",
    "allergic",
    "to",
    "peanuts",
    "nurse",
    "work",
    "as",
    "from",
    "Sweden",
    "goal",
    "is",
    "want",
    "plan",
    "married",
    "in",
    "2019",
    "ago",
    "two",
    "years",
    "tried",
    "sushi",
    "good",
    "at",
    "speak",
    "French",
    "favorite",
    "drink",
    "coffee",
    "Anna",
    "Boston",
    ".",
    ",",
    "!",
    "?",
    ";",
    "-",
    "the",
    "a",
    "and",
    "but",
    "so",
    "error",
    "failed",
    "timeout",
    "ok",
]
ROLES = ("user", "assistant", "tool_call", "tool_result", "system", "file")
METADATA = st.sampled_from(
    [{}, {"tool": "search", "status": "ok"}, {"tool": "search", "status": "error"}, {"ok": False}]
)
TEXT = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join),
    st.text(max_size=60),
)
EVENT = st.tuples(st.sampled_from(ROLES), st.sampled_from(["u1", "u2", "bot"]), TEXT, METADATA)


def random_session(rows: list[tuple[str, str, str, dict[str, object]]]) -> SessionInput:
    events = [
        SessionEvent(
            1000 + i, i, role, actor, actor.upper(), text, START + timedelta(minutes=i), meta
        )
        for i, (role, actor, text, meta) in enumerate(rows)
    ]
    end = events[-1].occurred_at if events else START
    return SessionInput("tenant", 9, "chat-9", START, end, events)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(EVENT, max_size=12))
def test_every_item_has_provenance_within_the_session(
    rows: list[tuple[str, str, str, dict[str, object]]],
) -> None:
    source = random_session(rows)
    event_ids = {e.id for e in source.events}
    items = HeuristicExtractor().extract(source).items
    for item in items:
        assert item.source_event_ids, item
        assert set(item.source_event_ids) <= event_ids, item
        assert item.kind in KINDS
        assert item.statement.strip()
        assert 0.0 <= item.confidence <= 1.0 and 0.0 <= item.importance <= 1.0
    owner_keys = [(i.owner_type, i.owner_id, i.key) for i in items]
    assert len(owner_keys) == len(set(owner_keys))


@pytest.mark.parametrize(
    ("sentence", "addressee", "stripped"),
    [
        ("Mel, I went hiking.", "Melanie", "I went hiking."),
        ("chloe i'm literally in this chat", "Chloe", "I'm literally in this chat"),
        ("mel you were right", "Melanie", "You were right"),
        ("melanie is coming too", "Melanie", "Melanie is coming too"),  # the subject stays
        ("That was great, Melanie!", "Melanie", "That was great!"),
        ("melanie put the kettle on", "Melanie", "Melanie put the kettle on"),  # a member did
        ("kit put champagne on the shopping list", "kit", "Put champagne on the shopping list"),
        ("kit my landlord still hasnt fixed it", "kit", "My landlord still hasnt fixed it"),
        ("kit went quiet", "kit", "Kit went quiet"),  # not a request
    ],
)
def test_a_form_of_address_is_no_part_of_what_was_said(
    sentence: str, addressee: str, stripped: str
) -> None:
    to = Person(addressee.lower(), addressee, assistant=addressee == "kit")
    assert strip_vocative(sentence, to) == stripped


@pytest.mark.parametrize(
    "said",
    [
        "I'm driving tomorrow, so bring your charger.",
        "We adopted another puppy and she's so cute.",
        "You know, Mia and I are driving up to the lake house, you can ride with us.",
        "Jo knows, I told her about our trip to Lisbon.",
    ],
)
def test_no_record_rewrites_a_message_from_the_first_person(said: str) -> None:
    items = extract([("caroline", "How was your week, Mel?"), ("melanie", said)])
    record = only(items, "episodic:101")
    quoted = record.statement.split("Melanie replied: ", 1)[1]
    words = re.sub(r" \[[^]]*\]", "", quoted)  # the dates' periods beside their phrases
    assert said.removeprefix("You know, ") in words
