"""Statement checks: each fails on a statement with its defect and passes a clean one, and
the gate drops user facts that fail one (and nothing else)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from observations.extract.base import EPISODIC, Extracted, SessionEvent, SessionInput
from observations.extract.statement_checks import (
    CHECKS,
    Statement,
    failing_facts,
    statement_failures,
)
from observations.gates import apply_gates

NAMES = ("Maya Chen", "Tom Okafor")
T0 = datetime(2025, 9, 8, 9, 0, tzinfo=UTC)

CASES = [  # check, a statement that fails it, one that passes it
    ("first_or_second_person", Statement("I love my sister."), Statement("Maya Chen loves tea.")),
    (
        "doubled_name",
        Statement("Maya Chen Chen flies to Berlin.", names=NAMES),
        Statement("Maya Chen flies to Berlin.", names=NAMES),
    ),
    (
        "doubled_name",
        Statement("Maya Chen's Maya Chen knee hurts.", names=NAMES),
        Statement("Maya Chen's knee hurts.", names=NAMES),
    ),
    (
        "doubled_name",
        Statement("Maya Chen is Maya Chen, nurse at St. Mary's.", names=NAMES),
        Statement("Maya Chen is a nurse at St. Mary's.", names=NAMES),
    ),
    ("agreement", Statement("Maya Chen fly to Berlin."), Statement("Maya Chen flies to Berlin.")),
    ("agreement", Statement("Tom Okafor are vegetarian."), Statement("Tom Okafor is vegetarian.")),
    (
        "agreement",
        Statement("Tom's partner and Tom often plays chess."),
        Statement("Tom's partner and Tom often play chess."),
    ),
    ("agreement", Statement("Ana and her sister was there."), Statement("Salt and pepper is all.")),
    ("agreement", Statement("Ana's dogs loves walks."), Statement("ines is allergic to nuts.")),
    ("agreement", Statement("Ana's dogs loves walks."), Statement("Parents worry about Ana.")),
    ("agreement", Statement("Toby become buddies."), Statement("Toby became a buddy.")),
    (
        "first_or_second_person",
        Statement("Tom squeezes in time for me."),
        Statement("Tom squeezes in some me-time."),
    ),
    (
        "leading_filler",
        Statement("By the way, Maya Chen loves jazz."),
        Statement("Maya Chen loves jazz."),
    ),
    ("leading_filler", Statement("Actually Maya Chen runs."), Statement("Maya Chen runs daily.")),
    (
        "trailing_exclamation",
        Statement("Maya Chen loves jazz!"),
        Statement("Maya Chen loves jazz."),
    ),
    ("trailing_exclamation", Statement("Maya Chen ran a marathon lol."), Statement("Maya ran.")),
    (
        "unresolved_reference",
        Statement("Maya Chen dreams of visiting them."),
        Statement("Maya Chen dreams of visiting Japan."),
    ),
    (
        "unresolved_reference",
        Statement("Maya Chen met that fellow fan."),
        Statement("Maya Chen met a fellow fan at the concert."),
    ),
    (
        "unresolved_reference",
        Statement("Something scared Maya Chen."),
        Statement("A spider scared Maya Chen."),
    ),
    (
        "cut_value",
        Statement("Maya Chen works as a pediatric nurse at St. Mary's.", "pediatric nurse at St"),
        Statement(
            "Maya Chen works as a pediatric nurse at St. Mary's.", "pediatric nurse at St. Mary's"
        ),
    ),
    (
        "cut_value",
        Statement("Maya Chen ran the half marathon in 1:48.", "1"),
        Statement("Maya Chen ran the half marathon in 1:48.", "1:48"),
    ),
    ("missing_object", Statement("Andrew tried."), Statement("Andrew tried many wines.")),
    ("missing_object", Statement("Waffles has."), Statement("Waffles has a vet visit.")),
    (
        "stray_mark",
        Statement("As a chem teacher Lucía gets the ' yr."),
        Statement("Lucía's favourite song is 'Yellow'."),
    ),
    ("stray_mark", Statement('Lucía loves "Yellow.'), Statement('Lucía loves "Yellow".')),
    (
        "missing_object",
        Statement("Tom Okafor bought at the market."),
        Statement("Tom Okafor bought apples at the market."),
    ),
    (
        "relative_date",
        Statement("Maya Chen's dog has a checkup the 15th."),
        Statement("Maya Chen's dog has a checkup on 15 October 2025."),
    ),
    (
        "relative_date",
        Statement("Tom Okafor has his shots thursday."),
        Statement("Tom Okafor's boss wants updates every thursday."),
    ),
    (
        "relative_date",
        Statement("Maya Chen is flying to Accra end of the month."),
        Statement("Maya Chen is flying to Accra on 30 September 2025."),
    ),
    (
        "relative_date",
        Statement("Maya Chen went to Lisbon last year."),
        Statement("Maya Chen's wedding is on the 14th of June 2025."),
    ),
    (
        "self_object",
        Statement("Chin chin brought chin chin."),
        Statement("Marcus ran Marcus's first half marathon."),
    ),
]


@pytest.mark.parametrize(
    "statement",
    [
        "Maya Chen loves to paint.",  # a clause for an object
        "Maya Chen loves painting landscapes.",
        "Tom Okafor wants Maya Chen to come.",
        "Maya Chen was given a puppy.",  # passive
        "Maya Chen runs every morning.",  # no object needed
        "Maya Chen moved to Lisbon.",
        "Tom Okafor got married in 2019.",
        "Maya Chen likes what Tom Okafor cooks.",
        "Tom Okafor gave up.",  # a phrasal verb
        "Maya Chen got away for a hike.",  # "get" goes without an object too often
    ],
)
def test_a_verb_with_its_object_or_without_need_of_one_passes(statement: str) -> None:
    [failed] = statement_failures([Statement(statement)])
    assert "missing_object" not in failed, failed


@pytest.mark.parametrize(("check", "bad", "good"), CASES)
def test_each_check_fails_its_defect_and_passes_a_clean_statement(
    check: str, bad: Statement, good: Statement
) -> None:
    failed, passed = statement_failures([bad, good])
    assert check in failed, (bad, failed)
    assert passed == (), (good, passed)


def test_every_check_has_a_case() -> None:
    assert {check for check, _, _ in CASES} == set(CHECKS)


def _fact(statement: str, kind: str = "preference", value: str | None = None) -> Extracted:
    fields = {"object": value} if value else {}
    return Extracted(
        kind, f"{kind}:{statement}", "user", "maya", statement, 0.9, 0.6, (1,), T0, fields
    )


SESSION = SessionInput(
    "t",
    1,
    "dm",
    T0,
    T0,
    [SessionEvent(1, 0, "user", "maya", "Maya Chen", "By the way I fly to Berlin lol! them", T0)],
)


def test_the_gate_drops_facts_that_fail_a_check_and_keeps_episodic_records() -> None:
    bad = _fact("Maya Chen fly to Berlin.")
    good = _fact("Maya Chen flies to Berlin.", kind="experience")
    said = _fact("On 8 September 2025, Maya Chen said: Maya Chen flies to Berlin lol!", EPISODIC)
    result = apply_gates([bad, good, said], SESSION, max_items=None)
    assert result.items == (good, said)
    assert result.dropped["bad_statement"] == 1


def test_failing_facts_names_the_positions_of_facts_only() -> None:
    items = [_fact("Maya Chen loves jazz!"), _fact("Maya Chen loves jazz!", EPISODIC)]
    assert failing_facts(items, NAMES) == {0}
