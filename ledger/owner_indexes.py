"""Per-owner HNSW indexes of ``memory_entries``: their names.

An owner with many active entries gets a partial HNSW index of its own (built and
dropped by consolidation's ``owner_indexes`` job). A search of that owner's entries walks
this small graph alone; through the table's index, a filter would reject most of the
entries it visits, at a heap read each. The name is a function of the owner and the
model, so a search finds the index by name, and a catalog lookup says whether it is
ready.
"""

from __future__ import annotations

import hashlib
import json

PREFIX = "memory_entries_hnsw_owner_"
# The owner type that names a user's entries in channels: those naming the user among
# their participants (a channel's entries are searched by participant, not by owner).
PARTICIPANT = "participant"
# The owner type that names what an agent learnt from one user or alone (its entries with
# learnt_from IN (user, '')), the owner id being ``learnt_owner(agent, user)``.
LEARNT = "learnt"


def learnt_owner(agent_id: str, user_id: str) -> str:
    """The owner id of what ``agent_id`` learnt from ``user_id`` or alone."""
    return json.dumps([agent_id, user_id], ensure_ascii=False)


def owner_index_name(tenant_id: str, owner_type: str, owner_id: str, model: str) -> str:
    """The name of the owner's index over its active entries of ``model`` (fits
    PostgreSQL's 63 bytes whatever the ids)."""
    key = json.dumps([tenant_id, owner_type, owner_id, model], ensure_ascii=False)
    return PREFIX + hashlib.sha256(key.encode()).hexdigest()[:32]
