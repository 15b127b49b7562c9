"""The read models on a real PostgreSQL: the runner over the entry history, rebuilds,
reviews, lineage and tenant isolation.

Entries come from the real builder (the bundled sample, heuristic extractor, hash
embedder) where the extractor's behaviour matters, and from SQL (an entry and its history
row, announced like any writer of entry changes) where a test needs precise control.
"""

from __future__ import annotations

import json
import random
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.types.json import Jsonb

from ledger import list_sessions, tenant_scope
from ledger.db import Conn, connect
from materializers import (
    EntryFact,
    InvalidReview,
    InvalidSkillStatus,
    SkillNotFound,
    UnknownReadModel,
    announce_entry_changes,
    checkpoint,
    get_profile,
    list_skills,
    profile_rows,
    project,
    rebuild,
    review_skill,
    skill_rows,
    sync,
)
from observations.builder import BuildConfig, build_session
from observations.embed import HashEmbedder
from observations.extract.heuristic import HeuristicExtractor
from tests.events import replay, sample_events, says
from tests.lock_waits import wait_until_blocked

NOW = datetime(2025, 10, 7, tzinfo=UTC)  # after the sample's last event
T0 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
READ_MODEL_TABLES = ("user_profile", "skill_proposal", "memory_links", "consumer_checkpoint")
ACTIONS = {"superseded": "SUPERSEDE", "merged": "MERGE", "archived": "ARCHIVE", "deleted": "DELETE"}
Row = dict[str, Any]


# ------------------------------------------------------------------------------ helpers


def new_tenant() -> str:
    return f"rm-{uuid.uuid4().hex[:10]}"


def build_events(conn: Conn, tenant: str, events: list[Row]) -> None:
    """Append, close every session and build it with the heuristic extractor."""
    replay(conn, tenant, events, now=NOW)
    config = BuildConfig(extractor=HeuristicExtractor(), embedder=HashEmbedder())
    for s in list_sessions(conn, tenant):
        build_session(conn, tenant, s["id"], config, now=NOW)


class Entries:
    """Writes entries and their history rows by SQL, announced like any writer."""

    def __init__(self, conn: Conn, tenant: str) -> None:
        self.conn, self.tenant = conn, tenant

    def session(self) -> int:
        row = self.conn.execute(
            "INSERT INTO memory_sessions (tenant_id, channel_id, status, started_at,"
            " last_event_at, ended_at, opened_at, closed_at, close_reason)"
            " VALUES (%s, %s, 'built', %s, %s, %s, %s, %s, 'explicit') RETURNING id",
            [self.tenant, uuid.uuid4().hex, T0, T0, T0, T0, T0],
        ).fetchone()
        assert row is not None
        return int(row["id"])

    def add(
        self,
        owner: str,
        kind: str,
        key: str,
        fields: Row,
        *,
        hours: int = 0,
        confidence: float = 0.8,
        session: int | None = None,
    ) -> int:
        announce_entry_changes(self.conn)
        owner_type = "agent" if kind == "agent_experience" else "user"
        statement = f"{owner} {kind} {json.dumps(fields, sort_keys=True)}"
        row = self.conn.execute(
            "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
            " canonical_statement, fields, confidence, importance, valid_from, recorded_at,"
            " source_session_id, source_event_ids, updated_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 0.5, %s, %s, %s, '{1}', %s) RETURNING id",
            [
                self.tenant,
                owner_type,
                owner,
                kind,
                key,
                statement,
                Jsonb(fields),
                confidence,
                T0 + timedelta(hours=hours),
                NOW,
                session,
                NOW,
            ],
        ).fetchone()
        assert row is not None
        self._history(row["id"], "ADD", None, "active")
        return int(row["id"])

    def update(self, entry_id: int, *, key: str, fields: Row, hours: int) -> None:
        announce_entry_changes(self.conn)
        self.conn.execute(
            "UPDATE memory_entries SET key = %s, fields = fields || %s, valid_from = %s"
            " WHERE tenant_id = %s AND id = %s",
            [key, Jsonb(fields), T0 + timedelta(hours=hours), self.tenant, entry_id],
        )
        self._history(entry_id, "UPDATE", "active", "active")

    def end(self, entry_id: int, status: str) -> None:
        announce_entry_changes(self.conn)
        self.conn.execute(
            "UPDATE memory_entries SET status = %s, expired_at = %s"
            " WHERE tenant_id = %s AND id = %s",
            [status, NOW, self.tenant, entry_id],
        )
        self._history(entry_id, ACTIONS[status], "active", status)

    def _history(self, entry_id: int, action: str, old: str | None, new: str) -> None:
        self.conn.execute(
            "INSERT INTO memory_entry_history (tenant_id, entry_id, action, old_status,"
            " new_status, actor, reason, at) VALUES (%s, %s, %s, %s, %s, 'test', 'test', %s)",
            [self.tenant, entry_id, action, old, new, NOW],
        )

    def experience(
        self, agent: str, skill: str, session: int | None, *, hours: int = 0, **fields: Any
    ) -> int:
        base: Row = {"skill_key": skill, "goal": f"{skill} at {hours}", "outcome": "success"}
        base["path"] = [{"tool": "search", "args": {}}, {"tool": "book", "args": {}}]
        return self.add(
            agent,
            "agent_experience",
            f"agent_experience:{skill}",
            {**base, **fields},
            hours=hours,
            session=session,
        )


