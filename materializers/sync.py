"""Recompute one owner's read-model rows from its active entries, and their lineage.

An owner's rows are recomputed whole: every key of the user (``user_profile``) or every
skill key of the agent (``skill_proposal``). That covers an entry that moved from one key
to another without tracking old keys. Unchanged rows are left untouched (their
``updated_at`` too), so recomputing twice writes nothing the second time. Lineage is one
``projected_to`` link per entry a row shows, kept in step with the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from psycopg.types.json import Jsonb

from ledger.db import Conn
from ledger.sqlfile import load_queries
from materializers.facts import EntryFact
from materializers.profile import ProfileRow, profile_rows
from materializers.skills import (
    AGENT_EXPERIENCE,
    POLICY_REVIEWER,
    SkillPolicy,
    SkillRow,
    policy_review,
    reconcile_skill,
    skill_rows,
)
from observations.entry import PROFILE_KINDS

Q = load_queries("materializers")
_NO_POLICY = SkillPolicy()


def _entries(
    conn: Conn, base: Mapping[str, Any], owner_type: str, owner_id: str, kinds: Sequence[str]
) -> list[EntryFact]:
    params = {**base, "owner_type": owner_type, "owner_id": owner_id, "kinds": list(kinds)}
    return [EntryFact.from_row(r) for r in conn.execute(Q["owner_entries"], params).fetchall()]


def _write(
    conn: Conn,
    base: Mapping[str, Any],
    delete: tuple[str, str, list[Any]],
    write: str,
    rows: list[Any],
) -> int:
    """Delete the listed rows and write the others with the query named ``write``;
    returns how many rows changed."""
    query, name, gone = delete
    deleted = conn.execute(Q[query], {**base, name: gone}).rowcount if gone else 0
    if not rows:
        return deleted
    return deleted + len(conn.execute(Q[write], {**base, "rows": Jsonb(rows)}).fetchall())


def profile_dst(user_id: str, key: str) -> str:
    """The lineage id of a profile row."""
    return f"{user_id}/{key}"


def refresh_profile(conn: Conn, tenant_id: str, user_id: str, *, now: datetime) -> int:
    """Recompute a user's profile rows; returns how many rows were written or deleted."""
    base = {"tenant_id": tenant_id, "user_id": user_id, "now": now}
    rows = profile_rows(_entries(conn, base, "user", user_id, sorted(PROFILE_KINDS)))
    old = {r["key"] for r in conn.execute(Q["profile_keys"], base).fetchall()}
    gone = sorted(old - {r.key for r in rows})
    json_rows = [_profile_json(r) for r in rows]
    changed = _write(
        conn, base, ("delete_profile_rows", "keys", gone), "upsert_profile_rows", json_rows
    )
    links = [(e, profile_dst(user_id, r.key)) for r in rows for e in r.entry_ids]
    row_ids = sorted({profile_dst(user_id, k) for k in old | {r.key for r in rows}})
    _sync_links(conn, base, "user_profile", row_ids, links)
    return changed


def _profile_json(row: ProfileRow) -> dict[str, Any]:
    return {
        "key": row.key,
        "value": row.value,
        "statement": row.statement,
        "confidence": row.confidence,
        "source_entry_ids": list(row.source_entry_ids),
        "conflicts": [c.as_json() for c in row.conflicts],
        "valid_from": row.valid_from.astimezone(UTC).isoformat(),
    }


