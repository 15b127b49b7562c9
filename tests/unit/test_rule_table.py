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