def table_rows(conn: Conn, table: str, tenant: str) -> list[Any]:
    query = sql.SQL("SELECT to_jsonb(t) AS row FROM {} t WHERE tenant_id = %s ORDER BY 1").format(
        sql.Identifier(table)
    )
    return [r["row"] for r in conn.execute(query, [tenant]).fetchall()]


def snapshot(conn: Conn, tenant: str) -> dict[str, list[Any]]:
    """Every row of the read models, their lineage and the checkpoint, as stored."""
    return {t: table_rows(conn, t, tenant) for t in READ_MODEL_TABLES}


def derived(conn: Conn, tenant: str) -> dict[str, list[Any]]:
    """The read models without system times and row ids (a rebuild from scratch renumbers
    skill proposals): what incremental application and a rebuild must agree on."""
    profile = conn.execute(
        "SELECT user_id, key, value, statement, confidence, source_entry_ids, conflicts,"
        " valid_from FROM user_profile WHERE tenant_id = %s ORDER BY user_id, key",
        [tenant],
    ).fetchall()
    skills = conn.execute(
        "SELECT agent_id, skill_key, goal, steps, failures, applies_to, evidence_count,"
        " source_entry_ids, status, reviewed_by, review_reason FROM skill_proposal"
        " WHERE tenant_id = %s ORDER BY agent_id, skill_key",
        [tenant],
    ).fetchall()
    links = conn.execute(
        "SELECT l.src_id, l.dst_type, coalesce(s.agent_id || '/' || s.skill_key, l.dst_id) AS dst"
        " FROM memory_links l LEFT JOIN skill_proposal s ON l.dst_type = 'skill_proposal'"
        "  AND s.tenant_id = l.tenant_id AND s.id::text = l.dst_id"
        " WHERE l.tenant_id = %s AND l.relation = 'projected_to' ORDER BY 1, 2, 3",
        [tenant],
    ).fetchall()
    return {"profile": profile, "skills": skills, "links": links}


def final_entries(conn: Conn, tenant: str) -> list[EntryFact]:
    rows = conn.execute("SELECT * FROM memory_entries WHERE tenant_id = %s", [tenant])
    return [EntryFact.from_row(r) for r in rows.fetchall()]


