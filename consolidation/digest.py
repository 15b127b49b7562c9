"""Digests: an owner's current facts gathered by topic, one entry per topic.

A question like "what does Melanie do with her family?" or "which countries has Deborah
been to?" is answered by facts said in many sessions, each worded its own way; ranked one
by one, a few of them reach the top ten. A digest holds them together: one entry whose
statement is its facts' statements in time order, whose provenance is the union of
theirs, and which is linked to each of them (``collects``).

**Topics.** Among an owner's active facts (the eight fact kinds) with a vector of the read
model — the latest ``max_facts`` of them by event time — two facts are near when the
cosine of their vectors, less the mean of the owner's vectors, is at least ``threshold``.
Every stored vector embeds its owner's name and the entry's date and kind beside the
statement (``observations.embed.contextualize``), and every statement names its owner:
what all of an owner's vectors share is that, and taken off, what is left is what each
fact is about (uncentred, facts of one session and one kind gather; centred, the
hikes, the pottery, the adoption). The fact with the most near facts
(then the lowest id) seeds a topic: it takes its nearest facts not yet in a topic, itself
first, up to ``size``; a topic needs ``min_facts``. Then it adds up to ``overlap`` near
facts already in other topics, the nearest first (a fact can belong to two topics: camping
with the family is about camping and about the family). The next free seed follows. The
plan depends on the facts alone, not on the order they come in.

**Keeping digests true.** A digest whose facts are exactly a planned topic stays as it is;
the others are archived, and the missing topics written. A topic whose digest someone
deleted is not written again. When a collected fact stops being active or is rewritten,
the database archives its digests at once (a trigger, see migration 0006), so a digest
never shows a superseded value; the next run collects the owner's facts again.

Nothing here does I/O; :mod:`consolidation.digest_job` reads and writes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from consolidation.model import EntryState, union_provenance
from observations.entry import ACTIVE, DELETED, FACT_KINDS

FactIds = tuple[int, ...]  # a topic: its facts' ids, ascending


@dataclass(frozen=True, slots=True)
class DigestPolicy:
    threshold: float = 0.1  # cosine of two facts' centred vectors for them to share a topic
    size: int = 10  # facts a topic takes from those in no topic yet
    overlap: int = 3  # facts of other topics a digest adds, the nearest first
    min_facts: int = 3  # fewer facts make no digest
    max_facts: int = 400  # an owner's latest facts considered (the similarities are n²)


@dataclass(frozen=True, slots=True)
class DigestDraft:
    """A digest to write: its owner, its facts (in time order) and what it says."""

    owner_type: str
    owner_id: str
    facts: tuple[EntryState, ...]

    @property
    def owner(self) -> tuple[str, str]:
        return (self.owner_type, self.owner_id)

    @property
    def ids(self) -> FactIds:
        return tuple(sorted(f.id for f in self.facts))

    @property
    def statement(self) -> str:
        return " ".join(_sentence(f.statement) for f in self.facts)

    @property
    def key(self) -> str:
        """``digest:`` and a digest of its facts' ids: one key per set of facts."""
        return "digest:" + hashlib.sha256(repr(self.ids).encode()).hexdigest()[:16]

    @property
    def valid_from(self) -> datetime:
        return self.facts[-1].valid_from

    @property
    def confidence(self) -> float:
        return min(f.confidence for f in self.facts)

    @property
    def importance(self) -> float:
        return max(f.importance for f in self.facts)

    @property
    def provenance(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        return union_provenance(self.facts)


@dataclass(frozen=True, slots=True)
class DigestPlan:
    write: tuple[DigestDraft, ...]
    archive: tuple[int, ...]  # digest ids no longer a topic

    def __bool__(self) -> bool:
        return bool(self.write or self.archive)


def plan_topics(facts: Iterable[EntryState], policy: DigestPolicy, model: str) -> list[FactIds]:
    """One owner's topics (see the module's docstring), each as its facts' ids."""
    usable = sorted(
        (
            f
            for f in facts
            if f.status == ACTIVE and f.kind in FACT_KINDS and f.embedding is not None
            and f.embedding_model == model
        ),
        key=lambda f: (f.valid_from, f.id),
    )[-policy.max_facts :]  # fmt: skip
    if len(usable) < policy.min_facts:
        return []
    usable.sort(key=lambda f: f.id)
    vectors = np.stack([np.asarray(f.embedding, dtype=np.float32) for f in usable])
    vectors -= vectors.mean(axis=0)  # what every fact of the owner shares (see above)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similarity = vectors @ vectors.T
    near = similarity >= policy.threshold
    # seeds by how many facts are near them, then by id (usable is in id order)
    seeds = np.lexsort((np.arange(len(usable)), -near.sum(axis=1)))
    free = np.ones(len(usable), dtype=bool)
    topics: list[FactIds] = []
    for seed in seeds:
        if not free[seed]:
            continue
        # nearest first, then by id: a stable sort of the ids by falling similarity
        ranked = [int(j) for j in np.argsort(-similarity[seed], kind="stable") if near[seed, j]]
        own = [j for j in ranked if free[j]][: policy.size]
        if len(own) < policy.min_facts:
            continue
        free[own] = False
        others = [j for j in ranked if j not in own][: policy.overlap]
        topic = tuple(sorted(usable[j].id for j in own + others))
        if topic not in topics:  # two seeds' facts each other's overlap: one digest
            topics.append(topic)
    return topics


def plan_digests(
    facts: Sequence[EntryState],
    digests: Mapping[int, tuple[str, FactIds]],
    policy: DigestPolicy,
    model: str,
) -> DigestPlan:
    """What to write and archive for one owner: ``facts`` are the owner's entries (their
    vectors given), ``digests`` its active and deleted digests (id → status, collected fact
    ids)."""
    if not facts:
        return DigestPlan((), tuple(sorted(i for i, (s, _) in digests.items() if s == ACTIVE)))
    owner = facts[0].owner
    by_id = {f.id: f for f in facts}
    topics = plan_topics(facts, policy, model)
    kept = {ids for status, ids in digests.values() if status == ACTIVE and ids in topics}
    refused = {ids for status, ids in digests.values() if status == DELETED}
    archive = tuple(
        sorted(i for i, (status, ids) in digests.items() if status == ACTIVE and ids not in kept)
    )
    write = tuple(
        DigestDraft(*owner, tuple(sorted((by_id[i] for i in ids), key=_in_time)))
        for ids in topics
        if ids not in kept and ids not in refused
    )
    return DigestPlan(write, archive)


def _in_time(fact: EntryState) -> tuple[object, int]:
    return (fact.valid_from, fact.id)


def _sentence(statement: str) -> str:
    text = statement.strip()
    return text if text[-1:] in (".", "!", "?") else text + "."
