"""Chat's left-out first-person subject is put back before a sentence is read."""

from __future__ import annotations

import pytest

from observations.extract.analysis import analyse
from observations.extract.ellipsis import restored, unpossessed


@pytest.mark.parametrize(
    ("said", "read"),
    [
        (
            "Went to the park with the kids yesterday!",
            "I went to the park with the kids yesterday!",
        ),
        ("Researching adoption agencies", "I'm researching adoption agencies"),
        ("Been running longer lately", "I've been running longer lately"),
        ("Gonna start a pottery class", "I'm gonna start a pottery class"),
        ("Just got some new shoes", "I just got some new shoes"),
        ("Excited for the future!", "I'm excited for the future!"),
        ("pescatarian actually!", "I'm pescatarian actually!"),
        # a past form tagged as a base form at the start
        ("Booked the dentist for monday finally", "I booked the dentist for monday finally"),
        ("Book me a train please.", None),  # a request keeps its base form
        ("Need a haircut.", None),  # a base form in -eed
        ("Running is my therapy.", None),  # the -ing word is the subject
        ("Been a long road.", None),  # "it has been"
        ("Been a few days since we last talked.", None),
        ("Not a fan of cilantro at all", "I'm not a fan of cilantro at all"),
        ("not into horror movies", "I'm not into horror movies"),
        ("Been a while.", None),
        ("Reminded me of my mom.", None),  # "it reminded me", never "I reminded me"
        ("Made me cry lol", None),
        ("Sounds great!", None),
        ("Did you go?", None),
        ("I went home.", None),
        # each sentence of a message on its own: the first need not be the one
        ("cycling now. got a used bike", "I'm cycling now. I got a used bike"),
        ("mutual-ish. moved out last weekend", "mutual-ish. I moved out last weekend"),
        ("I went home. Made dinner after", "I went home. I made dinner after"),
    ],
)
def test_a_sentence_without_its_subject_gets_the_speakers_back(said: str, read: str | None) -> None:
    (parsed,) = analyse([said])
    assert restored(parsed) == read


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("cleo's allergic to peanuts", "cleo is allergic to peanuts"),
        ("Cleo's so excited for the trip", "Cleo is so excited for the trip"),
        ("cleo's dog is cute", None),  # a verb: the possessive stands
        ("cleo's new flat", None),
        ("rent's 860 here but honestly worth it", "rent is 860 here but honestly worth it"),
        ("the team's 3 wins this season were great", None),  # the number counts the wins
    ],
)
def test_a_possessive_s_in_a_sentence_with_no_verb_is_read_as_is(
    said: str, read: str | None
) -> None:
    (parsed,) = analyse([said])
    assert unpossessed(parsed) == read


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("also on doxycycline for 10 days", "I'm also on doxycycline for 10 days"),
        ("now on bupropion 150 XL", "I'm now on bupropion 150 XL"),
        ("on my way", "I'm on my way"),
        ("on friday we fly", None),  # a day, with a clause of its own after it
    ],
)
def test_a_sentence_opening_with_what_one_is_on_is_about_the_speaker(
    said: str, read: str | None
) -> None:
    (parsed,) = analyse([said])
    assert restored(parsed) == read
