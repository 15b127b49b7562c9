"""The rule table, row by row: every example of a row gives a fact by that row, through
the whole extractor, and no counter-example does; a failure names the row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from observations.extract.base import FACT_KINDS, Extracted, SessionEvent, SessionInput
from observations.extract.heuristic import HeuristicExtractor
from observations.extract.rule_table import ROWS, Row
from observations.extract.statement_checks import of_item, statement_failures
from observations.gates import apply_gates

SAID = datetime(2025, 3, 4, 10, 0, tzinfo=UTC)


def facts(text: str) -> list[Extracted]:
    event = SessionEvent(1, 0, "user", "ines", "Ines Duarte", text, SAID)
    session = SessionInput("t", 1, "chat", SAID, SAID, [event])
    kept = apply_gates(HeuristicExtractor().extract(session), session).items
    return [i for i in kept if i.kind in FACT_KINDS]


def _cases(field: str) -> list[tuple[Row, str]]:
    return [(row, said) for row in ROWS for said in getattr(row, field)]


def _id(case: tuple[Row, str]) -> str:
    return f"{case[0].name}: {case[1]}"


EXAMPLES, COUNTER_EXAMPLES = _cases("examples"), _cases("counter_examples")


@pytest.mark.parametrize("case", EXAMPLES, ids=map(_id, EXAMPLES))
def test_each_example_of_a_row_gives_its_fact(case: tuple[Row, str]) -> None:
    row, said = case
    found = [f for f in facts(said) if f.fields.get("rule") == row.name]
    assert found, f"row {row.name!r} gave nothing for {said!r}: {[f.key for f in facts(said)]}"
    (fact,) = found
    assert fact.kind == row.kind and fact.owner_id == "ines"
    assert fact.key.startswith(f"{row.kind}:{row.attribute.split('{')[0]}")
    assert fact.statement.startswith("Ines Duarte")
    assert str(fact.fields["object"]) in fact.statement
    assert not next(iter(statement_failures([of_item(fact, ("Ines Duarte",))])))


@pytest.mark.parametrize("case", COUNTER_EXAMPLES, ids=map(_id, COUNTER_EXAMPLES))
def test_no_counter_example_of_a_row_gives_its_fact(case: tuple[Row, str]) -> None:
    row, said = case
    assert not [f for f in facts(said) if f.fields.get("rule") == row.name], row.name


def test_every_row_has_examples_and_counter_examples_and_a_name_of_its_own() -> None:
    assert len({row.name for row in ROWS}) == len(ROWS)
    assert all(row.examples and row.counter_examples for row in ROWS)


def _session_facts(lines: list[str]) -> list[Extracted]:
    events = [
        SessionEvent(i + 1, i, "user", "ines", "Ines Duarte", text, SAID)
        for i, text in enumerate(lines)
    ]
    session = SessionInput("t", 1, "chat", SAID, SAID, events)
    kept = apply_gates(HeuristicExtractor().extract(session), session).items
    return [i for i in kept if i.kind in FACT_KINDS]


def test_a_bare_value_puts_right_the_value_of_its_type_just_said() -> None:
    (rent,) = _session_facts(
        ["my rent is 740 a month", "wait no sorry its 790 now, they raised it"]
    )
    assert (rent.statement, rent.fields["object"]) == (
        "Ines Duarte's rent is 790 a month.",
        "790 a month",
    )
    assert rent.source_event_ids == (1, 2)
    (dose,) = _session_facts(["i'm on sitagliptin 100mg", "sorry it's 50mg"])
    assert dose.fields["object"] == "50mg"


def test_a_bare_value_of_no_fact_said_just_before_corrects_nothing() -> None:
    (rent,) = _session_facts(["my rent is 740 a month", "it's 3 stops from work"])
    assert rent.fields["object"] == "740 a month"
