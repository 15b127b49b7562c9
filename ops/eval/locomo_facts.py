"""Fact recall and a precision proxy of the believed facts, against LoCoMo's reference
observations (pure, given an embedder).

A reference observation is a sentence the benchmark's authors derived from a turn ("Caroline
attended an LGBTQ support group recently…", D1:3), filed under the speaker it is about. A
reference is **covered** when one believed fact entry of that speaker rests on one of its
turns (its provenance names it) and says the same thing: the cosine of the two sentences,
embedded plainly with the local embedder, is at least :data:`SAME_THING`. **Fact recall** is
the share of references covered. The **precision proxy** is the share of believed facts that
cover some reference by the same rule: a fact no reference of its speaker and turn matches
is either something the references left out or a wrong or badly worded belief.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from observations.embed import Embedder
from ops.eval.locomo_data import Reference

SAME_THING = 0.6  # cosine of two sentences saying the same thing (all-MiniLM-L6-v2)


@dataclass(frozen=True, slots=True)
class Fact:
    statement: str
    owner: str
    external_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FactFigures:
    references: int = 0
    covered: int = 0  # references some believed fact covers
    facts: int = 0  # believed facts
    matching: int = 0  # believed facts that cover some reference

    @property
    def recall(self) -> float:
        return self.covered / max(self.references, 1)

    @property
    def precision(self) -> float:
        return self.matching / max(self.facts, 1)

    def __add__(self, other: FactFigures) -> FactFigures:
        return FactFigures(
            self.references + other.references,
            self.covered + other.covered,
            self.facts + other.facts,
            self.matching + other.matching,
        )


def fact_figures(
    references: Sequence[Reference], facts: Sequence[Fact], embedder: Embedder
) -> FactFigures:
    """How many references the facts cover, and how many facts cover one."""
    if not references or not facts:
        return FactFigures(len(references), 0, len(facts), 0)
    vectors = _unit(embedder.embed([r.text for r in references] + [f.statement for f in facts]))
    similar = vectors[: len(references)] @ vectors[len(references) :].T
    covers = np.zeros(similar.shape, dtype=bool)
    for i, r in enumerate(references):
        turns = set(r.dia_ids)
        for j, f in enumerate(facts):
            covers[i, j] = f.owner == r.speaker and not turns.isdisjoint(f.external_ids)
    covers &= similar >= SAME_THING
    return FactFigures(
        len(references), int(covers.any(axis=1).sum()), len(facts), int(covers.any(axis=0).sum())
    )


def _unit(matrix: np.ndarray) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float32)
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
