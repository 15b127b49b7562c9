"""Atoms: chat sentences → one clean statement per clause, with its key, value and owner."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from consolidation.model import EntryState
from consolidation.supersede import plan_supersede
from observations.extract.base import FACT_KINDS, Extracted, SessionEvent, SessionInput
from observations.extract.heuristic import HeuristicExtractor
from observations.extract.statement_checks import of_item, statement_failures
from observations.extract.text import tidy
from observations.gates import DEFAULT_MIN_CONFIDENCE

START = datetime(2025, 9, 8, 9, 0, tzinfo=UTC)  # a Monday
NAMES = {"maya": "Maya Chen", "tom": "Tom Okafor", "atlas": "Atlas"}


def facts(lines: Sequence[tuple[str, str]], start: datetime = START) -> list[Extracted]:
    events = [
        SessionEvent(
            100 + i,
            i,
            "assistant" if actor == "atlas" else "user",
            actor,
            NAMES[actor],
            text,
            start + timedelta(minutes=i),
        )
        for i, (actor, text) in enumerate(lines)
    ]
    session = SessionInput("t", 1, "chat", start, events[-1].occurred_at, events)
    return [i for i in HeuristicExtractor().extract(session).items if i.kind in FACT_KINDS]


# (speaker, said) → [(owner, key, statement, value)]
TABLE = [
    (
        ("tom", "I'm vegetarian, and I can't travel on Sundays because of family commitments."),
        [
            ("tom", "constraint:diet", "Tom Okafor is vegetarian.", "vegetarian"),
            (
                "tom",
                "constraint:travel-sundays",
                "Tom Okafor can't travel on Sundays because of family commitments.",
                "travel on Sundays because of family commitments",
            ),
        ],
    ),
    (
        ("maya", "I prefer window seats when I fly, and I love strong black coffee."),
        [
            ("maya", "preference:seat", "Maya Chen prefers window seats when Maya Chen flies.",
             "window seats"),
            ("maya", "preference:coffee", "Maya Chen loves strong black coffee.",
             "strong black coffee"),
        ],
    ),
    (
        ("maya", "I work as a pediatric nurse at St. Mary's in Lisbon."),
        [
            ("maya", "identity:occupation",
             "Maya Chen works as a pediatric nurse at St. Mary's in Lisbon.",
             "pediatric nurse at St. Mary's in Lisbon"),
        ],
    ),
    (
        ("maya", "By the way, I ran the half marathon in 1:48 lol!!"),
        [
            ("maya", "experience:run-marathon", "Maya Chen ran the half marathon in 1:48.",
             "ran the half marathon in 1:48"),
        ],
    ),
    (
        ("maya", "I'm allergic to peanuts, so please keep that in mind for any restaurant ideas."),
        [("maya", "constraint:allergy:peanut", "Maya Chen is allergic to peanuts.", "peanuts")],
    ),
    (  # "to shellfish" parsed as an infinitive
        ("maya", "i'm allergic to shellfish"),
        [
            ("maya", "constraint:allergy:shellfish", "Maya Chen is allergic to shellfish.",
             "shellfish"),
        ],
    ),
    (
        ("maya", "Actually I now prefer aisle seats on flights, my knee needs the space."),
        [
            ("maya", "preference:seat", "Maya Chen now prefers aisle seats on flights.",
             "aisle seats on flights"),
        ],
    ),
    (
        ("maya", "MY FAVORITE DRINK IS GREEN TEA"),
        [("maya", "preference:drink", "Maya Chen's favorite drink is green tea.", "green tea")],
    ),
    (
        ("maya", "My sister Lena lives in Porto and I visit her most weekends."),
        [
            ("maya", "relationship:sister:lena:city", "Maya Chen's sister Lena lives in Porto.",
             "Porto"),
            ("maya", "relationship:sister:lena", "Maya Chen's sister is Lena.", "Lena"),
        ],  # "visit her most weekends" parses with "weekends" as the object: no fact
    ),
    (
        ("tom", "I think I'm going to quit my job."),
        [
            ("tom", "goal:quit-job", "Tom Okafor is going to quit Tom Okafor's job.",
             "quit Tom Okafor's job"),
        ],
    ),
    (
        ("tom", "i used to live in paris but now i live in berlin"),
        [
            ("tom", "experience:live-paris", "Tom Okafor used to live in paris.",
             "used to live in paris"),
            ("tom", "identity:city", "Tom Okafor lives in Berlin.", "Berlin"),
        ],
    ),
    (  # the subject chat leaves out is the speaker's
        ("maya", "Went to the park with the kids yesterday!"),
        [
            ("maya", "event:2025-09-07:go-park",
             "Maya Chen went to the park with the kids on 7 September 2025.",
             "went to the park with the kids on 7 September 2025"),
        ],
    ),
    (
        ("maya", "Gonna start a pottery class next month"),
        [
            ("maya", "goal:start-class",
             "Maya Chen is going to start a pottery class in October 2025.",
             "start a pottery class in October 2025"),
        ],
    ),
    (("maya", "Running is my therapy."), []),
    (
        ("tom", "radiohead is my fav band ever, make me a playlist"),
        [("tom", "preference:band", "Radiohead is Tom Okafor's fav band ever.", "Radiohead")],
    ),
    (
        ("tom", "pescatarian actually! i eat fish"),
        [
            ("tom", "constraint:diet", "Tom Okafor is pescatarian.", "pescatarian"),
            ("tom", "experience:eat-fish", "Tom Okafor eats fish.", "eats fish"),
        ],
    ),
    (
        ("tom", "we're in bologna now since july"),
        [("tom", "identity:city", "Tom Okafor is in Bologna now since July 2025.", "Bologna")],
    ),
    (
        ("tom", "i avoid pork, everything else is fine"),
        [("tom", "constraint:diet:pork", "Tom Okafor avoids pork.", "pork")],
    ),
    (
        ("tom", "i make 85k, can i afford a 2k/month apartment?"),
        [("tom", "identity:salary", "Tom Okafor makes 85k.", "85k")],
    ),
    (  # kin chat names without "my" is the speaker's
        ("tom", "Mom loves gardening."),
        [("tom", "relationship:mother:gardening", "Tom Okafor's mom loves gardening.",
          "gardening")],
    ),
    (  # a lead-in set off by commas is no part of the fact, but a thing and its day is one
        ("tom", "edinburgh trip next week, same deal, i always want the aisle"),
        [("tom", "event:2025-09-15/2025-09-21:trip",
          "Tom Okafor's edinburgh trip is in the week of 15 September 2025.",
          "in the week of 15 September 2025"),
         ("tom", "preference:aisle", "Tom Okafor always wants the aisle.", "aisle")],
    ),
    (
        ("tom", "In the evenings, I read novels."),
        [("tom", "experience:read-novel", "In the evenings, Tom Okafor reads novels.",
          "reads novels")],
    ),
    (
        ("tom", "my friends call me Sam"),
        [("tom", "identity:name", "Tom Okafor's friends call Tom Okafor Sam.", "Sam")],
    ),
    (  # two subjects, the parse's reading of "my partner and I": the verb stays plural,
        # and what the speaker does with another is the speaker's
        ("tom", "My partner and I often play chess for bets."),
        [("tom", "experience:play-chess",
          "Tom Okafor's partner and Tom Okafor often play chess for bets.",
          "play chess for bets")],
    ),
    (  # "me time" is one word, not the speaker
        ("tom", "I've been trying to squeeze in some me time."),
        [("tom", "goal:squeeze", "Tom Okafor has been trying to squeeze in some me-time.",
          "squeeze in some me-time")],
    ),
    (  # a day that owns what follows is written as its owner, not as "on <day>'s"
        ("maya", "I bonded with Priya during yesterday's yoga class."),
        [("maya", "event:2025-09-07:bond-priya",
          "Maya Chen bonded with Priya during 7 September 2025's yoga class.",
          "bonded with Priya during 7 September 2025's yoga class")],
    ),
    (  # a list: Toby is not the girlfriend's name
        ("tom", "My girlfriend, Toby and I are going camping."),
        [("tom", "relationship:girlfriend:go-camping",
          "Tom Okafor's girlfriend, Toby and Tom Okafor are going camping.", "going camping")],
    ),
    (  # a leading "now" is left out: a fact holds now anyway
        ("maya", "Now I'm passionate about pottery."),
        [("maya", "preference:pottery", "Maya Chen is passionate about pottery.", "pottery")],
    ),
    (  # a "?" ends a sentence before lower case; a "so" of consequence ends the fact
        ("maya", "thai place for dinner sat? and heads up im allergic to peanuts so ideally "
                 "somewhere that takes that seriously"),
        [("maya", "constraint:allergy:peanut", "Maya Chen is allergic to peanuts.", "peanuts")],
    ),
    (  # an "'s" read as a possessive before an adjective is "is", whatever follows
        ("tom", "fyi meera's pregnant so we'll need good mocktails"),
        [("tom", "relationship:meera:pregnancy", "Meera is pregnant.", "pregnant")],
    ),
    (  # a lead-in of its own is left out, and its date with it
        ("maya", "first week back tmrw i teach chem at westbury"),
        [("maya", "experience:teach-chem", "Maya Chen teaches chem at westbury.",
          "teaches chem at westbury")],
    ),
    (  # a habit of taking something: every coffee drink is coffee
        ("maya", "i drink like 4 big flat whites a day"),
        [("maya", "preference:coffee", "Maya Chen drinks like 4 big flat whites a day.",
          "4 big flat whites")],
    ),
    (  # and its end, the same key said the other way
        ("maya", "i finally quit coffee completely"),
        [("maya", "preference:coffee", "Maya Chen quit coffee completely.", "coffee")],
    ),
    (
        ("tom", "I stopped drinking soda."),
        [("tom", "preference:soda", "Tom Okafor stopped drinking soda.", "drinking soda")],
    ),
    (  # a thing said first to stress it is put back in its place
        ("maya", "omg no its DOGS im allergic to, cats r totally fine"),
        [("maya", "constraint:allergy:dog", "Maya Chen is allergic to dogs.", "dogs")],
    ),
    (("tom", "we cant foster that kitten from my coworker right, ur allergic to cats"), []),
    (  # "have" without how often is no habit: no liking of bread
        ("tom", "i have some bread left"),
        [("tom", "experience:have-bread", "Tom Okafor has some bread left.",
          "has some bread left")],
    ),
    (  # a past form read as an imperative leaves out "I"; "he" is the relation just got
        ("tom", "got a new puppy!!! hes a corgi named waffles"),
        [("tom", "relationship:dog", "Tom Okafor got a new puppy.", "new puppy"),
         ("tom", "relationship:dog:corgi", "Tom Okafor's puppy is a corgi named waffles.",
          "corgi named waffles")],
    ),
    (("maya", "my company is great"), []),
    (("maya", "my moving company is Two Guys"), []),
    (("maya", "i dream of visiting them someday"), []),
    (("maya", "can you book me a flight to berlin?"), []),
    (("maya", "Book me a train to Porto please."), []),
    (("tom", "I hope I get the job."), []),
    (("maya", "that sounds great, we should do it again"), []),
]  # fmt: skip


@pytest.mark.parametrize(("said", "expected"), TABLE)
def test_a_sentence_becomes_one_clean_fact_per_clause(
    said: tuple[str, str], expected: list[tuple[str, str, str, str]]
) -> None:
    found = facts([("atlas", "How can I help?"), said])
    got = [(f.owner_id, f.key, f.statement, f.fields["object"]) for f in found]
    assert got == expected
    assert all(f == () for f in statement_failures([of_item(f) for f in found]))


def test_a_relation_named_in_passing_is_a_relationship_and_a_new_one_supersedes_it() -> None:
    (greg,) = facts([("maya", "can you help me write an update for my manager greg")])
    assert (greg.key, greg.statement) == ("relationship:manager", "Maya Chen's manager is Greg.")
    (aisha,) = facts([("maya", "my new boss is Aisha Karim")], START + timedelta(days=9))
    assert aisha.key == "relationship:manager" and aisha.fields["object"] == "Aisha Karim"
    (change,) = plan_supersede([_entry(1, greg), _entry(2, aisha)])
    assert (change.old, change.new) == (1, 2)


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("my manager is gonna be priya", "Maya Chen's manager is going to be Priya."),
        ("my new manager will be priya", "Maya Chen's new manager will be Priya."),
        ("my manager is going to be Priya", "Maya Chen's manager is going to be Priya."),
    ],
)
def test_a_relation_to_be_named_is_named_however_the_name_was_typed(
    said: str, statement: str
) -> None:
    (named,) = facts([("maya", said)])
    assert (named.key, named.statement, named.fields["object"]) == (
        "relationship:manager", statement, "Priya",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("said", "key", "statement"),
    [
        ("sara is my sister", "relationship:sister:sara", "Maya Chen's sister is Sara."),
        ("Hale is my coach", "relationship:coach:hale", "Maya Chen's coach is Hale."),
        # "'s" before "my" is "is" ("hale's" read as a possessive lost the fact)
        ("hale's my co-advisor actually", "relationship:co-advisor:hale",
         "Maya Chen's co-advisor is Hale."),
        ("my main advisor is prof ferreira", "relationship:advisor",
         "Maya Chen's main advisor is Prof Ferreira."),  # the title typed in lower case too
    ],
)  # fmt: skip
def test_one_named_as_a_relation_is_that_relation_and_no_trade(
    said: str, key: str, statement: str
) -> None:
    (named,) = facts([("maya", said)])
    assert (named.owner_id, named.key, named.statement) == ("maya", key, statement)


@pytest.mark.parametrize(
    ("said", "owner", "key", "statement"),
    [
        ("congrats to tom who just got the fapesp doctoral scholarship", "tom",
         "experience:get-scholarship", "Tom Okafor got the fapesp doctoral scholarship."),
        ("my sister, who lives in Paris, is visiting next week", "maya",
         "relationship:sister:city", "Maya Chen's sister lives in Paris."),
        ("heights r fine, im the one who gets carsick on gravel roads", "maya",
         "constraint:health:carsick", "Maya Chen gets carsick on gravel roads."),
    ],
)  # fmt: skip
def test_a_relative_clause_on_a_person_is_a_fact_about_them(
    said: str, owner: str, key: str, statement: str
) -> None:
    found = [f for f in facts([("maya", said), ("tom", "ha thanks")]) if f.key == key]
    assert [(f.owner_id, f.statement) for f in found] == [(owner, statement)]


@pytest.mark.parametrize(
    ("said", "key", "statement"),
    [
        ("my whole thesis is coral bleaching on the abrolhos reefs", "identity:thesis",
         "Maya Chen's whole thesis is coral bleaching on the abrolhos reefs."),
        ("i get carsick tho so im calling front seat", "experience:call-seat",
         "Maya Chen is calling front seat."),  # "tho so" is no part of it
        ("we r moving to denver in june", "identity:city",
         "Maya Chen is moving to Denver in June 2026."),  # "r" is "are"
        # emoji end a sentence: the next one is no part of the clause
        ("my thesis is coral bleaching 🎉🎉 shes too humble to say it", "identity:thesis",
         "Maya Chen's thesis is coral bleaching."),
        # "is" written without its apostrophe after a relation, or as "'s" before "-ing"
        ("my wifes celiac so it has to be gluten free", "relationship:wife:diet:celiac",
         "Maya Chen's wife is celiac."),
    ],
)  # fmt: skip
def test_chat_spellings_and_fillers_leave_clean_statements(
    said: str, key: str, statement: str
) -> None:
    found = facts([("maya", said)], start=datetime(2026, 1, 8, 14, 0, tzinfo=UTC))
    assert [(f.key, f.statement) for f in found] == [(key, statement)]


def test_ones_own_body_part_said_without_my_is_a_health_constraint() -> None:
    found = facts(
        [("maya", "i'll do the short loops, knee's still cranky from the acl op in jan")],
        start=datetime(2025, 3, 2, 9, 0, tzinfo=UTC),
    )
    (knee,) = [f for f in found if f.kind == "constraint"]
    said = "Maya Chen's knee is still cranky from the acl op in January 2025."  # it was past
    assert (knee.key, knee.statement) == ("constraint:health:knee", said)


def test_a_relative_clause_on_someone_unnamed_is_no_fact() -> None:
    assert facts([("maya", "the guy who fixed my car was nice")]) == []


@pytest.mark.parametrize("said", ["my manager will be a nurse", "my manager is going to be mad"])
def test_what_a_relation_will_be_is_no_name(said: str) -> None:
    assert [f.key for f in facts([("maya", said)]) if f.key == "relationship:manager"] == []


def test_plans_that_changed_are_no_attribute_of_ones_own() -> None:
    found = facts([("maya", "my plans changed to next week")])
    assert [f.key for f in found if f.kind in ("goal", "identity")] == []


def test_negation_is_polarity_on_the_same_key_and_a_newer_no_longer_supersedes() -> None:
    (was,) = facts([("tom", "I'm vegetarian.")])
    (now,) = facts([("tom", "I'm no longer vegetarian.")], START + timedelta(days=30))
    assert was.key == now.key == "constraint:diet"
    assert (was.fields["polarity"], now.fields["polarity"]) == ("positive", "negative")
    assert was.fields["object"] == now.fields["object"] == "vegetarian"
    (change,) = plan_supersede([_entry(1, was), _entry(2, now)])
    assert (change.old, change.new) == (1, 2)


@pytest.mark.parametrize(
    "said",
    ["honestly the vegetarian era is over lol. i'll eat chicken and fish now",
     "my vegetarian phase is over"],
)  # fmt: skip
def test_a_diet_whose_era_is_over_is_given_up(said: str) -> None:
    (now,) = [f for f in facts([("tom", said)]) if f.key == "constraint:diet"]
    assert (now.fields["polarity"], now.fields["object"]) == ("negative", "vegetarian")


@pytest.mark.parametrize(
    "said", ["so... im eating fish again. pescatarian era 🐟 can u redo the plan", "my vegan era"]
)
def test_a_diet_said_as_the_era_one_is_in_is_ones_diet_now(said: str) -> None:
    (now,) = [f for f in facts([("tom", said)]) if f.key == "constraint:diet"]
    assert now.fields["polarity"] == "positive"
    assert now.fields["object"] in ("pescatarian", "vegan")


@pytest.mark.parametrize(
    ("said", "statement"),
    [("also sold the civic last weekend. biking to work now, its 12 min lol my legs r dying",
      "Tom Okafor is biking to work now."),  # a laugh, and "its" after a comma, end a sentence
     ("theo and i broke up last month", "Theo and Tom Okafor broke up in August 2025."),
     ("jo and i went to the lake district last week",
      "Jo and Tom Okafor went to the lake district in the week of 1 September 2025.")],
)  # fmt: skip
def test_chat_sentences_run_together_and_the_speaker_second_in_a_subject_are_read(
    said: str, statement: str
) -> None:
    assert statement in [f.statement for f in facts([("tom", said)])]


@pytest.mark.parametrize(
    ("said", "statement"),
    [("morning. started the new thyroid meds last tuesday",  # a greeting, a sentence
      "Tom Okafor started the new thyroid meds on 2 September 2025."),
     ("nah thats ravi lol. im just lactose intolerant, ill bring my lactaid",  # "I'll"
      "Tom Okafor is just lactose-intolerant."),
     ("dr patel scheduled my hip replacement for november",  # another acts on one's thing
      "Tom Okafor's hip replacement is set for November 2025.")],
)  # fmt: skip
def test_chat_openings_spellings_and_things_of_ones_own_acted_on_are_read(
    said: str, statement: str
) -> None:
    assert statement in [f.statement for f in facts([("tom", said)])]


@pytest.mark.parametrize(
    ("said", "expected"),
    [("hell go to happy tails, the boarding place", "he'll go to happy tails"),
     ("well see i guess", "we'll see"), ("ok ill bring it", "I'll bring it"),
     ("i was ill last week", "i was ill last week"), ("well done", "well done"),
     ("kinda bummed, priya's transferring to singapore", "priya is transferring"),
     ("my sister's wedding is in june", "my sister's wedding"),
     ("my parents live in leeds", "my parents live")],
)  # fmt: skip
def test_chat_writes_contractions_without_apostrophes_and_they_are_read_as_such(
    said: str, expected: str
) -> None:
    assert expected in tidy(said)


@pytest.mark.parametrize("said", ["not", "not.", "nope: not", "ok. not"])
def test_a_bare_not_is_no_fact(said: str) -> None:
    assert facts([("tom", said)]) == []


def test_a_coming_or_going_without_its_day_is_no_fact() -> None:
    assert facts([("tom", "my brother is visiting, so i need to clean the spare room")]) == []


def test_a_thing_moved_to_a_day_is_no_home() -> None:
    found = facts([("tom", "also i moved my return flight to the 7th")])
    assert [f.key for f in found if f.key == "identity:city"] == []


def test_starting_at_a_place_in_a_sentence_about_ones_commute_is_an_employer() -> None:
    found = facts([("tom", "since I started at Forest Park Dental my commute is 10 min")])
    assert [f.fields["object"] for f in found if f.key == "identity:employer"] == [
        "Forest Park Dental"
    ]


@pytest.mark.parametrize(
    ("said", "key", "statement"),
    [("guess who signed up for her first triathlon 😤", "experience:sign-triathlon",
      "Maya Chen signed up for Maya Chen's first triathlon."),
     ("guess who's moving to berlin", "identity:city", "Maya Chen is moving to Berlin.")],
)  # fmt: skip
def test_news_told_as_guess_who_is_the_speakers(said: str, key: str, statement: str) -> None:
    assert [(f.key, f.statement) for f in facts([("maya", said)])] == [(key, statement)]


@pytest.mark.parametrize(
    "said",
    ["can u pull the totals out of my statement? password is my birthday lol, 0412",
     "my pin's 4432 btw", "the wifi password: hunter2", "cvv is 123"],
)  # fmt: skip
def test_a_secret_given_is_kept_in_no_entry(said: str) -> None:
    events = [SessionEvent(1, 1, "user", "maya", "Maya Chen", said, START)]
    session = SessionInput("t", 1, "chat", START, START, events)
    kept = " ".join(i.statement for i in HeuristicExtractor().extract(session).items)
    assert not any(secret in kept for secret in ("0412", "4432", "hunter2", "123"))
    assert not any(f.key == "identity:birthday" for f in facts([("maya", said)]))


def test_a_lower_case_sentence_opening_with_heads_up_and_a_subject_is_its_own() -> None:
    said = "4 of us, fri to sun. also heads up i'm moving to lisbon in september, work transfer"
    (moved,) = [f for f in facts([("maya", said)]) if f.key == "identity:city"]
    assert moved.statement == "Maya Chen is moving to Lisbon in September 2025."


@pytest.mark.parametrize(
    "dropped", ["also i gave up on spanish, doing italian now", "i quit spanish",
                "i stopped learning spanish"],
)  # fmt: skip
def test_a_language_given_up_supersedes_learning_it(dropped: str) -> None:
    (was,) = facts([("tom", "i'm learning spanish on duolingo")])
    (now,) = [f for f in facts([("tom", dropped)], START + timedelta(days=30))
              if f.key == "skill:spanish"]  # fmt: skip
    assert was.key == "skill:spanish" and now.fields["polarity"] == "negative"
    (change,) = plan_supersede([_entry(1, was), _entry(2, now)])
    assert (change.old, change.new) == (1, 2)
    assert [f.key for f in facts([("tom", "i'm learning italian now")])] == ["skill:italian"]


def test_quitting_what_one_took_supersedes_the_habit_said_of_any_kind_of_it() -> None:
    (was,) = facts([("maya", "i drink like 4 big flat whites a day")])
    (now,) = facts([("maya", "ok i finally quit coffee completely!!")], START + timedelta(days=90))
    assert was.key == now.key == "preference:coffee"
    assert (was.fields["polarity"], now.fields["polarity"]) == ("positive", "negative")
    (change,) = plan_supersede([_entry(1, was), _entry(2, now)])
    assert (change.old, change.new) == (1, 2)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("priya (my gf) says shes gonna make sure i dont skip it", "we split up last month"),
        ("my wife Ana is a chef", "i broke up with ana in may, still friends tho"),
        ("i drive a corolla", "sold the corolla, cycling from now on"),
        ("I work at Spotify.", "i quit my job on friday!!"),
    ],
)
def test_an_ending_said_as_what_happened_supersedes_the_value_it_ends(
    before: str, after: str
) -> None:
    (old,) = [f for f in facts([("tom", before)]) if f.key.count(":") == 1]
    ended = facts([("tom", after)], START + timedelta(days=40))
    (new,) = [f for f in ended if f.kind == old.kind]
    (change,) = plan_supersede([_entry(1, old), _entry(2, new)])
    assert (change.old, change.new) == (1, 2)


def test_a_relations_breakup_ends_their_partner_not_the_relation() -> None:
    (sister,) = [
        f
        for f in facts([("tom", "my sister lena started at the bank")])
        if f.key == "relationship:sister:lena"
    ]
    ended = facts([("tom", "my sister broke up with her bf")], START + timedelta(days=40))
    assert [f.key for f in ended] == ["relationship:sister:partner"]
    assert plan_supersede([_entry(1, sister), _entry(2, ended[0])]) == []


@pytest.mark.parametrize(
    "said", ["the band broke up", "i didn't sell my car", "i sold my old guitar"]
)
def test_what_ends_nothing_of_the_persons_is_no_ending(said: str) -> None:
    assert not [
        f for f in facts([("tom", said)]) if f.key in ("relationship:partner", "identity:car")
    ]


@pytest.mark.parametrize(
    ("before", "after", "key"),
    [
        ("I work at Spotify.", "I got a new job at Google.", "identity:employer"),
        ("I live in Lisbon.", "we moved to Berlin last month", "identity:city"),
        ("I drive a Golf.", "I bought a new car, an electric one.", "identity:car"),
        ("my insurance is Cigna", "my insurance changed to aetna", "identity:insurance"),
        ("i drive a corolla", "just bought a tesla model 3", "identity:car"),
        ("my corolla broke down AGAIN lol", "took the new outback up to tahoe", "identity:car"),
        (
            "my corolla is making a horrible noise",
            "the corolla died so i picked up a used golf on saturday",
            "identity:car",
        ),
        ("I'm a nurse.", "I work as a paramedic now.", "identity:occupation"),
    ],
)
def test_a_new_value_in_other_words_supersedes_a_single_valued_key(
    before: str, after: str, key: str
) -> None:
    (old,) = [f for f in facts([("tom", before)]) if f.key == key]
    (new,) = [f for f in facts([("tom", after)], START + timedelta(days=40)) if f.key == key]
    (change,) = plan_supersede([_entry(1, old), _entry(2, new)])
    assert (change.old, change.new) == (1, 2)


def _entry(entry_id: int, item: Extracted) -> EntryState:
    return EntryState(
        id=entry_id,
        owner_type=item.owner_type,
        owner_id=item.owner_id,
        kind=item.kind,
        key=item.key,
        statement=item.statement,
        valid_from=item.valid_from,
        recorded_at=item.valid_from,
        confidence=item.confidence,
        fields=item.fields,
    )


def test_dates_in_a_statement_are_absolute_and_kept_in_fields() -> None:
    found = facts([("maya", "I went hiking in Sintra yesterday with my colleague Rui.")])
    (item,) = [f for f in found if f.kind == "event"]
    assert item.statement == (
        "Maya Chen went hiking in Sintra on 7 September 2025 with Maya Chen's colleague Rui."
    )
    assert item.kind == "event" and item.key == "event:2025-09-07:hike-sintra"
    assert item.fields["event_time"] == "2025-09-07"
    assert (item.fields["valid_at"], item.fields["precision"]) == ("2025-09-07", "day")
    assert item.valid_from == datetime(2025, 9, 7, tzinfo=UTC)


def _passes_checks(found: Sequence[Extracted]) -> bool:
    return all(f == () for f in statement_failures([of_item(f) for f in found]))


def test_a_job_at_a_workplace_is_keyed_by_the_employer_so_a_new_one_supersedes_it() -> None:
    (old,) = facts([("tom", "I'm a nurse at St. Jude's.")])
    assert (old.key, old.fields["object"]) == ("identity:employer", "St. Jude's")
    assert old.statement == "Tom Okafor is a nurse at St. Jude's."
    (student,) = facts([("tom", "I'm a student at Leeds.")])
    assert student.key == "identity:occupation"
    found = facts([("tom", "i switched jobs, im at brightline now")], START + timedelta(days=40))
    (new,) = [f for f in found if f.key == "identity:employer"]
    assert new.fields["object"] == "Brightline" and _passes_checks(found)
    (change,) = plan_supersede([_entry(1, old), _entry(2, new)])
    assert (change.old, change.new) == (1, 2)


@pytest.mark.parametrize(
    "said",
    [
        "i switched jobs, im at home now",  # a setting, not a workplace
        "im at brightline now",  # no job in the sentence
        "new job is great, I'm at the gym a lot more",  # an article: a place one is at
        "I'm at Google for a job interview",  # a job interview is no job
    ],
)
def test_being_at_a_place_is_no_employer(said: str) -> None:
    assert all(f.key != "identity:employer" for f in facts([("tom", said)]))


def test_a_home_said_in_passing_is_the_city_one_lives_in() -> None:
    found = facts([("maya", "reunion is 16 aug at my place in gaia")])
    (home,) = [f for f in found if f.key == "identity:city"]
    assert (home.owner_id, home.statement) == ("maya", "Maya Chen lives in Gaia.")
    assert home.fields["location"] == "Gaia" and _passes_checks(found)
    for said in (
        "i lost my place in line",
        "my place in the world is here",
        "her flat in Porto",
        "we saw a flat in porto",
        "i got a flat tyre in porto",
        "found a flat in headingley!!",
    ):
        assert all(f.key != "identity:city" for f in facts([("maya", said)]))


@pytest.mark.parametrize(
    ("said", "town"),
    [("i moved!! left the lyon flatshare, got a studio in grenoble for 590/month", "Grenoble"),
     ("new place in neustadt is cute tho", "Neustadt"),
     ("im in a flatshare in lyon, 640€ a month", "Lyon")],
)  # fmt: skip
def test_a_home_just_got_or_new_is_the_city_one_lives_in(said: str, town: str) -> None:
    (home,) = [f for f in facts([("maya", said)]) if f.key == "identity:city"]
    assert home.statement == f"Maya Chen lives in {town}."


def test_a_first_week_at_a_named_workplace_is_a_new_employer() -> None:
    found = facts([("maya", "first week at kaiser oakland done!!! day shifts")])
    (job,) = [f for f in found if f.key == "identity:employer"]
    assert job.statement == "Maya Chen started at Kaiser Oakland." and _passes_checks(found)
    for said in ("first day at school done!!", "first week at work was ok", "last week at Kaiser"):
        assert all(f.key != "identity:employer" for f in facts([("maya", said)]))


def test_being_at_a_place_time_and_again_is_a_habit_and_once_is_nothing() -> None:
    (gym,) = facts([("maya", "ugh opposite, i'm at the gym at 5am every day")])
    assert (gym.kind, gym.key) == ("experience", "experience:at-gym")
    assert gym.statement == "Maya Chen is at the gym at 5am every day." and _passes_checks([gym])
    (church,) = facts([("tom", "we're at the church every Sunday")])
    assert church.key == "experience:at-church"
    for said in ("i'm at the gym", "I'm at the gym this Sunday", "I was at the gym every day"):
        assert all(f.kind != "experience" for f in facts([("maya", said)]))


def test_a_clause_stops_at_a_so_another_clause_took_from_between_its_words() -> None:
    found = facts([("tom", "hi"), ("maya", "tom is allergic to cats remember so no pets")])
    (allergy,) = [f for f in found if f.key == "constraint:allergy:cat"]
    assert allergy.statement == "Tom Okafor is allergic to cats." and _passes_checks(found)


def test_a_past_clause_framing_another_in_time_is_a_fact_of_its_own() -> None:
    said = "I had a quiet weekend after we went camping with my family two weekends ago"
    (camping,) = found = facts([("maya", said)])
    assert camping.key == "event:2025-08-30/2025-08-31:go-camping"
    assert camping.statement == (
        "Maya Chen went camping with Maya Chen's family on the weekend of 30-31 August 2025."
    )
    (center,) = facts([("tom", "I painted this after I visited the community center.")])
    assert center.statement == "Tom Okafor visited the community center." and _passes_checks(found)
    for said in (
        "I always stretch before I go running",  # not past: a habit
        "if I went hiking after I finished work, I'd be tired",  # a condition
        "did you go out after you finished the exam?",  # a question
        "I'll call you when I get home",
    ):
        assert facts([("maya", said)]) == []


def test_a_search_under_way_is_an_experience() -> None:
    (jobs,) = facts([("maya", "I'm still looking into counseling and mental health jobs.")])
    assert (jobs.key, jobs.statement) == (
        "experience:look-counseling",
        "Maya Chen is still looking into counseling and mental health jobs.",
    )
    (flat,) = facts([("tom", "we've been looking for a bigger apartment")])
    assert flat.statement == "Tom Okafor has been looking for a bigger apartment."
    for said in (
        "I was looking for my keys all morning",  # over
        "I'm looking forward to the trip",
        "I'm looking at flights",
        "I'm not looking for a new job",
        "I'm looking for a while",
    ):
        assert facts([("maya", said)]) == []


def test_a_home_country_named_beside_it_is_where_one_comes_from() -> None:
    found = facts([("maya", "it's a gift from my grandma in my home country, Sweden")])
    (origin,) = [f for f in found if f.key == "identity:origin"]
    assert origin.statement == "Maya Chen's home country is Sweden." and _passes_checks(found)
    (town,) = [f for f in facts([("tom", "I miss Austin, my hometown.")]) if f.kind == "identity"]
    assert town.statement == "Tom Okafor's hometown is Austin."
    for said in ("I love my country, Canada.", "I went back to my home, Denver, for a week.",
                 "Tom visited his home country, Italy."):  # fmt: skip
        assert all(f.key != "identity:origin" for f in facts([("maya", said)]))


def test_going_out_to_an_activity_is_the_activity() -> None:
    said = "last weekend my girlfriend and I went fishing in one of the nearby lakes"
    (fishing,) = found = facts([("tom", said)])  # "went" parsed as an auxiliary
    assert fishing.key == "event:2025-09-06/2025-09-07:go-fishing"
    assert fishing.statement == (
        "On the weekend of 6-7 September 2025 Tom Okafor's girlfriend and Tom Okafor went"
        " fishing in one of the nearby lakes."
    )
    (swim,) = facts([("maya", "I'm off to go swimming with the kids. Talk soon!")])
    assert (swim.key, swim.statement) == (
        "experience:go-swimming",
        "Maya Chen is off to go swimming with the kids.",
    )
    assert _passes_checks([*found, swim])
    for said in ("I'm off to bed", "I'm off work today", "are you going hiking?",
                 "I'm going fishing if it stops raining", "it's going well"):  # fmt: skip
        assert facts([("maya", said)]) == []


def test_an_interest_held_is_a_preference() -> None:
    (photos,) = facts([("maya", "I'm interested in photography")])
    assert (photos.key, photos.statement) == (
        "preference:photography",
        "Maya Chen is interested in photography.",
    )
    (mom,) = facts([("tom", "my mom was interested in art")])
    assert (mom.key, mom.statement) == (
        "relationship:mother:art",
        "Tom Okafor's mom was interested in art.",
    )
    for said in ("I'd be interested in joining", "I was interested in buying it",
                 "I'm not interested in politics"):  # fmt: skip
        assert facts([("maya", said)]) == []


def test_a_quantity_of_things_done_is_about_the_things() -> None:
    (cafes,) = facts([("maya", "we visited a lot of delicious cafes!")])
    assert (cafes.key, cafes.statement) == (
        "experience:visit-cafe",
        "Maya Chen visited a lot of delicious cafes.",
    )
    for said in ("I had a lot of fun", "I learned a lot", "that song has a lot of meaning for me"):
        assert facts([("maya", said)]) == []


def test_a_relation_set_after_a_name_names_it() -> None:
    found = facts([("tom", "So much has changed - meet Toby, my puppy.")])
    (toby,) = [f for f in found if f.kind == "relationship"]
    assert (toby.key, toby.statement) == ("relationship:dog:toby", "Tom Okafor's puppy is Toby.")
    assert _passes_checks(found)
    for said in ("That one is Max, my childhood dog.", "I love Paris, my favorite city."):
        assert all(f.kind != "relationship" for f in facts([("tom", said)]))


def test_starting_at_a_place_in_a_sentence_about_a_job_is_a_new_employer() -> None:
    (old,) = facts([("maya", "i work at crumb & co, the bakery on kastanienallee")])
    said = "i quit the bakery job, started at a vet clinic last week"
    found = facts([("maya", said)], START + timedelta(days=60))
    (new,) = [f for f in found if f.key == "identity:employer"]
    assert new.fields["object"] == "vet clinic" and _passes_checks(found)
    (change,) = plan_supersede([_entry(1, old), _entry(2, new)])
    assert (change.old, change.new) == (1, 2)
    for said in ("i started at a new gym", "my job sucks, started at 9 today"):
        assert all(f.key != "identity:employer" for f in facts([("maya", said)]))


def test_a_statement_then_a_remark_that_someone_else_wont_say_it_is_still_said() -> None:
    lines = [("tom", "also maya got a job at stripe, she wont say it herself lol"),
             ("maya", "lol yes")]  # fmt: skip
    (job,) = [f for f in facts(lines) if f.key == "identity:employer"]
    assert (job.owner_id, job.fields["said_by"]) == ("maya", "tom")
    for said in (
        "i don't think maya got a job at stripe",
        "maya got a job at stripe, i don't think",
    ):
        assert all(f.key != "identity:employer" for f in facts([("tom", said), ("maya", "hm")]))


def test_a_denial_then_what_is_right_in_its_place_states_both() -> None:
    found = facts([("tom", "nah im not allergic to shellfish lol, its peanuts. paella is fine")])
    assert {(f.key, f.statement, f.fields["polarity"]) for f in found} == {
        ("constraint:allergy:shellfish", "Tom Okafor is not allergic to shellfish.", "negative"),
        ("constraint:allergy:peanut", "Tom Okafor is allergic to peanuts.", "positive"),
    }
    (job,) = facts([("tom", "i don't work at google, it's meta")])
    assert (job.key, job.statement) == ("identity:employer", "Tom Okafor works at Meta.")
    (only,) = facts([("tom", "i'm not allergic to cats, i just hate them")])
    assert only.fields["polarity"] == "negative"


def test_the_speaker_putting_right_what_they_just_said_reads_it_again_with_right_words() -> None:
    found = facts(
        [
            ("maya", "booked the dentist for next monday finally"),
            ("atlas", "Nice. Should I add it to your calendar?"),
            ("maya", "wait actually it's tuesday not monday, i misread the email"),
        ],
        START + timedelta(days=3),  # a Thursday
    )
    (visit,) = [f for f in found if f.key.startswith("event:")]
    assert visit.key == "event:2025-09-16:book-dentist"  # next Monday was 15 September
    assert visit.statement == "Maya Chen booked the dentist for 16 September 2025."
    assert visit.source_event_ids == (100, 102) and _passes_checks(found)
    others = facts([("maya", "i love cats"), ("tom", "its dogs not cats")])
    assert [f.statement for f in others] == ["Maya Chen loves cats."]  # not Tom's to put right


def test_a_shift_at_a_named_workplace_is_where_one_works() -> None:
    found = facts([("maya", "cant, night shift at st thomas' hospital all weekend. nurse life")])
    (job,) = [f for f in found if f.key == "identity:employer"]
    assert job.statement == "Maya Chen works at St Thomas' Hospital." and _passes_checks(found)
    for said in ("long shift at work today", "there was a shift at the company"):
        assert all(f.key != "identity:employer" for f in facts([("maya", said)]))


def test_what_happened_to_a_thing_of_the_speakers_is_their_experience() -> None:
    for said, statement in [
        ("my bike was stolen yesterday", "Maya Chen's bike was stolen on"),
        ("my car broke down on monday", "Maya Chen's car broke down on"),
        ("my flight got cancelled", "Maya Chen's flight got cancelled."),
    ]:
        found = facts([("maya", said)])
        assert [f.statement[: len(statement)] for f in found] == [statement], said
        assert _passes_checks(found)
    for said in ("my day went well", "my bike was not stolen", "my sister moved away"):
        assert all(f.kind != "experience" for f in facts([("maya", said)])), said


def test_words_the_parse_misread_as_english_am_make_no_fact() -> None:
    said = "tierarztpraxis am see, doing reception + helping w the animals"
    assert facts([("maya", said)]) == []
    assert [f.key for f in facts([("maya", "i am a nurse")])] == ["identity:occupation"]


@pytest.mark.parametrize(
    ("said", "key", "statement", "value"),
    [
        ("my sister lives in porto", "relationship:sister:city",
         "Maya Chen's sister lives in Porto.", "Porto"),
        ("i work at google now", "identity:employer", "Maya Chen works at Google now.", "Google"),
        ("im from rio de janeiro", "identity:origin", "Maya Chen is from Rio de Janeiro.",
         "Rio de Janeiro"),
        ("i work at a hospital", "identity:employer", "Maya Chen works at a hospital.", "hospital"),
    ],
)  # fmt: skip
def test_a_place_or_employer_written_in_lowercase_is_stored_as_a_name(
    said: str, key: str, statement: str, value: str
) -> None:
    (fact,) = [f for f in facts([("maya", said)]) if f.key == key]
    assert (fact.statement, fact.fields["object"]) == (statement, value)
    assert statement_failures([of_item(fact, ("Maya Chen",))]) == [()]


def test_a_car_named_by_its_make_or_model_is_a_car_and_its_number_is_part_of_the_name() -> None:
    (car,) = facts([("tom", "just bought a tesla model 3")])
    assert (car.key, car.statement, car.fields["object"]) == (
        "identity:car", "Tom Okafor bought a tesla model 3.", "tesla model 3",
    )  # fmt: skip
    (other,) = facts([("tom", "I bought a new laptop.")])
    assert other.key != "identity:car"
    (dated,) = facts([("tom", "I bought a car 2 weeks ago")])
    assert dated.fields["object"] == "car"  # the number counts the weeks


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("i'll drive, my corolla fits all of us", "Tom Okafor has a corolla."),
        ("My honda civic broke down again", "Tom Okafor has a honda civic."),
        ("my audi is in the garage", "Tom Okafor has an audi."),
        ("took the new outback up to tahoe", "Tom Okafor has an outback."),
    ],
)
def test_a_car_of_ones_own_named_in_passing_is_ones_car(said: str, statement: str) -> None:
    (car,) = [f for f in facts([("tom", said)]) if f.key == "identity:car"]
    assert car.statement == statement and car.owner_id == "tom"


def test_where_a_car_is_says_nothing_of_which_car_it_is() -> None:
    assert [f.key for f in facts([("tom", "my car is in the shop")])] == []
    assert [f.key for f in facts([("tom", "his new tesla is fast")])] == []
    (car,) = facts([("tom", "my car is a corolla")])
    assert (car.key, car.fields["object"]) == ("identity:car", "corolla")


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("we even went on a hike", "Maya Chen went on a hike."),
        ("i'm definitely carrying on volunteering at the shelter",
         "Maya Chen is carrying on volunteering at the shelter."),
        ("i'm just learning the piano", "Maya Chen is learning the piano."),
        ("i just eat fish", "Maya Chen just eats fish."),  # "just" as "only" stays
        ("i also have a small garden", "Maya Chen has a small garden."),
        ("we finally moved to denver", "Maya Chen moved to Denver."),
        ("i'm trying to do more yoga myself", "Maya Chen is trying to do more yoga."),
        ("i moved to berlin, yay", "Maya Chen moved to Berlin."),
        ("we do enjoy watching birds", "Maya Chen enjoys watching birds."),
        ("i don't enjoy watching birds", "Maya Chen doesn't enjoy watching birds."),
        ("i've been running farther to de-stress, which has been great for my headspace",
         "Maya Chen has been running farther to de-stress."),
        ("i'm a big fan of Ed Sheeran's \"Perfect\".",
         "Maya Chen is a big fan of Ed Sheeran's \"Perfect\"."),
    ],
)  # fmt: skip
def test_a_statement_keeps_no_stress_word_no_remark_on_itself_and_whole_quotes(
    said: str, statement: str
) -> None:
    assert [f.statement for f in facts([("maya", said)])] == [statement]


def test_the_kids_or_the_hubby_of_the_speaker_are_the_speakers_relations() -> None:
    said = "the hubby is a chef. the 2 younger kids love nature. the kids at school loved it"
    assert [(f.key, f.statement) for f in facts([("maya", said)])] == [
        ("relationship:husband:occupation", "Maya Chen's hubby is a chef.")
    ]  # whose "the kids" are is told only once the speaker has named their own
    found = facts([("maya", "my son turned 7 yesterday!"), ("maya", said)])
    assert ("relationship:child:nature", "Maya Chen's 2 younger kids love nature.") in [
        (f.key, f.statement) for f in found
    ]
    show = facts([("tom", "putting together a talent show for the kids. the kids love it")])
    assert [f.statement for f in show] == [
        "Tom Okafor is putting together a talent show for the kids."
    ]


def test_they_is_the_group_of_relations_named_in_the_last_turns_and_only_that() -> None:
    found = facts(
        [
            ("tom", "how are your dogs doing?"),
            ("maya", "my dogs are great. they love running and playing fetch"),
            ("tom", "my cats hate running"),
            ("maya", "they make them toys from boxes"),  # whose: Maya's dogs or Tom's cats?
            ("maya", "my dogs love the parks, they are huge"),  # "they": the parks
        ]
    )
    assert [f.statement for f in found if f.key.startswith("relationship:dog")] == [
        "Maya Chen's dogs love running and playing fetch.",
        "Maya Chen's dogs love the parks.",
    ]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("ur a nurse now, so proud", [("identity:occupation", "Tom Okafor is a nurse now.")]),
        ("u are the best cook btw", []),  # praise, no trade
        ("i got u, ill pick u up at 6", []),  # "Maya Chen got u." was a fact
    ],
)  # fmt: skip
def test_u_and_ur_are_you_and_your_or_youre(said: str, expected: list[tuple[str, str]]) -> None:
    assert [(f.key, f.statement) for f in facts([("tom", "hi"), ("maya", said)])] == expected


@pytest.mark.parametrize(
    ("said", "key"),
    [
        ("my gf is gluten free", "relationship:girlfriend:diet:gluten-free"),
        ("my bf is vegan", "relationship:boyfriend:diet"),
        ("the gf is vegan", "relationship:girlfriend:diet"),
    ],
)
def test_gf_and_bf_are_relations_not_the_speaker(said: str, key: str) -> None:
    assert [(f.owner_id, f.key) for f in facts([("maya", said)])] == [("maya", key)]


@pytest.mark.parametrize(
    ("said", "keys"),
    [
        # the tag asks about the last clause only
        ("had to remind them i'm allergic to penicillin, amox is the same family right?",
         ["constraint:allergy:penicillin"]),
        ("i'm allergic to penicillin right?", []),
        ("i warned them i'm allergic to nuts", ["constraint:allergy:nut"]),
    ],
)  # fmt: skip
def test_what_is_reminded_or_warned_of_is_said_and_a_tag_asks_about_its_clause_only(
    said: str, keys: list[str]
) -> None:
    assert [f.key for f in facts([("maya", said)])] == keys


def test_she_in_a_turn_naming_nobody_is_the_one_person_named_in_the_last_turns() -> None:
    found = facts(
        [
            ("maya", "my cousin is staying with me til the 15th"),
            ("tom", "whats her name"),
            ("maya", "keisha. she's a nurse in Atlanta"),
        ]
    )
    assert [(f.key, f.statement) for f in found] == [
        ("relationship:cousin:occupation", "Maya Chen's cousin is a nurse in Atlanta.")
    ]


def test_she_may_mean_a_fiancee_though_her_role_is_the_fiance() -> None:
    found = facts([("maya", "my fiancee is visiting"), ("maya", "she's a nurse")])
    assert [f.statement for f in found] == ["Maya Chen's fiancee is a nurse."]


@pytest.mark.parametrize(
    "turns",
    [
        [("maya", "my brother is staying with me"), ("maya", "she's a nurse in atlanta")],
        [("maya", "my bro is staying with me"), ("maya", "she's a nurse in atlanta")],
        [("maya", "my brother is visiting"), ("tom", "my sister too"), ("maya", "she's a nurse")],
        [("maya", "my sister is visiting"), ("tom", "ok"), ("tom", "sure"), ("maya", "cool"),
         ("tom", "right"), ("maya", "yes"), ("maya", "she's a nurse")],
    ],
)  # fmt: skip
def test_she_means_nobody_when_the_role_says_otherwise_or_several_or_none_were_named_lately(
    turns: list[tuple[str, str]],
) -> None:
    assert [f.key for f in facts(turns) if "nurse" in f.statement] == []


@pytest.mark.parametrize(
    "said",
    ["you'd be a great counselor!", "you'll be an awesome mom", "i'd be a terrible nurse lol"],
)
def test_what_someone_would_or_will_be_is_no_identity(said: str) -> None:
    assert facts([("tom", "i'm thinking about a new job"), ("maya", said)]) == []


def test_cant_help_but_is_no_constraint_and_a_bare_infinitive_keeps_its_form() -> None:
    found = facts(
        [
            ("tom", "are you free on saturday?"),
            ("maya", "i can't help but smile. i can't help you move on saturday, sorry"),
        ]
    )
    assert [(f.key, f.statement) for f in found] == [
        ("constraint:help", "Maya Chen can't help Tom Okafor move on 13 September 2025.")
    ]


def test_the_clitic_after_a_pronoun_written_as_a_name_is_written_out() -> None:
    said = "my sister is visiting. she's allergic to cats. she's got a new job at the hospital"
    assert [f.statement for f in facts([("maya", said)])] == [
        "Maya Chen's sister is allergic to cats.",
        "Maya Chen's sister has got a new job at the hospital.",
    ]


def test_a_relative_named_in_lowercase_is_the_relative_with_the_name_written_as_a_name() -> None:
    found = facts(
        [("tom", "my sister lena lives in porto. my brother mo works at google. "
                 "my mother tongue is spanish")]
    )  # fmt: skip
    assert sorted((f.key, f.statement) for f in found) == [
        ("relationship:brother:mo", "Tom Okafor's brother is Mo."),
        ("relationship:brother:mo:employer", "Tom Okafor's brother Mo works at Google."),
        ("relationship:sister:lena", "Tom Okafor's sister is Lena."),
        ("relationship:sister:lena:city", "Tom Okafor's sister Lena lives in Porto."),
    ]


@pytest.mark.parametrize(
    ("said", "key", "statement"),
    [
        ("my birthday is on the 3rd of march", "identity:birthday",
         "Tom Okafor's birthday is on 3 March."),
        ("our anniversary is june 5th", "identity:anniversary",
         "Tom Okafor's anniversary is on 5 June."),
        ("i moved to seattle in 2021", "identity:city", "Tom Okafor moved to Seattle in 2021."),
        ("flying to porto the day after tomorrow", "event:2025-09-10:fly-porto",
         "Tom Okafor is flying to Porto on 10 September 2025."),
        # what is set for a day is an event of its owner (a relation's, of a relation)
        ("my interview is on friday", "event:2025-09-12:interview",
         "Tom Okafor's interview is on 12 September 2025."),
        ("my exam is next monday", "event:2025-09-15:exam",
         "Tom Okafor's exam is on 15 September 2025."),
        ("my sister's wedding is on the 20th", "relationship:sister:wedding",
         "Tom Okafor's sister's wedding is on 20 September 2025."),
        ("my mom's birthday is on the 12th", "relationship:mother:birthday",
         "Tom Okafor's mom's birthday is on 12 September."),
        # one's document or agreement running out: an event, and ahead
        ("my passport runs out in november", "event:2025-11:passport-ends",
         "Tom Okafor's passport runs out in November 2025."),
        ("oh and my visa expires on june 3 so i need to renew it", "event:2026-06-03:visa-ends",
         "Tom Okafor's visa expires on 3 June 2026."),
        ("my lease ends in march", "event:2026-03:lease-ends",
         "Tom Okafor's lease ends in March 2026."),
        # where one is until a day: a stay, and ahead
        ("not on leave lol, im at the dev conference in lyon till wednesday",
         "event:2025-09-10:at-conference",
         "Tom Okafor is at the dev conference in lyon till 10 September 2025."),
        ("i'm in porto until sunday", "event:2025-09-14:at-porto",
         "Tom Okafor is in porto until 14 September 2025."),
        # where one is, by a name: as of the day said, a home or a stay alike
        ("physio is good. i'm in shibuya", "experience:in-shibuya", "Tom Okafor is in shibuya."),
    ],
)  # fmt: skip
def test_a_day_a_city_or_an_event_typed_in_chat_is_its_fact(
    said: str, key: str, statement: str
) -> None:
    assert [(f.key, f.statement) for f in facts([("tom", said)])] == [(key, statement)]


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("i'm 34 now", [("identity:age", "Tom Okafor is 34 now.")]),
        ("i don't drink anymore",
         [("constraint:diet:alcohol", "Tom Okafor doesn't drink anymore.")]),
        ("not a fan of cilantro",
         [("preference:cilantro", "Tom Okafor is not a fan of cilantro.")]),
        ("we're 2 hours away", []),
        ("my new manager is called dana", [
            ("relationship:manager", "Tom Okafor's new manager is called Dana.")]),
        ("my cat is named mochi", [("relationship:cat", "Tom Okafor's cat is named Mochi.")]),
        ("sold my civic, got a used rav4", [  # the car let go is the one the new one ends
            ("identity:car", "Tom Okafor got a used rav4."),
        ]),
    ],
)  # fmt: skip
def test_an_age_a_name_given_and_a_car_let_go(said: str, expected: list[tuple[str, str]]) -> None:
    assert [(f.key, f.statement) for f in facts([("tom", said)])] == expected


@pytest.mark.parametrize(
    ("said", "education"),
    [
        ("i got into the masters program at edinburgh!!",
         "Tom Okafor got into the masters program at edinburgh."),
        ("i was admitted to Stanford", "Tom Okafor was admitted to Stanford."),
        ("i got into cooking lately", None),
        ("i got into an argument with maya", None),
    ],
)  # fmt: skip
def test_the_school_or_programme_one_got_into_is_ones_education(
    said: str, education: str | None
) -> None:
    found = [f.statement for f in facts([("tom", said)]) if f.key == "identity:education"]
    assert found == ([education] if education else [])


def test_an_intolerance_is_a_constraint_of_its_own_beside_a_diet() -> None:
    found = facts(
        [("maya", "i'm vegetarian"), ("maya", "my husband is gluten free"),
         ("maya", "im lactose intolerant too")]
    )  # fmt: skip
    assert [(f.key, f.statement) for f in found] == [
        ("constraint:diet", "Maya Chen is vegetarian."),
        ("relationship:husband:diet:gluten-free", "Maya Chen's husband is gluten-free."),
        ("constraint:diet:lactose-intolerant", "Maya Chen is lactose-intolerant."),
    ]


def test_a_thing_moved_to_another_day_is_no_home() -> None:
    found = facts([("tom", "my interview at shopify got moved to friday")])
    assert all(f.key != "identity:city" for f in found)


def test_they_may_mean_the_group_the_other_speaker_asked_about() -> None:
    found = facts([("tom", "how are your dogs doing?"), ("maya", "they love the new park!")])
    assert [(f.key, f.statement) for f in found] == [
        ("relationship:dog:park", "Maya Chen's dogs love the new park.")
    ]


@pytest.mark.parametrize("counted", ["3 of us", "all of us", "both of us", "some of us"])
def test_us_counted_is_a_group_no_name_stands_for(counted: str) -> None:
    found = facts([("maya", f"we're planning porto for october, {counted}")])
    assert all("of Maya" not in f.statement for f in found)
    assert found == []


def test_lower_case_chat_starts_a_sentence_at_a_first_person_after_a_full_stop() -> None:
    found = facts([("tom", "my bad. also i hate flying so i'd rather take the train")])
    assert [f.statement for f in found] == ["Tom Okafor hates flying."]


@pytest.mark.parametrize(
    ("said", "city"),
    [("i've been in Sheffield since June", "Sheffield"),
     ("been in sheffield since june", "Sheffield"),
     ("ive been in lisbon for 3 years", "Lisbon"),
     ("not in leeds anymore btw, been in sheffield since june", "Sheffield"),
     ("left berlin in march. been in lisbon for 3 months now", "Lisbon")],
)  # fmt: skip
def test_having_been_in_a_named_place_for_long_is_living_there(said: str, city: str) -> None:
    found = [f for f in facts([("maya", said)]) if f.key == "identity:city"]
    assert len(found) == 1 and city in found[0].statement


@pytest.mark.parametrize(
    "said",
    ["ive been in hospital since monday", "i've been in the hospital since monday",
     "i've been in love since may", "i've been in paris for a week", "i'm not in leeds anymore",
     "been in berlin since monday for work", "been in berlin since march for work",
     "she's been in porto since nov visiting my aunt",
     "it's been great, been in the office since monday"],
)  # fmt: skip
def test_a_setting_a_state_or_a_short_stay_is_no_home(said: str) -> None:
    assert [f for f in facts([("maya", said)]) if f.key == "identity:city"] == []


@pytest.mark.parametrize(
    "said",
    ["i was in porto until sunday", "the office is closed until monday",
     "i'm in a meeting until 3", "i'm not in lyon until friday", "i'm in luck",
     "i'm in line at the bank", "we're in agreement", "i'm in heaven", "i'm not in paris"],
)  # fmt: skip
def test_a_past_stay_a_thing_closed_an_hour_or_a_common_noun_is_no_stay(said: str) -> None:
    assert [f.key for f in facts([("maya", said)])] == []


@pytest.mark.parametrize("said", ["the movie ends at 9", "my patience ran out on friday"])
def test_what_runs_out_must_be_held_until_a_day(said: str) -> None:
    assert [f for f in facts([("maya", said)]) if f.key.endswith("-ends")] == []


def test_a_name_after_a_lower_case_title_is_the_relation_s_name() -> None:
    found = facts([("maya", "my therapist is dr okonjo, seeing her thursdays at 5")])
    assert [(f.key, f.statement) for f in found] == [
        ("relationship:therapist", "Maya Chen's therapist is Dr Okonjo.")
    ]
    # no title: a word the tagger took for an adjective is a name when no table knows it
    (named,) = facts([("maya", "my therapist is okonjo")])
    assert named.statement == "Maya Chen's therapist is Okonjo."
    assert not [f for f in facts([("maya", "my therapist is lovely")]) if f.key == named.key]


def test_a_pet_named_by_its_breed_is_a_pet() -> None:
    found = facts([("maya", "got a rescue greyhound!! her name is pickle")])
    assert [(f.key, f.statement) for f in found] == [
        ("relationship:dog", "Maya Chen got a rescue greyhound."),
        ("relationship:dog:name", "Maya Chen's greyhound's name is pickle."),
    ]


def test_a_participle_saying_my_after_a_clause_about_something_else_is_the_speakers() -> None:
    found = facts([("tom", "moab was unreal, still finding sand in my boots")])
    assert all(not f.statement.startswith("Moab") for f in found)
    assert [f.statement for f in facts([("tom", "I'll drive, borrowing my dad's van")])] == [
        "Tom Okafor is borrowing Tom Okafor's dad's van."
    ]


def test_a_request_after_a_comma_is_not_part_of_the_fact() -> None:
    said = "going to montreal for a week end of aug, any tips for making the place look lived in"
    found = facts([("tom", said)])
    assert [f.statement for f in found] == [
        "Tom Okafor is going to Montreal for a week end of August 2026."
    ]


def test_a_landlord_named_without_my_is_the_speakers() -> None:
    said = "landlord is a guy called petr, lives in the flat right below me. seems chill"
    found = facts([("tom", said)])
    assert "Tom Okafor's landlord lives in the flat right below Tom Okafor." in [
        f.statement for f in found
    ]


def test_reminder_before_a_first_person_is_a_lead_in() -> None:
    found = facts([("tom", "reminder im vegetarian so no meat in anything")])
    assert [f.statement for f in found] == ["Tom Okafor is vegetarian."]


def test_i_swear_is_no_action() -> None:
    assert facts([("tom", "ok dont judge me. after my work deadline friday i swear")]) == []


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("bc amazon cut my OT at the warehouse", "Amazon cut Tom Okafor's OT at the warehouse."),
        ("for context i make 72k rn at the agency",
         "Tom Okafor makes 72k right now at the agency."),
        ("because im vegan", "Tom Okafor is vegan."),
    ],
)  # fmt: skip
def test_a_reason_or_context_said_first_is_a_lead_in(said: str, statement: str) -> None:
    assert [f.statement for f in facts([("tom", said)])] == [statement]


def test_bc_inside_a_sentence_is_because() -> None:
    said = "i cant spend a ton rn bc amazon cut our OT at the warehouse"
    assert "Amazon cut Tom Okafor's OT at the warehouse." in [
        f.statement for f in facts([("tom", said)])
    ]


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("dr. halvorsen bumped my sertraline up to 100mg",
         "Dr. Halvorsen bumped Tom Okafor's sertraline up to 100mg."),
        ("the kids recital is on june 11, then that weekend we're finally going camping at "
         "lake george",
         "On the weekend of 13-14 June 2026 Tom Okafor is going camping at lake george."),
    ],
)  # fmt: skip
def test_a_name_after_dr_is_capitalised_and_no_then_opens_a_fact(said: str, statement: str) -> None:
    assert statement in [f.statement for f in facts([("tom", said)])]


def test_ms_is_no_title_before_a_lower_case_word() -> None:
    from observations.extract.render import sentence_case

    assert sentence_case("Tom Okafor was diagnosed with ms last year") == (
        "Tom Okafor was diagnosed with ms last year."
    )


@pytest.mark.parametrize(
    "said", ["pls no singing. i'm allergic to attention", "im allergic to mornings"]
)
def test_an_allergy_said_in_jest_is_none(said: str) -> None:
    assert facts([("tom", said)]) == []


def test_a_birthday_that_is_a_weekday_is_its_day() -> None:
    found = facts([("tom", "maya's birthday is friday"), ("maya", "shh")])
    assert [(f.owner_id, f.statement) for f in found] == [
        ("maya", "Maya Chen's birthday is on 12 September.")
    ]


def test_whose_birthday_it_is_said_first_and_a_word_asked_after_it() -> None:
    found = facts(
        [("tom", "oh right sorry. also its maya's birthday friday, cake?"), ("maya", "no")]
    )
    assert [(f.owner_id, f.statement) for f in found] == [
        ("maya", "Maya Chen's birthday is on 12 September.")
    ]


def test_a_question_after_a_comma_is_no_part_of_the_fact() -> None:
    found = facts([("tom", "my salary is 140k plus equity, how much should i put in my 401k")])
    assert [f.statement for f in found] == ["Tom Okafor's salary is 140k plus equity."]


def test_years_ago_this_week_is_that_week_years_back() -> None:
    found = facts([("tom", "anniversary dinner ideas? we got married three years ago this week")])
    assert [f.statement for f in found] == [
        "Tom Okafor got married in the week of 5 September 2022."
    ]


def test_an_adverb_before_a_clauses_mark_goes_with_the_mark() -> None:
    found = facts([("tom", "ever since i joined halvard games the commute is short")])
    assert [f.statement for f in found if "halvard" in f.statement] == [
        "Tom Okafor joined halvard games."
    ]


def test_ones_lead_is_ones_manager_and_a_new_one_takes_the_key() -> None:
    (lead,) = facts([("tom", "priya is my lead now")])
    assert (lead.key, lead.fields["object"]) == ("relationship:manager", "Priya")


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("i'm allergic to shellfish, like properly", "Tom Okafor is allergic to shellfish."),
        ("found the logbook, all good", "Tom Okafor found the logbook."),
        ("i love hiking, swimming, and biking", "Tom Okafor loves hiking, swimming, and biking."),
    ],
)
def test_a_remark_after_the_last_comma_that_names_nothing_is_no_part_of_the_fact(
    said: str, statement: str
) -> None:
    assert [f.statement for f in facts([("tom", said)])] == [statement]


@pytest.mark.parametrize(
    "said", ["we met in an engineering class in college", "we go hiking together every week"]
)
def test_what_we_do_with_one_another_is_no_fact_of_the_speaker_alone(said: str) -> None:
    assert facts([("tom", said)]) == []


@pytest.mark.parametrize(
    ("said", "key", "statement"),
    [
        ("i report to wren akintola now", "relationship:manager",
         "Tom Okafor reports to wren akintola now."),
        ("teodor got moved to the oslo office so i report to wren akintola now",
         "relationship:manager", "Tom Okafor reports to wren akintola now."),
        ("my parents' anniversary dinner is next month on the 3rd, im supposed to book it",
         "relationship:parent:dinner",
         "Tom Okafor's parents' anniversary dinner is on 3 October 2025."),
        ("dentist on the 12th at 3, finally getting that crown done",
         "event:2025-09-12:appointment",
         "Tom Okafor's dentist appointment is on 12 September 2025 at 3."),
        ("I'm Tom, a welder at Hanlon Steel", "identity:employer",
         "Tom Okafor is a welder at Hanlon Steel."),
        ("rehearsal news: spring concert is set for the last saturday of april",
         "event:concert", "Tom Okafor's spring concert is set for 25 April 2026."),
        ("update nobody asked for: sold the mazda 🙃", "identity:car",
         "Tom Okafor sold the mazda."),
        ("update lol. not vegetarian anymore since the checkup", "constraint:diet",
         "Tom Okafor is not vegetarian anymore since the checkup."),
        ("i'm not vegetarian anymore. eating fish again, doc said my iron is super low",
         "experience:eat-fish", "Tom Okafor is eating fish again."),
        ("my sister's getting married in lisbon in june",
         "relationship:sister:relationship-status",
         "Tom Okafor's sister is getting married in lisbon in June 2026."),
        ("pete texted, rent goes up to 1450 a month from may", "identity:rent",
         "Tom Okafor's rent goes up to 1450 a month."),
        ("lol no sam thats jo not me. i'm just lactose intolerant, cheese = bad time",
         "constraint:diet:lactose-intolerant", "Tom Okafor is just lactose-intolerant."),
        ("no!! thats jordan. i love cilantro", "preference:cilantro",
         "Tom Okafor loves cilantro."),  # the tagger's adverb is the object
        ("booked it! doing the kumano kodo route, luggage transfer included",
         "experience:do-route", "Tom Okafor is doing the kumano kodo route."),
        ("my brother's visiting in 10 days so i need to clean the spare room",
         "relationship:brother:visit", "Tom Okafor's brother is visiting on 18 September 2025."),
        ("started yoga on tuesdays, my back is thanking me", "experience:start-yoga",
         "Tom Okafor started yoga on tuesdays."),
        ("got diagnosed with type 2 diabetes last month, need low carb meal ideas",
         "event:2025-08:diagnose-diabete",
         "Tom Okafor got diagnosed with type 2 diabetes in August 2025."),
        ("my brother's a firefighter in abu dhabi", "relationship:brother:occupation",
         "Tom Okafor's brother is a firefighter in abu dhabi."),
        ("doc put me on lisinopril 10mg for blood pressure, any foods i should avoid?",
         "constraint:medication:lisinopril", "Tom Okafor takes lisinopril 10mg."),
        ("also my best friend oskar is moving to tromsø for a postdoc",
         "relationship:friend:oskar:city",
         "Tom Okafor's best friend Oskar is moving to Tromsø for a postdoc."),
    ],
)  # fmt: skip
def test_statements_the_parse_hides_are_read_as_their_grammar_says(
    said: str, key: str, statement: str
) -> None:
    """A clause hung on another verb, two sentences joined by a comma, a thing and its day
    with no verb, and a trade said after one's name are read like any statement."""
    assert (key, statement) in [(f.key, f.statement) for f in facts([("tom", said)])]


