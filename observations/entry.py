"""The memory entry's vocabulary, in one place: its kinds, its owners and its statuses.

The schema holds the same lists (a CHECK on ``memory_entries.kind``, see
``ledger/migrations``); every stage imports them from here.
"""

from __future__ import annotations

from typing import Literal

FACT_KINDS: tuple[str, ...] = (
    "preference",
    "relationship",
    "experience",
    "skill",
    "goal",
    "constraint",
    "identity",
    "event",
)
AGENT_EXPERIENCE = "agent_experience"
SESSION_SUMMARY = "session_summary"
EPISODIC = "episodic"
# an owner's facts on one topic gathered into one entry (consolidation's digest job)
DIGEST = "digest"
KINDS: tuple[str, ...] = (*FACT_KINDS, AGENT_EXPERIENCE, SESSION_SUMMARY, EPISODIC, DIGEST)
# the fact kinds that describe a person as they are now (the user profile's); experiences
# and events are dated happenings instead
PROFILE_KINDS = frozenset({"preference", "identity", "constraint", "skill", "relationship", "goal"})

OwnerType = Literal["user", "agent", "channel"]

# statuses: current, replaced by a newer fact, folded into another, decayed, deleted
ACTIVE = "active"
SUPERSEDED = "superseded"
MERGED = "merged"
ARCHIVED = "archived"
DELETED = "deleted"
STATUSES: tuple[str, ...] = (ACTIVE, SUPERSEDED, MERGED, ARCHIVED, DELETED)
