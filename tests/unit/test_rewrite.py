"""Episodic restatements: pronouns become names, dates become absolute."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from observations.extract.rewrite import PersonRewriter, render, third_person

ANCHOR = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "rewritten"),
    [
        ("I love my sister.", "Caroline loves Caroline's sister."),
        ("I'm tired and I've had enough.", "Caroline is tired and Caroline has had enough."),
        ("I really enjoy it, I guess.", "Caroline really enjoys it, Caroline guesses."),
        ("I don't eat meat.", "Caroline doesn't eat meat."),
        ("I'd love to go. I'd been there.", "Caroline would love to go. Caroline had been there."),
        ("Did I tell you? Do you know?", "Did Caroline tell Melanie? Does Melanie know?"),
        ("Are you coming? Am I late?", "Is Melanie coming? Is Caroline late?"),
        ("I know you love jazz.", "Caroline knows Melanie loves jazz."),
        ("Thank you! Your dog is cute.", "Thank Melanie! Melanie's dog is cute."),
        (
            "We adopted a puppy for our kids.",
            "Caroline and others adopted a puppy for Caroline's kids.",
        ),
        (
            "You're the best and you've helped me.",
            "Melanie is the best and Melanie has helped Caroline.",
        ),
        ("I try, I watch, I fix.", "Caroline tries, Caroline watches, Caroline fixes."),
        ("I wanna help.", "Caroline wants to help."),
        ("When I fly, I rely on tea.", "When Caroline flies, Caroline relies on tea."),
    ],
)
def test_rewrites_first_and_second_person_into_names(said: str, rewritten: str) -> None:
    assert PersonRewriter("Caroline", "Melanie").rewrite(said) == rewritten


def test_second_person_stays_when_nobody_is_addressed() -> None:
    assert PersonRewriter("Caroline", None).rewrite("I told you.") == "Caroline told you."


def test_render_rewrites_dates_and_pronouns_together() -> None:
    text, dates = render("Yesterday I met my friend.", "Caroline", "Melanie", ANCHOR)
    assert text == "On 7 May 2023 Caroline met Caroline's friend."
    assert [d.iso for d in dates] == ["2023-05-07"]


@pytest.mark.parametrize(
    ("verb", "third"),
    [
        ("love", "loves"),
        ("try", "tries"),
        ("watch", "watches"),
        ("go", "goes"),
        ("play", "plays"),
        ("went", "went"),
        ("can", "can"),
        ("have", "has"),
        ("miss", "misses"),
        ("need", "needs"),
        ("fly", "flies"),
        ("apply", "applies"),
        ("really", "really"),
    ],
)
def test_third_person_of_base_verbs(verb: str, third: str) -> None:
    assert third_person(verb) == third
