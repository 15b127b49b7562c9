"""The ``user_profile`` fold: one row per (user, key) from the user's active profile facts.

Pure: the same entries in any order give the same row. Of the active entries of one user
and key, the *current* one is the latest valid — greatest ``valid_from`` (event time), then
confidence, then entry id so ties are stable. Entries stating the same value (compared
case- and spacing-blind) support it and join ``source_entry_ids``; entries stating another
value are kept as ``conflicts``, never dropped. Keys are the extractor's keys (see
:mod:`observations.extract.keys`), only case- and spacing-normalized here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from materializers.facts import ACTIVE, EntryFact, normalize, text_field
from observations.extract.base import PROFILE_KINDS


@dataclass(frozen=True, slots=True)
class Conflict:
    """An active fact on the same key whose value disagrees with the current one."""

    entry_id: int
    value: str
    statement: str
    valid_from: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "value": self.value,
            "statement": self.statement,
            "valid_from": self.valid_from.astimezone(UTC).isoformat(),
        }


@dataclass(frozen=True, slots=True)
class ProfileRow:
    user_id: str
    key: str
    value: str
    statement: str
    confidence: float
    valid_from: datetime
    source_entry_ids: tuple[int, ...]
    conflicts: tuple[Conflict, ...] = ()
    # when the stored row last changed (read back from the table; not part of the fold)
    updated_at: datetime | None = field(default=None, compare=False)

    @property
    def entry_ids(self) -> tuple[int, ...]:
        """Every entry the row shows (sources and conflicts): its lineage."""
        return tuple(sorted({*self.source_entry_ids, *(c.entry_id for c in self.conflicts)}))


def is_profile_fact(entry: EntryFact) -> bool:
    return entry.status == ACTIVE and entry.owner_type == "user" and entry.kind in PROFILE_KINDS


def profile_key(key: str) -> str:
    """The row key of an entry key: lower case, inner spaces as "-"."""
    return "-".join(key.casefold().split())


# one's partner, by whatever word for them: one attribute under several keys
_PARTNER_KEYS = frozenset(
    f"relationship:{role}"
    for role in ("partner", "spouse", "wife", "husband", "boyfriend", "girlfriend", "fiance",
                 "fiancee")
)  # fmt: skip


def attribute_key(key: str) -> str:
    """The attribute a key's facts are values of, which a newer value ends whatever key it
    came under: one's partner by any word for them ("relationship:girlfriend",
    "relationship:wife", and an ending, "relationship:partner"); any other key is its own
    attribute (its profile key)."""
    row = profile_key(key)
    return "relationship:partner" if row in _PARTNER_KEYS else row


def profile_value(entry: EntryFact) -> str:
    """The fact's object ("strong black coffee"), else its statement; a negative fact (a
    dislike, "no longer vegetarian") is "not …"."""
    value = text_field(entry.fields, "object") or entry.statement
    if entry.fields.get("polarity") == "negative":
        return f"not {value}"
    return value


def _rank(entry: EntryFact) -> tuple[datetime, float, int]:
    return (entry.valid_from, entry.confidence, entry.id)


def fold_profile(entries: Iterable[EntryFact]) -> ProfileRow | None:
    """The row for the active profile facts of one (user, key); None when there are none."""
    facts = [e for e in entries if is_profile_fact(e)]
    if not facts:
        return None
    current = max(facts, key=_rank)
    value = normalize(profile_value(current))
    agree = [e for e in facts if normalize(profile_value(e)) == value]
    agreeing = {e.id for e in agree}
    disagree = sorted((e for e in facts if e.id not in agreeing), key=_rank)
    return ProfileRow(
        user_id=current.owner_id,
        key=profile_key(current.key),
        value=profile_value(current),
        statement=current.statement,
        confidence=current.confidence,
        valid_from=current.valid_from,
        source_entry_ids=tuple(sorted(e.id for e in agree)),
        conflicts=tuple(
            Conflict(e.id, profile_value(e), e.statement, e.valid_from) for e in disagree
        ),
    )


def profile_rows(entries: Iterable[EntryFact]) -> list[ProfileRow]:
    """Every profile row the entries give (any owners), ordered by user and key."""
    groups: dict[tuple[str, str], list[EntryFact]] = defaultdict(list)
    for entry in entries:
        if is_profile_fact(entry):
            groups[(entry.owner_id, profile_key(entry.key))].append(entry)
    rows = (fold_profile(group) for _, group in sorted(groups.items()))
    return [row for row in rows if row is not None]
