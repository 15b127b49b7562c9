"""What the read-model folds see of a memory entry, and small helpers they share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from observations.entry import ACTIVE

__all__ = ["ACTIVE", "EntryFact", "normalize", "text_field"]


@dataclass(frozen=True, slots=True)
class EntryFact:
    """One memory entry as a fold reads it (a row of ``memory_entries``, minus vectors)."""

    id: int
    owner_type: str
    owner_id: str
    kind: str
    key: str
    statement: str
    confidence: float
    valid_from: datetime
    source_session_id: int | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    status: str = ACTIVE

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EntryFact:
        return cls(
            id=int(row["id"]),
            owner_type=row["owner_type"],
            owner_id=row["owner_id"],
            kind=row["kind"],
            key=row["key"],
            statement=row["canonical_statement"],
            confidence=float(row["confidence"]),
            valid_from=row["valid_from"],
            source_session_id=row["source_session_id"],
            fields=row["fields"] or {},
            status=row["status"],
        )


def normalize(text: str) -> str:
    """Compare values and names case- and spacing-blind, without trailing punctuation."""
    return " ".join(text.casefold().split()).rstrip(" .!?;,")


def text_field(fields: Mapping[str, Any], name: str) -> str | None:
    """A non-blank string field, stripped; anything else is absent."""
    value = fields.get(name)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None
