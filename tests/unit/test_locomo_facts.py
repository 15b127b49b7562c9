"""Fact recall and the precision proxy against reference observations: a reference is
covered by a fact of its speaker, resting on one of its turns, that says the same thing."""

from __future__ import annotations

from observations.embed import HashEmbedder
from ops.eval.locomo_data import Reference
from ops.eval.locomo_facts import Fact, fact_figures

PUPPY = "Ana adopted a puppy named Rex."
POTTERY = "Ben started a pottery class."


def test_a_reference_is_covered_by_its_speakers_fact_from_its_turn_saying_the_same() -> None:
    refs = [Reference(PUPPY, "ana", ("D1:1",)), Reference(POTTERY, "ben", ("D1:2",))]
    facts = [Fact(PUPPY, "ana", ("D1:1",)), Fact("Ana likes tea.", "ana", ("D1:3",))]
    figures = fact_figures(refs, facts, HashEmbedder())
    assert (figures.references, figures.covered, figures.facts, figures.matching) == (2, 1, 2, 1)
    assert figures.recall == 0.5 and figures.precision == 0.5


def test_the_same_words_of_another_speaker_or_from_another_turn_cover_nothing() -> None:
    refs = [Reference(PUPPY, "ana", ("D1:1",))]
    other_owner = Fact(PUPPY, "ben", ("D1:1",))
    other_turn = Fact(PUPPY, "ana", ("D1:4",))
    assert fact_figures(refs, [other_owner, other_turn], HashEmbedder()).covered == 0


def test_figures_add_up_and_nothing_to_compare_is_zero() -> None:
    empty = fact_figures([], [Fact(PUPPY, "ana", ("D1:1",))], HashEmbedder())
    assert (empty.references, empty.facts, empty.recall, empty.precision) == (0, 1, 0.0, 0.0)
    both = empty + fact_figures([Reference(PUPPY, "ana", ("D1:1",))], [], HashEmbedder())
    assert (both.references, both.facts, both.covered) == (1, 1, 0)
