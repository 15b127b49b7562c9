"""The cases of a memory probe file, as the harness reads them (the format is
docs/probes.md), and the error a file that breaks it raises."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ledger.errors import InvalidInput

CATEGORIES = {
    "ku": "knowledge_update", "tr": "temporal_resolution", "ga": "group_attribution",
    "dup": "duplicates", "sp": "successful_path", "ab": "abstention", "mh": "multi_hop",
    "pi": "privacy_isolation",
}  # fmt: skip
ROLES = ("user", "assistant", "tool_call", "tool_result")
# Each kind's required fields, then its optional ones (besides ``kind``).
KINDS: Mapping[str, tuple[frozenset[str], frozenset[str]]] = {
    kind: (frozenset(required.split()), frozenset(optional.split()))
    for kind, required, optional in (
        ("current_fact", "user query expect_any evidence", "stale"),
        ("resolved_date", "user query expect_any evidence", ""),
        ("attribution", "user query expect_any evidence", "must_not_contain not_for"),
        ("skill", "agent query expect_any avoid_any evidence", "expect_all"),
        ("no_duplicates", "user topic_any max_current evidence", ""),
        ("abstain", "user query must_not_contain", ""),
        ("isolation", "user query must_not_contain leak_from", ""),
    )
}
# A case asking that something is absent also asks for something present: a memory that
# stores nothing cannot pass it.
NEEDS_POSITIVE = ("abstain", "isolation")


class InvalidProbeFile(InvalidInput):
    """The probe file breaks the format: fix the named case and field (see docs/probes.md)."""

    def __init__(self, message: str, *, case: str | None = None, field: str = "") -> None:
        self.case = case
        self.field = field
        where = ": ".join(p for p in (f"case {case}" if case else "", field) if p)
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True, slots=True)
class ProbeEvent:
    id: str  # the external id
    role: str
    actor: str
    at: datetime
    content: str


@dataclass(frozen=True, slots=True)
class ProbeSession:
    channel: str
    events: tuple[ProbeEvent, ...]


@dataclass(frozen=True, slots=True)
class Check:
    """One check; the fields its kind does not take stay empty."""

    kind: str
    index: int  # its position in the case's checks
    user: str | None = None
    agent: str | None = None
    query: str | None = None
    expect_any: tuple[str, ...] = ()
    expect_all: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    must_not_contain: tuple[str, ...] = ()
    not_for: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    topic_any: tuple[str, ...] = ()
    max_current: int = 0
    avoid_any: tuple[str, ...] = ()
    leak_from: str | None = None
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    category: str
    channel: str
    users: Mapping[str, str]  # user id -> display name
    agent: str
    note: str
    sessions: tuple[ProbeSession, ...]
    checks: tuple[Check, ...]


@dataclass(frozen=True, slots=True)
class ProbeFile:
    tenant: str
    cases: tuple[Case, ...]