@pytest.mark.parametrize(
    "said",
    ["i report to the front desk at 9", "the dinner is on the 3rd, i suppose",
     "allergies: penicillin, due on the 3rd", "i'm a beginner at rock climbing",
     "the dentist on the 12th was awful", "i'm a regular at the gym", "pizza on friday lol"],
)  # fmt: skip
def test_what_only_looks_like_those_statements_is_not_one(said: str) -> None:
    found = facts([("tom", said)])
    assert not [
        f
        for f in found
        if f.key.startswith(("relationship:manager", "event:", "identity:employer"))
    ]


@pytest.mark.parametrize(
    ("said", "day"),
    [
        ("work offsite got scheduled for the last friday of the month", "26 September 2025"),
        ("my interview is the first monday of next month", "6 October 2025"),
    ],
)
def test_a_weekday_of_this_or_next_month_is_that_day(said: str, day: str) -> None:
    assert [f.statement for f in facts([("tom", said)]) if day in f.statement]


@pytest.mark.parametrize(
    "said",
    ["yes but not today lol", "Yesterday, me and my neighbour ran a class", "jess moved out"],
)
def test_no_thing_is_dated_by_a_date_or_a_name_alone(said: str) -> None:
    assert not [
        f.statement for f in facts([("tom", said)]) if f.statement.startswith("Tom Okafor's")
    ]


