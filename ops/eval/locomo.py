"""``memledger eval locomo``: the LoCoMo conversations through the whole pipeline.

Each conversation is ingested into its own tenant with its real dates, every session is
built, and the figures of the build are measured against the benchmark's reference facts:
entries per session, the share of entries whose provenance names real events of their own
session, and the share of reference facts whose source turn is in some entry's provenance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ledger.db import Conn, tenant_scope
from ledger.events import iter_chunks
from ledger.store import append, list_sessions, sweep_idle
from observations.builder import BuildConfig, build_session
from ops.eval.locomo_data import Conversation, events


@dataclass(frozen=True, slots=True)
class BuildFigures:
    sessions: int
    entries: int
    valid_provenance: int  # entries whose every source event is in their own session
    reference_facts: int
    covered_facts: int  # reference facts whose source turns appear in some provenance
    kinds: dict[str, int] = field(default_factory=dict)

    @property
    def entries_per_session(self) -> float:
        return self.entries / max(self.sessions, 1)


def tenant_of(conversation: Conversation) -> str:
    return f"locomo-{conversation.sample_id}"


def ingest_and_build(
    conn: Conn,
    conversation: Conversation,
    config: BuildConfig,
    *,
    now: datetime,
    on_session: Callable[[], None] = lambda: None,
) -> BuildFigures:
    """Append the conversation's turns, close its sessions and build each one."""
    tenant = tenant_of(conversation)
    for batch in iter_chunks(events(conversation), 500):
        with conn.transaction():
            append(conn, tenant, batch, now=now)
    with conn.transaction():
        sweep_idle(conn, now=now + timedelta(days=1), tenant_id=tenant)
    for session in list_sessions(conn, tenant, limit=10_000):
        with conn.transaction():
            build_session(conn, tenant, session["id"], config, now=now)
        on_session()
    return measure_build(conn, conversation)


def measure_build(conn: Conn, conversation: Conversation) -> BuildFigures:
    tenant = tenant_of(conversation)
    with tenant_scope(conn, tenant):
        sessions = conn.execute(
            "SELECT count(*) AS n FROM memory_sessions WHERE tenant_id = %s", [tenant]
        ).fetchone()
        entries = conn.execute(
            "SELECT id, kind, source_session_id, source_event_ids, source_external_ids"
            " FROM memory_entries WHERE tenant_id = %s AND status = 'active'",
            [tenant],
        ).fetchall()
        stored = conn.execute(
            "SELECT id, session_id, external_id FROM memory_session_events WHERE tenant_id = %s",
            [tenant],
        ).fetchall()
    where = {e["id"]: (e["session_id"], e["external_id"]) for e in stored}
    valid = sum(_valid(entry, where) for entry in entries)
    covered_turns = {x for entry in entries for x in entry["source_external_ids"]}
    facts = conversation.reference_facts
    kinds: dict[str, int] = {}
    for entry in entries:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    return BuildFigures(
        sessions=int(sessions["n"]) if sessions else 0,
        entries=len(entries),
        valid_provenance=valid,
        reference_facts=len(facts),
        covered_facts=sum(any(d in covered_turns for d in ids) for _, ids in facts),
        kinds=kinds,
    )


def _valid(entry: dict[str, Any], where: dict[int, tuple[int, str]]) -> bool:
    ids = entry["source_event_ids"]
    if not ids or len(ids) != len(entry["source_external_ids"]):
        return False
    return all(
        i in where and where[i] == (entry["source_session_id"], x)
        for i, x in zip(ids, entry["source_external_ids"], strict=True)
    )


def total(figures: list[BuildFigures]) -> BuildFigures:
    kinds: dict[str, int] = {}
    for f in figures:
        for kind, n in f.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
    return BuildFigures(
        sum(f.sessions for f in figures),
        sum(f.entries for f in figures),
        sum(f.valid_provenance for f in figures),
        sum(f.reference_facts for f in figures),
        sum(f.covered_facts for f in figures),
        kinds,
    )
