"""The read-model consumer: apply entry changes to ``user_profile`` and ``skill_proposal``.

``project`` tails ``memory_entry_history`` (see :mod:`observations.changes`) from the
tenant's checkpoint up to the horizon, recomputes every read-model row of each owner
whose entries changed (see :mod:`materializers.sync`), and advances the checkpoint in the
same transaction — so a crash re-applies the batch and a second run writes nothing.
Runs for one tenant are serialized by the checkpoint row lock; duplicate messages are
no-ops.

``rebuild`` recomputes the read models from entries alone, owner by owner (a tenant is
never loaded into memory at once), for one tenant or all. Skill review state is kept.
A rebuild of both models also moves the checkpoint to its horizon; a rebuild of one
model leaves it, since the other model may still have changes to apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ledger.db import Conn, tenant_scope
from ledger.errors import NotFound
from ledger.scope import check_id
from ledger.sqlfile import load_queries
from materializers.skills import SkillPolicy
from materializers.sync import refresh_profile, refresh_skills
from observations.changes import change_horizon
from observations.changes import checkpoint as consumer_checkpoint

Q = load_queries("materializers")
CONSUMER = "read_models"
_NO_POLICY = SkillPolicy()  # every proposal waits for a reviewer
Model = Literal["all", "profile", "skills"]
MODELS: tuple[Model, ...] = ("all", "profile", "skills")
_OWNER_TYPES: dict[Model, list[str]] = {
    "all": ["agent", "user"],
    "profile": ["user"],
    "skills": ["agent"],
}


class UnknownReadModel(NotFound):
    """No such read model: rebuild all, profile or skills."""


@dataclass(frozen=True, slots=True)
class ProjectStats:
    """What one run did for one tenant."""

    tenant_id: str
    changes: int  # history rows applied
    owners: int  # users and agents recomputed
    profile_rows: int  # user_profile rows written or deleted
    skill_rows: int  # skill_proposal rows written or deleted
    position: int  # the checkpoint after the run


def project(
    conn: Conn, tenant_id: str, *, now: datetime, policy: SkillPolicy = _NO_POLICY
) -> ProjectStats:
    """Apply the tenant's entry changes since the checkpoint; idempotent. ``policy``: when
    a skill proposal is published without review."""
    horizon = change_horizon(conn, tenant_id)
    if horizon == 0:  # the tenant never had an entry: nothing to do, nothing to write
        return ProjectStats(tenant_id, 0, 0, 0, 0, 0)
    with tenant_scope(conn, tenant_id):
        position = _lock_checkpoint(conn, tenant_id, now)
        if horizon <= position:
            return ProjectStats(tenant_id, 0, 0, 0, 0, position)
        params = {"tenant_id": tenant_id, "after": position, "upto": horizon}
        changed = conn.execute(Q["owners_changed_counted"], params).fetchall()
        counts = _refresh(conn, tenant_id, changed, "all", now, policy)
        _advance(conn, tenant_id, horizon, now)
    changes = sum(int(r["changes"]) for r in changed)
    return ProjectStats(tenant_id, changes, counts.owners, counts.profile, counts.skills, horizon)


def rebuild(
    conn: Conn,
    tenant_id: str | None,
    model: Model = "all",
    *,
    now: datetime,
    policy: SkillPolicy = _NO_POLICY,
) -> list[ProjectStats]:
    """Recompute ``model`` from entries alone for one tenant, or for every tenant (None)."""
    if model not in MODELS:
        raise UnknownReadModel(model=model, known=", ".join(MODELS))
    if tenant_id is None:
        tenants = [r["tenant_id"] for r in conn.execute(Q["all_tenants"]).fetchall()]
    else:
        tenants = [check_id(tenant_id, "tenant_id")]
    return [_rebuild_tenant(conn, t, model, now, policy) for t in tenants]


def _rebuild_tenant(
    conn: Conn, tenant_id: str, model: Model, now: datetime, policy: SkillPolicy
) -> ProjectStats:
    horizon = change_horizon(conn, tenant_id)
    with tenant_scope(conn, tenant_id):
        position = _lock_checkpoint(conn, tenant_id, now)
        params = {"tenant_id": tenant_id, "owner_types": _OWNER_TYPES[model]}
        with conn.cursor(name="read_model_owners") as owners:
            owners.itersize = 500
            owners.execute(Q["read_model_owners"], params)
            counts = _refresh(conn, tenant_id, owners, model, now, policy)
        if model == "all":
            position = max(position, horizon)
            _advance(conn, tenant_id, position, now)
    return ProjectStats(tenant_id, 0, counts.owners, counts.profile, counts.skills, position)


@dataclass(slots=True)
class _Counts:
    owners: int = 0
    profile: int = 0
    skills: int = 0


def _refresh(
    conn: Conn,
    tenant_id: str,
    owners: Iterable[Mapping[str, Any]],
    model: Model,
    now: datetime,
    policy: SkillPolicy,
) -> _Counts:
    """Recompute the rows of each user/agent in ``owners`` (other owners have none)."""
    counts = _Counts()
    for owner in owners:
        kind, owner_id = owner["owner_type"], owner["owner_id"]
        if kind == "user" and model in ("all", "profile"):
            counts.profile += refresh_profile(conn, tenant_id, owner_id, now=now)
        elif kind == "agent" and model in ("all", "skills"):
            counts.skills += refresh_skills(conn, tenant_id, owner_id, now=now, policy=policy)
        else:
            continue
        counts.owners += 1
    return counts


def _lock_checkpoint(conn: Conn, tenant_id: str, now: datetime) -> int:
    params = {"tenant_id": tenant_id, "consumer": CONSUMER, "now": now}
    conn.execute(Q["ensure_checkpoint"], params)
    row = conn.execute(Q["lock_checkpoint"], params).fetchone()
    assert row is not None
    return int(row["position"])


def _advance(conn: Conn, tenant_id: str, position: int, now: datetime) -> None:
    params = {"tenant_id": tenant_id, "consumer": CONSUMER, "position": position, "now": now}
    conn.execute(Q["advance_checkpoint"], params)


def checkpoint(conn: Conn, tenant_id: str) -> int:
    """The tenant's read-model checkpoint (0 before the first run)."""
    with tenant_scope(conn, tenant_id):
        return consumer_checkpoint(conn, tenant_id, CONSUMER)