def test_a_third_persons_pronoun_never_means_the_speaker() -> None:
    found = facts(
        [
            ("maya", "first tom's mum in cork, then my parents in valencia"),
            ("tom", "she's in kinsale now babe, she sold the cork house last autumn"),
        ]
    )
    assert not [f.statement for f in found if f.statement.startswith("Tom Okafor ")]


def test_a_relations_name_with_my_hung_on_it_is_the_relation() -> None:
    keys = [f.key for f in facts([("tom", "my cousin rosa just moved to leeds")])]
    assert "relationship:cousin:rosa:city" in keys


def test_a_dated_move_said_with_a_particle_is_an_event_and_an_undated_one_no_fact() -> None:
    (moved,) = facts([("maya", "finally moved out last weekend")])
    assert moved.key.startswith("event:2025-09-06/2025-09-07:move-out")
    assert moved.statement == "Maya Chen moved out on the weekend of 6-7 September 2025."
    vague = facts([("maya", "I freaked out")])  # said of nothing: no fact to stand on
    assert all(f.confidence < DEFAULT_MIN_CONFIDENCE for f in vague)


def test_a_dose_given_by_a_named_doctor_is_the_patients() -> None:
    found = facts([("tom", "saw dr okafor today. she started me on sertraline 50mg, mornings")])
    assert [(f.owner_id, f.key) for f in found] == [("tom", "constraint:medication:sertraline")]
    assert found[0].statement == "Tom Okafor takes sertraline 50mg."


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        pytest.param("booked my driving test!! its in 3 weeks",
                     "Maya Chen's driving test is on 29 September 2025.", id="its-a-day"),
        pytest.param("need a dress for my sister's wedding, it's next month on the 14th",
                     "Maya Chen's sister's wedding is on 14 October 2025.", id="its-a-day-comma"),
        pytest.param("flew back from lisbon 5 days ago and my body still thinks its 8am",
                     "Maya Chen flew back from lisbon on 3 September 2025.", id="journey-back"),
        pytest.param("my mom is driving up from fresno on the 2nd to help",
                     "Maya Chen's mom is driving up from fresno on 2 October 2025.",
                     id="journey-up"),
        pytest.param("also for the lunch order, im vegetarian, pls no chicken wraps for me",
                     "Maya Chen is vegetarian.", id="lead-in-and-request-cut"),
        pytest.param("i start at mercado libre on monday",
                     "Maya Chen starts at mercado libre on 15 September 2025.", id="start-ahead"),
    ],
)  # fmt: skip
def test_a_sentence_says_its_statement(said: str, statement: str) -> None:
    """ "it's" before a day names the owned thing said last; a journey behind "back" or
    "up" is dated; lead-ins of purpose and requests are cut; a start is ahead."""
    assert statement in [f.statement for f in facts([("maya", said)])]