def forget_read_models(conn: Conn, tenant: str) -> None:
    for table in ("user_profile", "skill_proposal", "consumer_checkpoint"):
        conn.execute(
            sql.SQL("DELETE FROM {} WHERE tenant_id = %s").format(sql.Identifier(table)), [tenant]
        )
    conn.execute(
        "DELETE FROM memory_links WHERE tenant_id = %s AND relation = 'projected_to'", [tenant]
    )


# ------------------------------------------------------------------------ incremental = rebuild

USERS = ("maya", "tom")
KEYS = ("preference:drink", "identity:location", "goal:sail")
KINDS = ("preference", "identity", "event")
VALUES = ("tea", "Tea", "coffee", "water")


def random_change(
    rng: random.Random, entries: Entries, ids: list[int], sessions: list[int]
) -> None:
    """One add, in-place update or end (supersede, merge, archive, delete) of an entry."""
    pick = rng.random()
    if pick < 0.55 or not ids:
        session = rng.choice([*sessions, None])
        if rng.random() < 0.35:
            tools = rng.sample(["search", "search_v2", "book"], rng.randint(0, 2))
            ids.append(
                entries.experience(
                    rng.choice(["atlas", "zed"]),
                    rng.choice(["book-train", "find-flight"]),
                    session,
                    hours=rng.randint(0, 3),
                    outcome=rng.choice(["success", "failure"]),
                    path=[{"tool": t, "args": {}} for t in tools],
                    failures=[{"tool": t, "error": rng.choice(VALUES)} for t in tools[:1]],
                    applies_to=rng.sample(VALUES, 2),
                )
            )
            return
        fields = {"object": rng.choice(VALUES)}
        kind, key = rng.choice(KINDS), rng.choice(KEYS)
        owner, hours = rng.choice(USERS), rng.randint(0, 3)
        confidence = rng.choice([0.6, 0.8])
        ids.append(
            entries.add(
                owner, kind, key, fields, hours=hours, confidence=confidence, session=session
            )
        )
    elif pick < 0.8:
        entry = rng.choice(ids)
        fields = {"object": rng.choice(VALUES), "skill_key": rng.choice(["book-train", "x"])}
        entries.update(entry, key=rng.choice(KEYS), fields=fields, hours=rng.randint(0, 3))
    else:
        entries.end(rng.choice(ids), rng.choice(list(ACTIONS)))


@pytest.mark.parametrize("seed", range(12))
def test_incremental_runs_in_any_batch_split_equal_a_rebuild_from_entries(
    conn: Conn, seed: int
) -> None:
    rng = random.Random(seed)
    tenant = new_tenant()
    entries = Entries(conn, tenant)
    sessions = [entries.session() for _ in range(3)]
    ids: list[int] = []
    for _ in range(rng.randint(2, 6)):
        for _ in range(rng.randint(1, 8)):
            random_change(rng, entries, ids, sessions)
        project(conn, tenant, now=NOW)
    incremental = derived(conn, tenant)

    facts = final_entries(conn, tenant)
    assert [r["key"] for r in incremental["profile"]] == [r.key for r in profile_rows(facts)]
    assert [r["skill_key"] for r in incremental["skills"]] == [
        r.skill_key for r in skill_rows(facts)
    ]
    forget_read_models(conn, tenant)
    [stats] = rebuild(conn, tenant, now=NOW)
    assert derived(conn, tenant) == incremental
    assert stats.position == checkpoint(conn, tenant) == max_history_id(conn, tenant)


def max_history_id(conn: Conn, tenant: str) -> int:
    row = conn.execute(
        "SELECT max(id) AS id FROM memory_entry_history WHERE tenant_id = %s", [tenant]
    ).fetchone()
    assert row is not None
    return int(row["id"])


