"""Merge: near-duplicates of the same owner and kind collapse into one survivor.

Among an owner's **active** entries of one kind, two *compatible* entries are duplicates
when their statements match after normalization (case, spacing, trailing punctuation), or
when their embeddings (same model) have a cosine similarity of at least the threshold.
Compatible: profile facts state the same value under the same key (so "favorite coin is
Bitcoin" and "… is Ethereum" never merge however close their vectors), dated facts the
same event time (episodic turns: the same day). Two profile facts with the same key and
value are the same fact restated, however they are worded ("… is lactose-intolerant." and
"… is still lactose-intolerant if u plan the menu."): they are duplicates too.
Duplicates are grouped transitively (connected components), so the result does not
depend on the order entries come in.

The survivor is, for profile facts, the latest by the profile's rank (event time,
confidence, id) — so the current value stays current — and otherwise the most confident,
then the earliest id. It keeps the union of the group's provenance (event ids and external
ids), the highest confidence and importance, and the group's accesses; the others become
``merged`` with a ``merged_into`` link. Agent experiences (each one is skill evidence) and
session summaries (one record per session) are never merged, nor are digests (each is
its own facts, rewritten by the digest job).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from consolidation.model import EntryState, Merge, union_provenance
from materializers.facts import normalize
from observations.entry import (
    ACTIVE,
    AGENT_EXPERIENCE,
    DIGEST,
    EPISODIC,
    PROFILE_KINDS,
    SESSION_SUMMARY,
)

MERGE_EXEMPT = frozenset({AGENT_EXPERIENCE, SESSION_SUMMARY, DIGEST})
DEFAULT_THRESHOLD = 0.92
_BLOCK = 512  # rows of the similarity matrix computed at once
_SMALL = 256 * 256  # products up to this many cells are computed without BLAS


def in_scope(entry: EntryState) -> bool:
    return entry.status == ACTIVE and entry.kind not in MERGE_EXEMPT


def plan_merge(
    entries: Iterable[EntryState], *, threshold: float = DEFAULT_THRESHOLD
) -> list[Merge]:
    """One :class:`Merge` per group of duplicates (per owner and kind)."""
    groups: dict[tuple[str, str, str], list[EntryState]] = defaultdict(list)
    for entry in entries:
        if in_scope(entry):
            groups[(entry.owner_type, entry.owner_id, entry.kind)].append(entry)
    merges: list[Merge] = []
    for key in sorted(groups):
        merges += _plan_group(sorted(groups[key], key=lambda e: e.id), threshold)
    return merges


def _plan_group(group: Sequence[EntryState], threshold: float) -> list[Merge]:
    if len(group) < 2:
        return []
    parent = list(range(len(group)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    compat = [_compat(e) for e in group]
    first: dict[Any, int] = {}
    restated = group[0].kind in PROFILE_KINDS  # the same key and value is the same fact
    for i, entry in enumerate(group):
        j = first.setdefault(compat[i] if restated else (normalize(entry.statement), compat[i]), i)
        if j != i:
            union(j, i)
    if group[0].kind not in PROFILE_KINDS:  # profile facts: already one per key and value
        codes: dict[Any, int] = {}
        classes = [codes.setdefault(c, len(codes)) for c in compat]
        for i, j in similar_pairs(group, threshold, classes):
            union(i, j)
    components: dict[int, list[EntryState]] = defaultdict(list)
    for i, entry in enumerate(group):
        components[find(i)].append(entry)
    return [
        _merge(members, threshold) for _, members in sorted(components.items()) if len(members) > 1
    ]


def _compat(entry: EntryState) -> Any:
    """What two duplicates must share besides a close statement."""
    if entry.kind in PROFILE_KINDS:  # each key is a profile row of its own
        return entry.key, entry.value
    if entry.kind == EPISODIC:
        return entry.valid_from.date()
    return entry.fields.get("event_time")


def similar_pairs(
    group: Sequence[EntryState], threshold: float, classes: Sequence[int] | None = None
) -> Iterator[tuple[int, int]]:
    """Index pairs ``i < j`` whose embeddings (same model) reach ``threshold`` cosine, and
    (when ``classes`` are given) whose classes are equal."""
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, entry in enumerate(group):
        if entry.embedding is not None and entry.embedding_model is not None:
            by_model[entry.embedding_model].append(i)
    for model in sorted(by_model):
        idx = np.array(by_model[model])
        if len(idx) < 2:
            continue
        vectors = np.stack([np.asarray(group[i].embedding, dtype=np.float32) for i in idx])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        cls = None if classes is None else np.asarray(classes)[idx]
        for start in range(0, len(idx), _BLOCK):
            close = _dot(vectors[start : start + _BLOCK], vectors) >= threshold
            rows = np.arange(start, min(start + _BLOCK, len(idx)))
            close &= rows[:, None] < np.arange(len(idx))[None, :]  # i < j
            if cls is not None:
                close &= cls[rows][:, None] == cls[None, :]
            for a, b in zip(*np.nonzero(close), strict=True):
                yield int(idx[start + a]), int(idx[b])


def _dot(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``a @ b.T``; small products without BLAS, whose threads cost more than they save
    (tens of ms on a busy machine) on the owner-sized groups merge mostly sees."""
    if len(a) * len(b) <= _SMALL:
        return np.einsum("ij,kj->ik", a, b)
    return a @ b.T


def _merge(members: Sequence[EntryState], threshold: float) -> Merge:
    if members[0].kind in PROFILE_KINDS:
        survivor = max(members, key=lambda e: e.rank)
    else:
        survivor = max(members, key=lambda e: (e.confidence, -e.id))
    merged = tuple(sorted(e.id for e in members if e.id != survivor.id))
    exact = len({normalize(e.statement) for e in members}) == 1
    if exact:
        how = "the same statement"
    elif members[0].kind in PROFILE_KINDS:  # every member has the survivor's key and value
        how = "the same key and value"
    else:
        how = f"embedding cosine >= {threshold:g}"
    # The latest use: an access, or a restatement (a duplicate recorded later), so decay
    # does not archive a fact said again an hour ago because its survivor is older.
    used = [e.last_accessed_at for e in members if e.last_accessed_at is not None]
    used += [e.recorded_at for e in members if e.id != survivor.id]
    event_ids, external_ids = union_provenance(members)
    return Merge(
        survivor=survivor.id,
        merged=merged,
        source_event_ids=event_ids,
        source_external_ids=external_ids,
        confidence=max(e.confidence for e in members),
        importance=max(e.importance for e in members),
        access_count=sum(e.access_count for e in members),
        last_accessed_at=max(used) if used else None,
        reason=f"near-duplicates of entry {survivor.id} ({how})",
    )