def test_its_before_a_day_with_no_owned_thing_before_it_is_left() -> None:
    found = facts([("maya", "i'm literally in this chat. it's the 13th of june")])
    assert not any("chat" in f.statement for f in found)


@pytest.mark.parametrize(
    "said",
    [
        "as long as she doesnt bring walnuts",  # a condition
        "gonna visit a rescue in june maybe",  # a doubt anywhere in the clause
        "I'll probably move to leeds",
        "my roommate situation ends sept 1",  # no relative named "situation"
        "i'll be on paternity leave from late may",  # a time from which, no origin
        "drove out to her place sunday, mom's good",  # "good" is no car
    ],
)
def test_what_is_not_said_as_so_or_misread_makes_no_belief(said: str) -> None:
    believed = [f for f in facts([("maya", said)]) if f.confidence >= DEFAULT_MIN_CONFIDENCE]
    assert [f.statement for f in believed if f.kind != "event"] == []


@pytest.mark.parametrize(
    ("said", "statement", "believed"),
    [
        ("now on bupropion 150 XL. taking it at 8", "Maya Chen is now on bupropion 150 XL.", True),
        ("I'm on ozempic now", "Maya Chen is on ozempic now.", True),  # a word no table knows
        ("I'm on a diet", "Maya Chen is on a diet.", False),  # nothing specific
        ("I'm on 71,500 base", "Maya Chen is on 71,500 base.", False),  # a value that changes
    ],
)
def test_what_one_is_on_is_believed_when_it_names_something_specific(
    said: str, statement: str, believed: bool
) -> None:
    [found] = [f for f in facts([("maya", said)]) if f.statement == statement]
    assert (found.confidence >= DEFAULT_MIN_CONFIDENCE) is believed


@pytest.mark.parametrize("said", ["so. not with dana anymore", "i'm no longer with Dana"])
def test_being_with_someone_no_longer_ends_the_partner(said: str) -> None:
    [ended] = [f for f in facts([("maya", said)]) if f.key == "relationship:partner"]
    assert ended.fields["polarity"] == "negative" and "dana" in ended.statement.lower()


@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("NEW GIG at brightline starting monday!!!", "Maya Chen has a new job at Brightline."),
        ("my new job at Stripe is great", "Maya Chen has a new job at Stripe."),
    ],
)
def test_a_new_job_named_in_passing_is_the_speakers_employer(said: str, statement: str) -> None:
    found = [f for f in facts([("maya", said)]) if f.key == "identity:employer"]
    assert [f.statement for f in found] == [statement]