def refresh_skills(
    conn: Conn,
    tenant_id: str,
    agent_id: str,
    *,
    now: datetime,
    policy: SkillPolicy = _NO_POLICY,
) -> int:
    """Recompute an agent's skill proposals, keeping review state, then apply the
    publication policy; returns how many rows were written, deleted or (un)published."""
    base = {"tenant_id": tenant_id, "agent_id": agent_id, "now": now}
    folded = skill_rows(_entries(conn, base, "agent", agent_id, [AGENT_EXPERIENCE]))
    stored = conn.execute(Q["agent_skills"], base).fetchall()
    wanted, gone = plan_skills(stored, folded)
    have = {r["skill_key"] for r in stored}
    known = [_skill_json(r) for r in wanted if r.skill_key in have]
    changed = _write(conn, base, ("delete_skill_rows", "ids", gone), "update_skill_rows", known)
    # in the order the skills first appeared, so ids do not depend on when projections ran
    fresh = sorted((r for r in wanted if r.skill_key not in have), key=lambda r: r.source_entry_ids)
    new = [_skill_json(r) for r in fresh]
    if new:
        changed += len(
            conn.execute(Q["insert_skill_rows"], {**base, "rows": Jsonb(new)}).fetchall()
        )
    reviews = {r["skill_key"]: r for r in conn.execute(Q["skill_ids"], base).fetchall()}
    ids = {key: str(r["id"]) for key, r in reviews.items()}
    links = [(e, ids[r.skill_key]) for r in wanted for e in r.source_entry_ids]
    row_ids = sorted({*ids.values(), *(str(i) for i in gone)})
    _sync_links(conn, base, "skill_proposal", row_ids, links)
    return changed + _apply_policy(conn, base, wanted, reviews, policy)


def _apply_policy(
    conn: Conn,
    base: Mapping[str, Any],
    rows: Sequence[SkillRow],
    reviews: Mapping[str, Mapping[str, Any]],
    policy: SkillPolicy,
) -> int:
    decided: dict[str, list[int]] = {"published": [], "proposed": []}
    for row in rows:
        review = reviews[row.skill_key]
        status = policy_review(row, review["status"], review["reviewed_by"], policy)
        if status is not None:
            decided[status].append(int(review["id"]))
    if not any(decided.values()):
        return 0
    reason = f"{policy.auto_publish_after} independent successes, no failure since"
    params = {**base, "publish": decided["published"], "unpublish": decided["proposed"],
              "reviewer": POLICY_REVIEWER, "reason": reason}  # fmt: skip
    return conn.execute(Q["policy_review_skills"], params).rowcount


def plan_skills(
    stored: Iterable[Mapping[str, Any]], folded: Iterable[SkillRow]
) -> tuple[list[SkillRow], list[int]]:
    """The rows to write and the ids to delete, from an agent's stored and folded rows."""
    old = {r["skill_key"]: r for r in stored}
    new = {r.skill_key: r for r in folded}
    wanted: list[SkillRow] = []
    gone: list[int] = []
    for key in sorted(old.keys() | new.keys()):
        row = old.get(key)
        kept = reconcile_skill(stored_skill(row) if row else None, _reviewed(row), new.get(key))
        if kept is not None:
            wanted.append(kept)
        elif row is not None:
            gone.append(int(row["id"]))
    return wanted, gone


def _reviewed(row: Mapping[str, Any] | None) -> bool:
    return row is not None and row["reviewed_at"] is not None


def stored_skill(row: Mapping[str, Any]) -> SkillRow:
    """The derived part of a stored ``skill_proposal`` row."""
    return SkillRow(
        agent_id=row["agent_id"],
        skill_key=row["skill_key"],
        goal=row["goal"],
        steps=tuple(row["steps"]),
        failures=tuple(row["failures"]),
        applies_to=tuple(row["applies_to"]),
        evidence_count=int(row["evidence_count"]),
        source_entry_ids=tuple(row["source_entry_ids"]),
        failure_count=int(row["failure_count"]),
        successes_since_failure=int(row["successes_since_failure"]),
        last_failure_at=row["last_failure_at"],
    )


def _skill_json(row: SkillRow) -> dict[str, Any]:
    data = asdict(row)
    del data["agent_id"]
    failed = row.last_failure_at
    data["last_failure_at"] = failed.astimezone(UTC).isoformat() if failed else None
    return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}


def _sync_links(
    conn: Conn,
    base: Mapping[str, Any],
    dst_type: str,
    rows: list[str],
    links: Iterable[tuple[int, str]],
) -> None:
    """Make the lineage of ``rows`` exactly ``links`` (entry id, row id)."""
    pairs = sorted(set(links))
    params = {
        **base,
        "dst_type": dst_type,
        "rows": rows,
        "src_ids": [p[0] for p in pairs],
        "dst_ids": [p[1] for p in pairs],
    }
    if rows:
        conn.execute(Q["delete_stale_links"], params)
    if pairs:
        conn.execute(Q["insert_projection_links"], params)