def test_running_the_runner_twice_over_the_same_changes_changes_nothing(conn: Conn) -> None:
    tenant = new_tenant()
    build_events(conn, tenant, sample_events())
    first = project(conn, tenant, now=NOW)
    assert first.changes > 0 and first.profile_rows > 0 and first.skill_rows > 0
    before = snapshot(conn, tenant)
    again = project(conn, tenant, now=NOW + timedelta(days=1))
    assert (again.changes, again.profile_rows, again.skill_rows) == (0, 0, 0)
    assert snapshot(conn, tenant) == before
    rebuild(conn, tenant, now=NOW + timedelta(days=2))  # recomputes, finds nothing to change
    assert snapshot(conn, tenant) == before


# ------------------------------------------------------------------------------ profile


def test_conflicting_profile_facts_keep_the_latest_current_and_record_the_other(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    day = datetime(2025, 9, 1, 9, tzinfo=UTC)
    build_events(
        conn,
        tenant,
        [
            says(1, "My favorite drink is black coffee.", day),
            says(2, "My favorite drink is green tea.", day + timedelta(days=20)),
        ],
    )
    project(conn, tenant, now=NOW)
    [row] = [r for r in get_profile(conn, tenant, "maya") if r.key == "preference:drink"]
    assert row.value == "green tea"
    assert row.valid_from == day + timedelta(days=20)
    assert [(c.value, c.valid_from) for c in row.conflicts] == [("black coffee", day)]
    entries = {e.id: e for e in final_entries(conn, tenant)}
    assert "green tea" in entries[row.source_entry_ids[0]].statement
    assert "black coffee" in entries[row.conflicts[0].entry_id].statement

    # A session in another time zone recomputes the same rows: nothing is rewritten.
    before = snapshot(conn, tenant)
    zone = conn.execute("SHOW TimeZone").fetchone()
    assert zone is not None
    conn.execute("SET TimeZone = 'Asia/Kolkata'")
    [stats] = rebuild(conn, tenant, now=NOW + timedelta(days=1))
    conn.execute(sql.SQL("SET TimeZone = {}").format(sql.Literal(zone["TimeZone"])))
    assert stats.profile_rows == 0 and snapshot(conn, tenant) == before


def test_an_out_of_order_older_fact_is_recorded_as_a_conflict_not_made_current(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    entries = Entries(conn, tenant)
    entries.add("maya", "identity", "identity:location", {"object": "Porto"}, hours=5)
    project(conn, tenant, now=NOW)
    late = entries.add("maya", "identity", "identity:location", {"object": "Lisbon"}, hours=1)
    again = entries.add("maya", "identity", "identity:location", {"object": "porto "}, hours=2)
    project(conn, tenant, now=NOW)
    [row] = get_profile(conn, tenant, "maya")
    assert row.value == "Porto" and len(row.source_entry_ids) == 2 and again in row.source_entry_ids
    assert [c.entry_id for c in row.conflicts] == [late]
    links = conn.execute(
        "SELECT src_id FROM memory_links WHERE tenant_id = %s AND relation = 'projected_to'"
        " AND dst_type = 'user_profile' AND dst_id = 'maya/identity:location' ORDER BY 1",
        [tenant],
    ).fetchall()
    assert [r["src_id"] for r in links] == sorted(row.entry_ids)


def test_deleting_a_users_entries_empties_that_users_profile_and_nothing_else(
    conn: Conn,
) -> None:
    tenant, other = new_tenant(), new_tenant()
    for t in (tenant, other):
        build_events(conn, t, sample_events())
        project(conn, t, now=NOW)
    before = {t: snapshot(conn, t) for t in (tenant, other)}
    maya = conn.execute(
        "SELECT id FROM memory_entries WHERE tenant_id = %s AND owner_id = 'maya'", [tenant]
    ).fetchall()
    entries = Entries(conn, tenant)
    for r in maya:
        entries.end(r["id"], "deleted")
    stats = project(conn, tenant, now=NOW + timedelta(days=1))
    assert stats.changes == len(maya) and stats.owners == 1

    after = snapshot(conn, tenant)
    assert get_profile(conn, tenant, "maya") == []
    assert get_profile(conn, other, "maya") != []
    assert snapshot(conn, other) == before[other]

    def without_maya(rows: list[Row], table: str) -> list[Row]:
        if table == "user_profile":
            return [r for r in rows if r["user_id"] != "maya"]
        if table == "memory_links":
            return [r for r in rows if not r["dst_id"].startswith("maya/")]
        return rows

    for table in ("user_profile", "skill_proposal", "memory_links"):
        assert after[table] == without_maya(before[tenant][table], table), table
    assert not any(r["dst_id"].startswith("maya/") for r in after["memory_links"])


# ------------------------------------------------------------------------------ skills


def test_a_recurring_experience_raises_evidence_instead_of_adding_a_row(conn: Conn) -> None:
    tenant = new_tenant()
    build_events(conn, tenant, sample_events())
    project(conn, tenant, now=NOW)
    skills = {s.skill_key: s for s in list_skills(conn, tenant, agent_id="atlas")}
    assert set(skills) == {"train_search_v2+book_ticket", "flight_search"}
    train = skills["train_search_v2+book_ticket"]  # asked by Maya, then by Tom
    assert train.evidence_count == 2 and len(train.source_entry_ids) == 2
    assert [s["tool"] for s in train.steps] == ["train_search_v2", "book_ticket"]
    assert {f["tool"] for f in train.failures} == {"train_search"}
    assert set(train.applies_to) == {"train_search", "train_search_v2", "book_ticket"}
    assert train.goal == "Book the user a train from {from} to {to} for {date} {time}"
    assert train.status == "proposed" and skills["flight_search"].evidence_count == 1
    linked = conn.execute(
        "SELECT src_id FROM memory_links WHERE tenant_id = %s AND relation = 'projected_to'"
        " AND dst_type = 'skill_proposal' AND dst_id = %s ORDER BY 1",
        [tenant, str(train.id)],
    ).fetchall()
    assert tuple(r["src_id"] for r in linked) == train.source_entry_ids


def test_a_rejected_skill_stays_rejected_and_new_evidence_is_recorded(conn: Conn) -> None:
    tenant = new_tenant()
    entries = Entries(conn, tenant)
    first = entries.experience("atlas", "book-train", entries.session(), hours=0)
    entries.experience("atlas", "find-flight", entries.session(), hours=0)
    project(conn, tenant, now=NOW)
    proposed = list_skills(conn, tenant, status="proposed", agent_id="atlas")
    skill = next(s for s in proposed if s.skill_key == "book-train")
    rejected = review_skill(conn, tenant, skill.id, "reject", "ops", "too narrow", now=NOW)
    assert (rejected.status, rejected.reviewed_by, rejected.review_reason) == (
        "rejected",
        "ops",
        "too narrow",
    )

    second = entries.experience("atlas", "book-train", entries.session(), hours=2)
    project(conn, tenant, now=NOW + timedelta(hours=1))
    [after] = list_skills(conn, tenant, status="rejected")
    assert after.id == skill.id and after.reviewed_at == NOW and after.goal == "book-train at 2"
    assert (after.evidence_count, after.source_entry_ids) == (2, (first, second))

    # All evidence gone: the reviewed row stays (rejected); the unreviewed one goes.
    for entry_id in (first, second):
        entries.end(entry_id, "archived")
    flight = next(s for s in list_skills(conn, tenant) if s.skill_key == "find-flight")
    entries.end(flight.source_entry_ids[0], "deleted")
    project(conn, tenant, now=NOW + timedelta(hours=2))
    [kept] = list_skills(conn, tenant)
    assert (kept.id, kept.status, kept.evidence_count, kept.source_entry_ids) == (
        skill.id,
        "rejected",
        0,
        (),
    )
    # ... and evidence that returns is recorded, the rejection still holds
    third = entries.experience("atlas", "book-train", None, hours=3)
    rebuild(conn, tenant, "skills", now=NOW + timedelta(hours=3))
    [back] = list_skills(conn, tenant, agent_id="atlas")
    assert (back.status, back.evidence_count, back.source_entry_ids) == ("rejected", 1, (third,))


def test_only_a_new_skill_takes_an_id(conn: Conn) -> None:
    """Recomputing an agent's skills, changed or not, uses up no ids: the agent's skills
    are numbered in the order they first appeared, whenever the projections ran."""
    tenant = new_tenant()
    entries = Entries(conn, tenant)
    entries.experience("atlas", "book-train", entries.session(), hours=0)
    project(conn, tenant, now=NOW)
    entries.experience("atlas", "book-train", entries.session(), hours=1)  # changes it
    project(conn, tenant, now=NOW + timedelta(hours=1))
    entries.experience("atlas", "find-flight", entries.session(), hours=2)
    project(conn, tenant, now=NOW + timedelta(hours=2))  # book-train recomputed, unchanged
    ids = {s.skill_key: s.id for s in list_skills(conn, tenant, agent_id="atlas")}
    assert ids["find-flight"] == ids["book-train"] + 1
    [train] = [s for s in list_skills(conn, tenant) if s.skill_key == "book-train"]
    assert train.evidence_count == 2 and train.goal == "book-train at 1"


def test_published_skills_are_listed_by_status_and_a_rebuild_keeps_the_review(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    build_events(conn, tenant, sample_events())
    project(conn, tenant, now=NOW)
    train = next(
        s for s in list_skills(conn, tenant) if s.skill_key == "train_search_v2+book_ticket"
    )
    review_skill(conn, tenant, train.id, "publish", "lead", None, now=NOW)
    rebuild(conn, None, now=NOW + timedelta(days=1))
    [published] = list_skills(conn, tenant, status="published")
    assert (published.id, published.reviewed_by, published.review_reason) == (
        train.id,
        "lead",
        None,
    )
    assert [s.skill_key for s in list_skills(conn, tenant, status="proposed")] == ["flight_search"]


def test_review_refuses_unknown_ids_bad_decisions_and_unnamed_reviewers(conn: Conn) -> None:
    tenant = new_tenant()
    entries = Entries(conn, tenant)
    entries.experience("atlas", "book-train", None)
    project(conn, tenant, now=NOW)
    [skill] = list_skills(conn, tenant)
    with pytest.raises(SkillNotFound, match=str(skill.id + 1000)):
        review_skill(conn, tenant, skill.id + 1000, "publish", "ops", None, now=NOW)
    with pytest.raises(InvalidReview, match="decision"):
        review_skill(conn, tenant, skill.id, "approve", "ops", None, now=NOW)  # type: ignore[arg-type]
    with pytest.raises(InvalidReview, match="reviewer"):
        review_skill(conn, tenant, skill.id, "reject", "  ", "why", now=NOW)
    with pytest.raises(InvalidSkillStatus):
        list_skills(conn, tenant, status="approved")
    with pytest.raises(UnknownReadModel):
        rebuild(conn, tenant, "skill", now=NOW)  # type: ignore[arg-type]
    assert list_skills(conn, tenant)[0].status == "proposed"


# ------------------------------------------------------------------------------ tenants


def test_tenants_see_only_their_own_profiles_and_skills(conn: Conn) -> None:
    tenant, other = new_tenant(), new_tenant()
    build_events(conn, tenant, sample_events())
    project(conn, tenant, now=NOW)
    assert project(conn, other, now=NOW).position == 0
    assert snapshot(conn, other) == {t: [] for t in READ_MODEL_TABLES}  # nothing written
    assert get_profile(conn, tenant, "maya") and list_skills(conn, tenant)
    assert get_profile(conn, other, "maya") == [] and list_skills(conn, other) == []
    skill = list_skills(conn, tenant)[0]
    with pytest.raises(SkillNotFound):
        review_skill(conn, other, skill.id, "publish", "intruder", None, now=NOW)
    with tenant_scope(conn, other):  # row-level security, even without a tenant filter
        for table in ("user_profile", "skill_proposal"):
            query = sql.SQL("SELECT count(*) AS n FROM {}").format(sql.Identifier(table))
            assert conn.execute(query).fetchone() == {"n": 0}
        assert conn.execute(
            "SELECT count(*) AS n FROM memory_links WHERE relation = 'projected_to'"
        ).fetchone() == {"n": 0}
    assert list_skills(conn, tenant)[0].status == "proposed"


def test_the_database_refuses_inconsistent_read_model_rows(conn: Conn) -> None:
    tenant = new_tenant()
    bad = [
        "INSERT INTO user_profile (tenant_id, user_id, key, value, statement, confidence,"
        " source_entry_ids, valid_from, updated_at)"
        " VALUES (%(t)s, 'maya', 'k', 'v', 's', 0.5, '{}', %(now)s, %(now)s)",
        "INSERT INTO skill_proposal (tenant_id, agent_id, skill_key, goal, evidence_count,"
        " source_entry_ids, created_at, updated_at)"
        " VALUES (%(t)s, 'atlas', 'k', 'g', 2, '{1}', %(now)s, %(now)s)",
        "INSERT INTO skill_proposal (tenant_id, agent_id, skill_key, goal, status,"
        " created_at, updated_at) VALUES (%(t)s, 'atlas', 'k', 'g', 'rejected', %(now)s, %(now)s)",
    ]
    for query in bad:
        with pytest.raises(psycopg.errors.CheckViolation), conn.transaction():
            conn.execute(query, {"t": tenant, "now": NOW})


def test_a_review_during_a_recomputation_is_kept_or_refused_never_lost(
    fresh_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = new_tenant()
    with connect(fresh_db_url, autocommit=True) as a, connect(fresh_db_url, autocommit=True) as b:
        with a.transaction():
            entries = Entries(a, tenant)
            experience = entries.experience("atlas", "book-train", entries.session())
        project(a, tenant, now=NOW)
        [proposal] = list_skills(a, tenant)
        with a.transaction():
            entries.end(experience, "deleted")  # its evidence is gone: the runner drops it
        planned = threading.Event()
        real_plan = sync.plan_skills
        projecting_pid, reviewing_pid = a.info.backend_pid, b.info.backend_pid

        def plan_then_await_the_review(*args: Any) -> Any:
            out = real_plan(*args)
            planned.set()
            # the review arrives now, between the plan and its writes, and waits for them
            wait_until_blocked(fresh_db_url, reviewing_pid, by=projecting_pid)
            return out

        monkeypatch.setattr(sync, "plan_skills", plan_then_await_the_review)
        with ThreadPoolExecutor(1) as pool:
            projecting = pool.submit(project, a, tenant, now=NOW + timedelta(minutes=1))
            assert planned.wait(10)
            with pytest.raises(SkillNotFound):  # it waited, and the proposal was gone
                review_skill(b, tenant, proposal.id, "reject", "lead", None, now=NOW)
            projecting.result(10)
        assert list_skills(a, tenant) == []


def test_retention_leaves_skill_evidence_as_it_was(conn: Conn) -> None:
    tenant = new_tenant()
    entries = Entries(conn, tenant)
    session = entries.session()
    for hours in range(3):  # three experiences of one session, stamped as the builder does
        entries.experience("atlas", "book-train", session, hours=hours, origin_session_id=session)
    project(conn, tenant, now=NOW)
    assert [s.evidence_count for s in list_skills(conn, tenant)] == [1]
    conn.execute(  # what retention does to an entry whose session it deletes
        "UPDATE memory_entries SET source_session_id = NULL WHERE tenant_id = %s", [tenant]
    )
    rebuild(conn, tenant, now=NOW)
    assert [s.evidence_count for s in list_skills(conn, tenant)] == [1]
