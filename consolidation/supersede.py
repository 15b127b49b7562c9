"""Supersede: a newer fact about the same owner and attribute with another value ends the
older.

Applies to the profile-like kinds (preference, identity, constraint, skill, relationship,
goal), grouped by owner and attribute: the profile key (keys compared like the profile
does), where keys of one attribute are one (one's partner by any word for them, and the
ending "we split up": :func:`materializers.profile.attribute_key`). Within a
group, facts are ordered by their *rank* — event time, then confidence, then id, the
profile's rule for the current fact — and every fact that has a later fact with a
different value is superseded by the **first** such fact: ``valid_to`` = that fact's
``valid_from``, ``superseded_by`` = its id. So different values never overlap in valid
time, a fact that arrives late (older event time) slots into the timeline where it
belongs, and the latest value stays the only current one.

The timeline holds active, archived, superseded and merged entries (a merged entry was
still said at its time); merged entries are never changed here, deleted ones are not
part of it. Supersede never revives a fact: a rebuild that deletes a successor revives
what it superseded itself (``observations.builder``), and a successor deleted through the
API leaves its predecessor superseded.

The plan is a fixed point: applied once, planning again yields nothing; it depends on
the set of entries, not their order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from consolidation.model import (
    ACTIVE,
    ARCHIVED,
    MERGED,
    SUPERSEDED,
    EntryState,
    Supersede,
)
from materializers.profile import attribute_key
from observations.entry import PROFILE_KINDS

TIMELINE = (ACTIVE, ARCHIVED, SUPERSEDED, MERGED)
SUPERSEDABLE = frozenset({ACTIVE, ARCHIVED, SUPERSEDED})
GroupKey = tuple[str, str, str]  # owner type, owner id, attribute key


def group_key(entry: EntryState) -> GroupKey:
    return (entry.owner_type, entry.owner_id, attribute_key(entry.key))


def in_scope(entry: EntryState) -> bool:
    return entry.kind in PROFILE_KINDS and entry.status in TIMELINE


def plan_supersede(entries: Iterable[EntryState]) -> list[Supersede]:
    """The supersessions that bring every (owner, key) timeline to its fixed point."""
    groups: dict[GroupKey, list[EntryState]] = defaultdict(list)
    for entry in entries:
        if in_scope(entry):
            groups[group_key(entry)].append(entry)
    changes: list[Supersede] = []
    for key in sorted(groups):
        changes += _plan_group(sorted(groups[key], key=lambda e: e.rank))
    return changes


def _plan_group(timeline: Sequence[EntryState]) -> list[Supersede]:
    changes: list[Supersede] = []
    # Walking back from the latest: the first later entry with another value is the next
    # entry when their values differ, else the next entry's own successor.
    values = [e.value for e in timeline]
    successor: int | None = None
    for i in range(len(timeline) - 2, -1, -1):
        if values[i + 1] != values[i]:
            successor = i + 1
        entry = timeline[i]
        if successor is None or entry.status not in SUPERSEDABLE:
            continue
        after, value = timeline[successor], values[successor]
        wanted = (SUPERSEDED, after.id, after.valid_from)
        if (entry.status, entry.superseded_by, entry.valid_to) != wanted:
            changes.append(
                Supersede(
                    old=entry.id,
                    new=after.id,
                    valid_to=after.valid_from,
                    reason=(
                        f"superseded by entry {after.id}: {entry.profile_key} is "
                        f"{value!r} from {after.valid_from:%Y-%m-%d %H:%M}"
                    ),
                )
            )
    return changes
