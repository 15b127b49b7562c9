"""Reading the read models, and reviewing skill proposals: the Python API for agents."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

from ledger.db import Conn, tenant_scope
from ledger.errors import InvalidInput, NotFound
from ledger.scope import check_id
from ledger.sqlfile import load_queries
from materializers.profile import Conflict, ProfileRow
from materializers.skills import Json

Q = load_queries("materializers")
STATUSES = ("proposed", "published", "rejected")
DECISIONS: dict[str, str] = {"publish": "published", "reject": "rejected"}
Decision = Literal["publish", "reject"]


class SkillNotFound(NotFound):
    """No skill proposal with this id for this tenant: list them with `memledger skills`."""


class InvalidReview(InvalidInput):
    """A skill review was refused: the decision is publish or reject, and a reviewer is named."""


class InvalidSkillStatus(InvalidInput):
    """Unknown skill status: use proposed, published or rejected."""


@dataclass(frozen=True, slots=True)
class SkillProposal:
    """A ``skill_proposal`` row: the derived skill plus its review state."""

    id: int
    agent_id: str
    skill_key: str
    goal: str
    steps: tuple[Json, ...]
    failures: tuple[Json, ...]
    applies_to: tuple[str, ...]
    evidence_count: int  # independent successes: sessions it worked in
    source_entry_ids: tuple[int, ...]
    failure_count: int  # sessions the procedure itself failed in
    successes_since_failure: int
    last_failure_at: datetime | None
    status: str
    reviewed_by: str | None
    reviewed_at: datetime | None
    review_reason: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SkillProposal:
        tuples = ("steps", "failures", "applies_to", "source_entry_ids")
        names = [f.name for f in fields(cls)]
        values: dict[str, Any] = {n: tuple(row[n]) if n in tuples else row[n] for n in names}
        return cls(**values)


def get_profile(conn: Conn, tenant_id: str, user_id: str) -> list[ProfileRow]:
    """A user's profile, one row per key, ordered by key."""
    check_id(user_id, "user_id")
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "user_id": user_id}
        return [_profile_row(r) for r in conn.execute(Q["get_profile"], params).fetchall()]


def profile_users(conn: Conn, tenant_id: str, *, limit: int = 100) -> list[str]:
    """Users of the tenant that have a profile, in id order."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "limit": limit}
        return [r["user_id"] for r in conn.execute(Q["profile_users"], params).fetchall()]


def _profile_row(row: Mapping[str, Any]) -> ProfileRow:
    return ProfileRow(
        user_id=row["user_id"],
        key=row["key"],
        value=row["value"],
        statement=row["statement"],
        confidence=float(row["confidence"]),
        valid_from=row["valid_from"],
        source_entry_ids=tuple(row["source_entry_ids"]),
        conflicts=tuple(
            Conflict(
                c["entry_id"], c["value"], c["statement"], datetime.fromisoformat(c["valid_from"])
            )
            for c in row["conflicts"]
        ),
        updated_at=row["updated_at"],
    )


def list_skills(
    conn: Conn, tenant_id: str, *, agent_id: str | None = None, status: str | None = None
) -> list[SkillProposal]:
    """Skill proposals of the tenant, optionally of one agent and/or in one status."""
    if agent_id is not None:
        check_id(agent_id, "agent_id")
    if status is not None and status not in STATUSES:
        raise InvalidSkillStatus(status=status)
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "agent_id": agent_id, "status": status}
        return [SkillProposal.from_row(r) for r in conn.execute(Q["list_skills"], params)]


def review_skill(
    conn: Conn,
    tenant_id: str,
    skill_id: int,
    decision: Decision,
    reviewer: str,
    reason: str | None,
    *,
    now: datetime,
) -> SkillProposal:
    """Publish or reject a proposal; recomputation keeps the decision."""
    status = _check_review(skill_id, decision, reviewer)
    with tenant_scope(conn, tenant_id):
        params = {
            "tenant_id": tenant_id,
            "id": skill_id,
            "status": status,
            "reviewer": reviewer.strip(),
            "reason": reason.strip() if reason and reason.strip() else None,
            "now": now,
        }
        row = conn.execute(Q["review_skill"], params).fetchone()
    if row is None:
        raise SkillNotFound(tenant_id=tenant_id, skill_id=skill_id)
    return SkillProposal.from_row(row)


def _check_review(skill_id: object, decision: object, reviewer: object) -> str:
    if isinstance(skill_id, bool) or not isinstance(skill_id, int) or skill_id <= 0:
        raise InvalidReview("skill id must be a positive integer", skill_id=skill_id)
    if not isinstance(decision, str) or decision not in DECISIONS:
        raise InvalidReview("decision must be 'publish' or 'reject'", decision=decision)
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise InvalidReview("the reviewer must be named", reviewer=reviewer)
    check_id(reviewer.strip(), "reviewer")
    return DECISIONS[decision]
