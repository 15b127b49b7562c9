"""Who is who: participants by name, the addressee of each turn, and whom pronouns mean."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from observations.extract.base import (
    FACT_KINDS,
    Extracted,
    KnownName,
    SessionEvent,
    SessionInput,
)
from observations.extract.heuristic import HeuristicExtractor
from observations.extract.people import Cast, addressees
from observations.extract.user_facts import THIRD_PARTY_CONFIDENCE

START = datetime(2025, 9, 8, 9, 0, tzinfo=UTC)
NAMES = {
    "maya": "Maya Chen",
    "tom": "Tom Okafor",
    "tomas": "Tomas Berg",
    "melanie": "Melanie",
    "atlas": "Atlas",
}
Line = tuple[str, str] | tuple[str, str, Mapping[str, Any]]


def events(lines: Sequence[Line]) -> list[SessionEvent]:
    found = []
    for i, line in enumerate(lines):
        actor, text = line[0], line[1]
        metadata = line[2] if len(line) == 3 else {}
        role = "assistant" if actor == "atlas" else "user"
        at = START + timedelta(minutes=i)
        found.append(SessionEvent(100 + i, i, role, actor, NAMES[actor], text, at, metadata))
    return found


def facts(lines: Sequence[Line], known: Sequence[KnownName] = ()) -> list[Extracted]:
    evs = events(lines)
    session = SessionInput("t", 1, "chat", START, evs[-1].occurred_at, evs, known_names=known)
    return [i for i in HeuristicExtractor().extract(session).items if i.kind in FACT_KINDS]


def addressed(lines: Sequence[Line]) -> list[str | None]:
    evs = events(lines)
    found = addressees(Cast(evs), evs, [e.content for e in evs])
    return [p.actor_id if p is not None else None for p in found]


def test_a_participant_is_found_by_display_name_first_name_or_id_whatever_the_case() -> None:
    cast = Cast(events([("maya", "hi"), ("tom", "hey"), ("atlas", "Hello!")]))
    assert cast.find("Maya Chen") == cast.find("maya") == cast.find("MAYA") == cast.people["maya"]
    assert cast.find("tom okafor") == cast.people["tom"]
    assert cast.find("Lena") is None
    assert cast.people["atlas"].assistant and not cast.people["maya"].assistant


def test_a_first_name_two_participants_share_names_nobody() -> None:
    lines: list[Line] = [("tom", "hi"), ("tomas", "hi")]
    cast = Cast([*events(lines)[:1], *events([("tomas", "hi")])])
    assert cast.nickname("tom") == cast.people["tom"]  # an exact first name wins
    assert cast.nickname("Tomas") == cast.people["tomas"]


def test_a_short_form_of_a_first_name_names_its_participant() -> None:
    cast = Cast(events([("melanie", "hi"), ("maya", "hi")]))
    assert cast.nickname("Mel") == cast.people["melanie"]
    assert cast.nickname("Ma") is None  # too short to tell


def test_a_turn_addresses_the_previous_other_speaker_by_default() -> None:
    lines: list[Line] = [("maya", "hi"), ("atlas", "Hello!"), ("maya", "thanks")]
    assert addressed(lines) == ["atlas", "maya", "atlas"]


@pytest.mark.parametrize(
    ("text", "meant"),
    [
        ("tom, you still work at Spotify?", "tom"),
        ("hey tom - are you coming?", "tom"),
        ("are you coming, tom?", "tom"),
        ("@tom are you coming?", "tom"),
        ("are you coming?", "atlas"),  # the previous other speaker
    ],
)
def test_in_a_group_a_turn_addresses_the_member_it_names_or_mentions(text: str, meant: str) -> None:
    lines: list[Line] = [("tom", "hi all"), ("atlas", "Hello!"), ("maya", text)]
    assert addressed(lines)[-1] == meant


def test_a_request_after_the_assistants_name_addresses_it_and_makes_it_no_subject() -> None:
    lines: list[Line] = [
        ("maya", "atlas put champagne on the list, tom just got engaged"),
        ("tom", "lol yes"),
        ("atlas", "Congratulations!"),
        ("maya", "atlas my landlord still hasnt fixed the heating"),
    ]
    assert [addressed(lines)[0], addressed(lines)[3]] == ["atlas", "atlas"]
    assert all(f.owner_id != "atlas" for f in facts(lines))
    landlord = [f for f in facts(lines) if "landlord" in f.statement]
    assert [f.statement for f in landlord] == [
        "Maya Chen's landlord still hasn't fixed the heating."
    ]


def test_a_reply_addresses_the_author_of_the_message_it_replies_to() -> None:
    lines: list[Line] = [
        ("tom", "hi all"),
        ("atlas", "Hello!"),
        ("maya", "nice, you too?", {"reply_to_actor_id": "tom"}),
    ]
    assert addressed(lines)[-1] == "tom"


def test_you_to_a_member_is_that_member_and_the_fact_is_theirs_said_by_the_speaker() -> None:
    (fact,) = facts([("tom", "hi"), ("maya", "tom, you are a vegetarian")])
    assert fact.owner_id == "tom" and fact.key == "constraint:diet"
    assert fact.statement == "Tom Okafor is a vegetarian."
    assert fact.fields["said_by"] == "maya"
    assert fact.confidence <= 0.7


def test_you_to_the_assistant_makes_no_fact_and_no_human_member() -> None:
    lines: list[Line] = [
        ("atlas", "How can I help?"),
        ("maya", "you are so helpful, you know my schedule better than I do"),
        ("maya", "you work at the hospital too now"),
    ]
    assert facts(lines) == []


def test_a_member_named_by_first_name_gets_the_fact_and_he_means_that_member() -> None:
    found = facts([("tom", "hi"), ("maya", "tom is vegetarian, and he can't travel on sundays")])
    assert {(f.owner_id, f.key) for f in found} == {
        ("tom", "constraint:diet"),
        ("tom", "constraint:travel-sunday"),
    }
    assert all(f.fields["said_by"] == "maya" and f.confidence <= 0.7 for f in found)
    assert "Tom Okafor is vegetarian." in {f.statement for f in found}


def test_what_the_subject_says_of_themself_is_more_confident_than_a_friends_claim() -> None:
    (claim,) = facts([("tom", "hi"), ("maya", "tom works at Spotify")])
    (own,) = facts([("tom", "I work at Google")])
    assert claim.owner_id == own.owner_id == "tom"
    assert claim.key == own.key == "identity:employer"
    assert claim.fields["said_by"] == "maya" and "said_by" not in own.fields
    assert own.confidence > claim.confidence


def test_a_correction_by_the_subject_replaces_a_friends_claim_in_the_session() -> None:
    found = facts(
        [("tom", "hi"), ("maya", "tom works at Spotify"), ("tom", "no, I work at Google now")]
    )
    assert [(f.owner_id, f.key, f.fields["object"]) for f in found] == [
        ("tom", "identity:employer", "Google")
    ]


def test_a_person_outside_the_session_is_a_relationship_of_the_speaker() -> None:
    lives, sister = facts([("maya", "My sister Lena lives in Porto.")])
    assert {lives.owner_id, sister.owner_id} == {"maya"}
    assert lives.kind == sister.kind == "relationship"
    assert lives.key == "relationship:sister:lena:city"
    assert lives.statement == "Maya Chen's sister Lena lives in Porto."
    assert sister.key == "relationship:sister:lena"
    assert sister.statement == "Maya Chen's sister is Lena."


def test_she_means_the_one_person_named_before_and_nobody_when_there_were_two() -> None:
    one = facts([("maya", "My sister Lena moved to Porto. She works at a bakery.")])
    assert "Maya Chen's sister Lena works at a bakery." in {f.statement for f in one}
    two = facts([("maya", "Lena met Ana yesterday. She works at a bakery.")])
    assert all("bakery" not in f.statement for f in two)


def test_a_friends_later_claim_does_not_displace_what_the_subject_said_in_the_session() -> None:
    found = facts([("tom", "I work at Google now"), ("maya", "tom works at Spotify")])
    assert [(f.owner_id, f.key, f.fields["object"]) for f in found] == [
        ("tom", "identity:employer", "Google")
    ]


def test_congratulations_on_a_new_job_are_the_member_congratulated_s_employer() -> None:
    found = facts([("tom", "hi"), ("maya", "omg congrats @tom on the new job at spotify!!!")])
    (job,) = [f for f in found if f.key == "identity:employer"]
    assert (job.owner_id, job.statement) == ("tom", "Tom Okafor got a new job at Spotify.")
    assert job.fields["said_by"] == "maya" and job.confidence <= 0.7
    to_the_assistant = facts([("atlas", "Hi!"), ("maya", "congrats on the new job at spotify")])
    assert all(f.key != "identity:employer" for f in to_the_assistant)


@pytest.mark.parametrize(
    ("claim", "answer", "key", "statement"),
    [
        ("ok airbnb for the trip. tom is allergic to cats remember so no pets",
         "its dogs not cats maya 😂 cats are fine",
         "constraint:allergy:dog", "Tom Okafor is allergic to dogs."),
        # the claim's "'s" read as a possessive, the answer without a comma
        ("btw tom's allergic to peanuts so no satay pls",
         "actually it's tree nuts not peanuts lol",
         "constraint:allergy:nut", "Tom Okafor is allergic to tree nuts."),
        # the other way round, in two sentences, after "hang on"
        ("tom's allergic to shellfish so no paella lol",
         "hang on its NOT shellfish. its tree nuts. i ate prawns at ur bbq",
         "constraint:allergy:nut", "Tom Okafor is allergic to tree nuts."),
        ("tom's allergic to shellfish", "its not shellfish, its tree nuts",
         "constraint:allergy:nut", "Tom Okafor is allergic to tree nuts."),
        # no "it's": the right word opens the sentence
        ("tom is allergic to cats", "lol no. dogs, not cats",
         "constraint:allergy:dog", "Tom Okafor is allergic to dogs."),
        # no "not": a denial, then "it's" and the right thing
        ("no peanut stuff pls, tom is allergic to peanuts remember",
         "lol no maya, it's cashews. peanuts are totally fine",
         "constraint:allergy:cashew", "Tom Okafor is allergic to cashews."),
    ],
)  # fmt: skip
def test_a_member_who_corrects_a_friends_claim_about_them_puts_it_right(
    claim: str, answer: str, key: str, statement: str
) -> None:
    found = facts([("tom", "hi"), ("maya", claim), ("tom", answer)])
    (allergy,) = [f for f in found if f.kind == "constraint"]
    assert (allergy.owner_id, allergy.key, allergy.statement) == ("tom", key, statement)
    assert "said_by" not in allergy.fields and allergy.confidence > THIRD_PARTY_CONFIDENCE
    assert allergy.source_event_ids == (101, 102)


def test_a_correction_of_a_word_inside_the_claim_puts_that_word_right() -> None:
    """ "it's the midwifery program not nursing": Y is a word of the value, X says it again
    with its article and the noun Y went with; a shouted word is written in lower case; a
    label ("brag moment:") and "ty but" are no part of either sentence."""
    found = facts([
        ("tom", "hi"),
        ("maya", "also brag moment: tom just got into the nursing program at dal!! 🎓"),
        ("tom", "lol ty but it's the MIDWIFERY program not nursing. very different thing maya"),
    ])  # fmt: skip
    (program,) = [f for f in found if f.key == "identity:education"]
    assert (program.owner_id, program.statement) == (
        "tom", "Tom Okafor got into the midwifery program at dal."
    )  # fmt: skip
    assert "said_by" not in program.fields


@pytest.mark.parametrize(
    "answer",
    [
        "its dogs not mine",  # "not" something the claim did not say
        "its cold, not warm in here",
    ],
)
def test_an_answer_that_names_not_what_the_claim_said_corrects_nothing(answer: str) -> None:
    found = facts([("tom", "hi"), ("maya", "tom is allergic to cats"), ("tom", answer)])
    (allergy,) = [f for f in found if f.kind == "constraint"]
    assert allergy.key == "constraint:allergy:cat" and allergy.fields["said_by"] == "maya"


def test_only_the_member_a_claim_is_about_corrects_it() -> None:
    found = facts(
        [("tom", "hi"), ("maya", "tom is allergic to cats"), ("tomas", "its dogs not cats")]
    )
    (allergy,) = [f for f in found if f.kind == "constraint"]
    assert allergy.key == "constraint:allergy:cat" and allergy.owner_id == "tom"


def test_a_participle_after_a_main_clause_shares_its_subject() -> None:
    found = facts([("tom", "hi"), ("maya", "i'll drive btw, borrowing my dad's van")])
    (van,) = [f for f in found if f.key == "experience:borrow-van"]
    assert (van.owner_id, van.statement) == (
        "maya",
        "Maya Chen is borrowing Maya Chen's dad's van.",
    )
    past = facts([("tom", "hi"), ("maya", "i walked home, listening to a podcast")])
    assert [f.statement for f in past] == ["Maya Chen was listening to a podcast."]


@pytest.mark.parametrize(
    ("text", "participle"),
    [
        ("i'll drive, depending on the weather", "depending"),  # a preposition
        ("i saw tom, looking tired", "looking"),  # it may tell of Tom
        ("bumped into tom at the station, dragging a massive cello case", "dragging"),  # too
        ("borrowing my dad's van, tom will drive", "borrowing"),  # before the main clause
        ("i'm tired, having worked all day", "worked"),  # a perfect participle
    ],
)
def test_a_participle_that_may_not_tell_of_the_subject_makes_no_fact(
    text: str, participle: str
) -> None:
    found = facts([("tom", "hi"), ("maya", text)])
    assert not [f.statement for f in found if participle in f.statement]


def test_a_bare_correction_by_the_subject_puts_right_the_claim_just_before() -> None:
    found = facts(
        [
            ("tom", "hi"),
            ("maya", "tom just got his black belt btw, the grading was brutal"),
            ("tom", "2nd dan actually 😅 i got the first one two years ago"),
        ]
    )
    (rank,) = [f for f in found if f.owner_id == "tom"]
    assert (rank.key, rank.statement) == (
        "experience:get-dan",
        "Tom Okafor got Tom Okafor's 2nd dan.",
    )
    assert "said_by" not in rank.fields and rank.source_event_ids == (101, 102)


def test_a_bare_correction_puts_right_the_thing_a_dated_claim_names_and_keeps_its_date() -> None:
    found = facts(
        [
            ("tom", "hi"),
            ("maya", "tom ran his first marathon yesterday!!! so proud"),
            ("tom", "half marathon actually 😅 the full one is next year"),
        ]
    )
    (race,) = [f for f in found if f.owner_id == "tom"]
    assert race.statement == "Tom Okafor ran Tom Okafor's half marathon on 7 September 2025."
    assert race.key == "event:2025-09-07:run-marathon" and "said_by" not in race.fields


@pytest.mark.parametrize(
    "lines",
    [
        [("maya", "tom just got his black belt"), ("tom", "nice weather actually")],  # a remark
        [("maya", "tom just got his black belt"), ("tomas", "2nd dan actually")],  # not his
        [
            ("maya", "tom just got his black belt"),
            ("tomas", "wow"),
            ("maya", "so cool"),
            ("tomas", "hero"),
            ("tom", "2nd dan actually"),  # too long after the claim
        ],
    ],
)
def test_a_bare_correction_that_answers_no_claim_just_made_corrects_nothing(
    lines: list[Line],
) -> None:
    found = facts([("tom", "hi"), *lines])
    (belt,) = [f for f in found if f.owner_id == "tom"]
    assert belt.key == "experience:get-belt" and belt.fields["said_by"] == "maya"


def test_a_claim_asked_to_be_confirmed_is_no_fact_until_its_subject_answers_it() -> None:
    asked = [("maya", "hi"), ("tom", "planning maya's surprise, her bday is june 3rd right?")]
    assert not [f for f in facts(asked) if f.owner_id == "maya"]
    found = facts([*asked, ("maya", "tom i'm literally in this chat 😂 and it's the 13th of june")])
    (birthday,) = [f for f in found if f.owner_id == "maya"]
    assert birthday.key == "identity:birthday"
    assert birthday.statement == "Maya Chen's birthday is on 13 June."  # every year: no year
    assert "said_by" not in birthday.fields and "event_time" not in birthday.fields
    later = facts([*asked, ("maya", "tom no 😭 it's the 13th. always has been")])
    assert [f.statement for f in later if f.owner_id == "maya"] == [
        "Maya Chen's birthday is the 13th."
    ]
    by_another = facts([*asked, ("tomas", "it's the 13th of june")])
    assert not [f for f in by_another if f.owner_id == "maya"]


def test_a_name_opening_lower_case_chat_without_a_comma_is_the_addressee() -> None:
    said = [("maya", "atlas we're planning porto for october"), ("tom", "cant wait"),
            ("atlas", "Great!")]  # fmt: skip
    assert addressed(said)[0] == "atlas"
    # a short form needs its comma: "and we…" names no Andrew, "mel you…" no Melanie
    assert addressed([("maya", "mel you were right"), ("tom", "ok"), ("melanie", "ha")])[0] == "tom"
    assert [f.statement for f in facts(said)] == ["Maya Chen is planning porto for October 2025."]


def test_she_never_means_the_assistant_named_in_a_turn_before() -> None:
    said = [("maya", "atlas find me blackout curtains pls"), ("atlas", "Here are two."),
            ("tom", "get the first ones. shes been sleeping w a towel over her face")]  # fmt: skip
    assert all("Atlas" not in f.statement for f in facts(said))


def test_a_day_or_a_feast_the_tagger_reads_as_a_name_is_nobody_she_can_mean() -> None:
    said = [("tom", "ok i need help, vday is friday and my gf sofia says she wants something "
                    "'low key' which means its a test lol"),
            ("tom", "she loves ramen and bad horror movies"), ("atlas", "Noted!")]  # fmt: skip
    assert all(not f.statement.startswith(("Vday", "Friday")) for f in facts(said))


@pytest.mark.parametrize(
    "said",
    [
        "Sheffield has way better crags than here",  # a place
        "Gym moved my fitness assessment to march",  # a capital that opens a sentence
        "Cool. tried an oat milk latte at the new place",
    ],
)
def test_a_proper_noun_that_names_no_person_makes_no_one_s_fact(said: str) -> None:
    found = facts([("maya", said)])
    assert not [f for f in found if f.key.startswith("relationship:")], [f.key for f in found]


def test_a_person_named_in_passing_keeps_their_facts() -> None:
    found = facts([("maya", "my coworker said Priya is moving to Berlin in june")])
    assert any(f.key.startswith("relationship:priya") for f in found), [f.key for f in found]


def test_a_relation_named_by_given_name_is_introduced_in_the_statement_about_them() -> None:
    found = facts([("maya", "my brother Karim lives in Marseille"),
                   ("maya", "Karim got a job at the port authority")])  # fmt: skip
    (job,) = [f for f in found if f.key == "relationship:brother:karim:employer"]
    assert job.statement == "Maya Chen's brother Karim got a job at the port authority."


@pytest.mark.parametrize(
    "said", ["I love your commitment", "I'll take your advice", "I will send you the video"]
)
def test_praise_of_the_listener_or_a_promise_to_them_is_no_fact(said: str) -> None:
    assert facts([("tom", "how are you?"), ("maya", said)]) == []


def test_what_one_loves_doing_with_the_listener_is_still_ones_own() -> None:
    (liking,) = facts([("tom", "how are you?"), ("maya", "I love hiking with you")])
    assert liking.key == "preference:hiking" and liking.owner_id == "maya"


def test_a_relation_named_in_an_earlier_session_is_known_to_its_member_alone() -> None:
    wife = [KnownName("rosa", "tom", "wife")]
    (job,) = facts([("tom", "rosa got a new job at st vincent's")], wife)
    assert (job.owner_id, job.key) == ("tom", "relationship:wife:employer")
    assert job.statement.startswith("Tom Okafor's wife Rosa ")
    others = facts([("tom", "hi"), ("maya", "rosa got a new job at st vincent's")], wife)
    assert not [f for f in others if f.key.startswith("relationship:wife")]


def test_the_summary_keeps_the_relations_named_so_far_for_later_sessions() -> None:
    evs = events([("tom", "my sister lena is moving to porto")])
    known = (KnownName("rosa", "tom", "wife"),)
    session = SessionInput("t", 1, "chat", START, START, evs, known_names=known)
    (summary,) = [
        i for i in HeuristicExtractor().extract(session).items if i.key.startswith("summary:")
    ]
    assert summary.fields["names"] == [["rosa", "tom", "wife"], ["lena", "tom", "sister"]]


def test_a_correction_said_to_the_friend_by_name_puts_their_claim_right() -> None:
    found = facts(
        [("tom", "hi"), ("maya", "tom is allergic to cats"), ("tom", "Maya it's DOGS not cats")]
    )
    (allergy,) = [f for f in found if f.kind == "constraint"]
    assert (allergy.owner_id, allergy.statement) == ("tom", "Tom Okafor is allergic to dogs.")
