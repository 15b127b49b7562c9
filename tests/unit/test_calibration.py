"""Calibrated confidence: each kind at each rule confidence moves to its labelled row's share
right, the rule's confidence a prior; rows of few facts leave it."""

from __future__ import annotations

import pytest

from observations.extract.calibration import (
    LABELLED,
    MIN_LABELLED,
    calibrated_confidence,
)
from observations.gates import DEFAULT_MIN_CONFIDENCE
from tests.unit.test_atoms import facts


@pytest.mark.parametrize(("kind", "given"), sorted(LABELLED))
def test_a_row_moves_the_confidence_toward_its_share_right(kind: str, given: float) -> None:
    right, labelled = LABELLED[(kind, given)]
    found = calibrated_confidence(kind, given)
    if labelled < MIN_LABELLED:
        assert found == given
    else:
        share = right / labelled
        assert min(share, given) - 0.01 <= found <= max(share, given) + 0.01


@pytest.mark.parametrize(
    ("kind", "given", "expected"),
    [("relationship", 0.65, 0.27), ("relationship", 0.7, 0.77), ("goal", 0.75, 0.6),
     ("event", 0.7, 0.87),
     ("experience", 0.7, 0.74), ("preference", 0.75, 0.84)],
)  # fmt: skip
def test_rows_give_their_calibrated_confidence(kind: str, given: float, expected: float) -> None:
    assert calibrated_confidence(kind, given) == expected


def test_a_confidence_no_row_labels_is_left() -> None:
    assert calibrated_confidence("skill", 0.9) == 0.9


def test_rows_shown_wrong_more_often_than_right_are_not_believed() -> None:
    assert calibrated_confidence("relationship", 0.65) < DEFAULT_MIN_CONFIDENCE
    assert calibrated_confidence("goal", 0.75) < DEFAULT_MIN_CONFIDENCE
    assert calibrated_confidence("experience", 0.7) >= DEFAULT_MIN_CONFIDENCE


def test_the_extractor_gives_calibrated_confidences() -> None:
    [sister] = facts([("maya", "my sister flew back to karachi last friday")])
    assert sister.kind == "relationship" and sister.confidence >= DEFAULT_MIN_CONFIDENCE
    [dad] = facts([("maya", "dad flew back to karachi last friday")])  # kin without "my"
    assert dad.kind == "relationship" and dad.confidence >= DEFAULT_MIN_CONFIDENCE
    [him] = facts([("maya", "my brother is great. he flew back to karachi last friday")])
    assert him.kind == "relationship" and him.confidence < DEFAULT_MIN_CONFIDENCE
    [diet] = facts([("tom", "I'm vegetarian")])
    assert diet.confidence == calibrated_confidence("constraint", 0.85)
