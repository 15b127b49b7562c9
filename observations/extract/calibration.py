"""Confidence calibrated on labelled facts: how often a fact of a kind, at the confidence
its rule gives, was right when read against its conversation.

Each row counts the heuristic extractor's facts of one kind at one confidence (after the
date's and the third party's adjustments) in a labelled sample: every fact entry the
extractor made from four probe files written without reading it and from one LoCoMo
conversation outside the rules' examples (320 facts), each labelled right or wrong by a
reader who saw the fact, the turn it rests on and the whole session (true, about the
person it is filed under, one readable self-contained sentence, its date the right one,
not corrected later). A fact's calibrated confidence is the share right in its row with
the rule's own confidence as a prior worth :data:`PRIOR_WEIGHT` facts; a row of fewer
than :data:`MIN_LABELLED` facts says too little and leaves the confidence as it is.

The gates' threshold (0.7) then believes only what its row has shown to be right at
least that often: a relation's action when the relation was found by a pronoun or a bare
name ("he's paying for dinner", "jonas is reading over my shoulder": 0.65 after the
extractor's own discount, 2 of 13 right) and a plan or wish at 0.75 (9 of 16) fall below it and stay
as the message's record, while one said as the speaker's ("my dad had his knee surgery":
8 of 10) stays believed. The figures on a sample labelled after the table was
fitted are in docs/probes.md.
"""

from __future__ import annotations

from dataclasses import replace

from observations.extract.base import Extracted

PRIOR_WEIGHT = 4
MIN_LABELLED = 5
# (kind, confidence given) → (right, labelled)
LABELLED: dict[tuple[str, float], tuple[int, int]] = {
    ("constraint", 0.7): (0, 2),
    ("constraint", 0.75): (1, 2),
    ("constraint", 0.8): (7, 9),
    ("constraint", 0.85): (3, 4),
    ("constraint", 0.9): (2, 3),
    ("event", 0.7): (32, 36),
    ("event", 0.8): (4, 5),
    ("experience", 0.7): (102, 138),
    ("goal", 0.7): (2, 4),
    ("goal", 0.75): (9, 16),
    ("goal", 0.85): (3, 3),
    ("identity", 0.7): (1, 1),
    ("identity", 0.75): (0, 2),
    ("identity", 0.8): (15, 19),
    ("identity", 0.85): (3, 3),
    ("preference", 0.7): (0, 1),
    ("preference", 0.75): (13, 15),
    ("relationship", 0.65): (2, 13),
    ("relationship", 0.7): (8, 10),
    ("relationship", 0.75): (7, 9),
    ("relationship", 0.8): (16, 19),
    ("relationship", 0.85): (2, 3),
    ("relationship", 0.9): (2, 2),
    ("skill", 0.75): (0, 1),
}


def calibrated_confidence(kind: str, confidence: float) -> float:
    """The share right of the row of ``kind`` at ``confidence``, the confidence itself a
    prior worth :data:`PRIOR_WEIGHT` labelled facts."""
    right, labelled = LABELLED.get((kind, round(confidence, 2)), (0, 0))
    if labelled < MIN_LABELLED:
        return confidence
    return round((right + PRIOR_WEIGHT * confidence) / (labelled + PRIOR_WEIGHT), 2)


def calibrated(item: Extracted) -> Extracted:
    """The fact with its calibrated confidence."""
    return replace(item, confidence=calibrated_confidence(item.kind, item.confidence))
