"""The digest job on a real PostgreSQL: digests written with their links, history and
provenance, a second run a no-op, a digest archived the moment one of its facts is
superseded and gathered again without it, a deleted digest left deleted, other owners and
tenants untouched.

Facts are inserted with vectors made for the purpose (what every fact of the owner shares,
plus a direction per topic), so the topics are known; the digests' own vectors come from
the hash embedder. Each test runs in a rolled-back transaction with ``now`` given.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from consolidation import ConsolidationConfig, JobScope, entry_record, point_window, run_job
from ledger.db import Conn, tenant_scope
from observations.edits import delete_owner_entries
from observations.embed import HashEmbedder
from observations.history import HistoryRow, write_history
from retrieval.search import Scope, search

NOW = datetime(2025, 10, 7, tzinfo=UTC)
T0 = datetime(2025, 9, 1, 9, 0, tzinfo=UTC)
EMBEDDER = HashEmbedder()
CONFIG = ConsolidationConfig(embedder=EMBEDDER)
RUNS = itertools.count()
EVENTS = itertools.count(1000)

HIKES = ("Maya hiked Mount Tam.", "Maya hiked the Dipsea trail.", "Maya hikes every Sunday.")
POTTERY = ("Maya threw a bowl.", "Maya glazed two mugs.", "Maya signed up for a pottery class.")


def add_fact(
    conn: Conn, tenant: str, owner: str, statement: str, topic: int, day: int, by: str = ""
) -> int:
    """An active experience of ``owner`` on ``topic``, from one event of its own (written
    by ``by``, else by the owner), added as the builder adds one (with its history row:
    the change feed the job follows)."""
    vector = np.zeros(EMBEDDER.dim, dtype=np.float32)
    vector[0], vector[1 + topic] = 3.0, 1.0
    vector += np.random.default_rng(day * 7 + topic).normal(0, 0.05, EMBEDDER.dim)
    event = next(EVENTS)
    with tenant_scope(conn, tenant):
        row = conn.execute(
            "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
            " canonical_statement, fields, embedding, embedding_model, confidence, importance,"
            " valid_from, recorded_at, source_event_ids, source_external_ids, updated_at)"
            " VALUES (%s, 'user', %s, 'experience', %s, %s, %s, %s::halfvec, %s, 0.8, 0.5,"
            " %s, %s, %s, %s, %s) RETURNING id",
            [tenant, owner, f"experience:{event}", statement,
             Jsonb({"owner_name": "Maya", "source_actor_ids": [by or owner]}),
             "[" + ",".join(repr(float(x)) for x in vector) + "]", EMBEDDER.model,
             T0 + timedelta(days=day), NOW, [event], [f"D{event}"], NOW],
        ).fetchone()  # fmt: skip
        assert row is not None
        history = [HistoryRow(row["id"], "ADD", None, statement, None, "active", None)]
        write_history(conn, {"tenant_id": tenant, "now": NOW}, history, "builder")
    return int(row["id"])


def seeded(conn: Conn, owner: str = "maya") -> tuple[str, list[int], list[int]]:
    tenant = f"dig-{uuid.uuid4().hex[:10]}"
    hikes = [add_fact(conn, tenant, owner, s, 0, day) for day, s in enumerate(HIKES)]
    pottery = [add_fact(conn, tenant, owner, s, 1, day + 10) for day, s in enumerate(POTTERY)]
    return tenant, hikes, pottery


def run(conn: Conn, tenant: str, *, full: bool = False, now: datetime = NOW) -> dict[str, Any]:
    window = point_window(now + timedelta(microseconds=next(RUNS)))
    outcome = run_job(
        conn, "digest", CONFIG, JobScope(now, tenant, full), window=window, clock=lambda: now
    )
    assert outcome.status == "done"
    return outcome.stats


def digests(conn: Conn, tenant: str, status: str = "active") -> list[dict[str, Any]]:
    with tenant_scope(conn, tenant):
        return conn.execute(
            "SELECT d.*, ARRAY(SELECT l.dst_id::bigint FROM memory_links l WHERE"
            " l.tenant_id = d.tenant_id AND l.src_id = d.id AND l.relation = 'collects'"
            " ORDER BY 1) AS facts FROM memory_entries d"
            " WHERE d.tenant_id = %s AND d.kind = 'digest' AND d.status = %s ORDER BY d.id",
            [tenant, status],
        ).fetchall()


def test_an_owners_facts_are_gathered_by_topic_with_their_provenance(conn: Conn) -> None:
    tenant, hikes, pottery = seeded(conn)
    add_fact(conn, tenant, "tom", "Tom hiked Mount Tam.", 0, 1)  # another owner's: alone
    stats = run(conn, tenant)
    assert stats["written"] == 2 and stats["archived"] == 0
    first, second = digests(conn, tenant)
    assert (first["facts"], second["facts"]) == (hikes, pottery)
    assert first["canonical_statement"] == " ".join(HIKES)  # in time order
    assert first["owner_id"] == "maya" and first["source_session_id"] is None
    assert first["source_external_ids"] == [f"D{e}" for e in first["source_event_ids"]]
    assert len(first["source_event_ids"]) == 3
    assert first["valid_from"] == T0 + timedelta(days=2)  # its latest fact's time
    assert first["embedding_model"] == EMBEDDER.model
    assert first["fields"] == {"facts": 3, "owner_name": "Maya", "source_actor_ids": ["maya"]}
    [(action, actor, reason)] = [
        (c["action"], c["actor"], c["reason"])
        for c in entry_record(conn, tenant, first["id"]).changes
    ]
    assert (action, actor) == ("ADD", "consolidation:digest")
    assert reason == "collects entries " + ", ".join(map(str, hikes))
    found = search(conn, Scope(tenant, user_id="maya"), "hiked", embedder=EMBEDDER, now=NOW)
    assert first["id"] in {r.candidate.entry_id for r in found}


def test_a_second_run_incremental_or_full_changes_nothing(conn: Conn) -> None:
    tenant, _, _ = seeded(conn)
    run(conn, tenant)
    before = digests(conn, tenant)
    assert run(conn, tenant)["written"] == 0
    again = run(conn, tenant, full=True)
    assert (again["written"], again["archived"]) == (0, 0)
    assert [d["id"] for d in digests(conn, tenant)] == [d["id"] for d in before]


def test_a_superseded_fact_archives_its_digest_at_once_and_the_next_run_leaves_it_out(
    conn: Conn,
) -> None:
    tenant, hikes, _ = seeded(conn)
    fourth = add_fact(conn, tenant, "maya", "Maya hiked Half Dome.", 0, 5)
    run(conn, tenant)
    [old] = [d for d in digests(conn, tenant) if fourth in d["facts"]]
    later = NOW + timedelta(hours=1)
    with tenant_scope(conn, tenant):  # what supersede does to a fact
        conn.execute(
            "UPDATE memory_entries SET status = 'superseded', expired_at = %s, updated_at = %s"
            " WHERE tenant_id = %s AND id = %s",
            [later, later, tenant, hikes[0]],
        )
        row = HistoryRow(hikes[0], "SUPERSEDE", HIKES[0], HIKES[0], "active", "superseded", "")
        write_history(conn, {"tenant_id": tenant, "now": later}, [row], "consolidation:supersede")
    [archived] = digests(conn, tenant, "archived")
    assert archived["id"] == old["id"] and archived["expired_at"] == later
    changes = entry_record(conn, tenant, old["id"]).changes
    assert [(c["action"], c["actor"]) for c in changes][-1] == ("ARCHIVE", "consolidation:digest")
    assert f"collected entry {hikes[0]} changed (superseded)" == changes[-1]["reason"]
    assert run(conn, tenant, now=later)["written"] == 1
    [new] = [d for d in digests(conn, tenant) if fourth in d["facts"]]
    assert new["facts"] == [*hikes[1:], fourth]
    assert HIKES[0] not in new["canonical_statement"]


def test_a_rewritten_statement_is_gathered_again(conn: Conn) -> None:
    tenant, hikes, _ = seeded(conn)
    run(conn, tenant)
    with tenant_scope(conn, tenant):  # what an edit through the API does
        conn.execute(
            "UPDATE memory_entries SET canonical_statement = 'Maya hiked Mount Diablo.'"
            " WHERE tenant_id = %s AND id = %s",
            [tenant, hikes[0]],
        )
        row = HistoryRow(hikes[0], "UPDATE", HIKES[0], "Maya hiked Mount Diablo.", "active",
                         "active", None)  # fmt: skip
        write_history(conn, {"tenant_id": tenant, "now": NOW}, [row], "api:test")
    assert len(digests(conn, tenant, "archived")) == 1
    run(conn, tenant)
    [hiking] = [d for d in digests(conn, tenant) if d["facts"] == hikes]
    assert hiking["canonical_statement"].startswith("Maya hiked Mount Diablo.")


def test_forgetting_the_author_of_one_fact_deletes_the_digest_that_repeats_it(
    conn: Conn,
) -> None:
    """A friend's claim is the friend's words: forgetting the friend deletes it, and the
    digest that repeats it goes with it (not archived with the words kept)."""
    tenant, hikes, _ = seeded(conn)
    told = add_fact(conn, tenant, "maya", "Maya hiked Half Dome.", 0, 5, by="tom")
    run(conn, tenant)
    [hiking] = [d for d in digests(conn, tenant) if told in d["facts"]]
    assert hiking["fields"]["source_actor_ids"] == ["maya", "tom"]
    delete_owner_entries(conn, tenant, "user", "tom", actor="api:test", now=NOW)
    assert [d["id"] for d in digests(conn, tenant, "deleted")] == [hiking["id"]]
    run(conn, tenant)
    assert all(told not in d["facts"] for d in digests(conn, tenant))
    assert [d["facts"] for d in digests(conn, tenant) if set(d["facts"]) & set(hikes)] == [hikes]


def test_a_deleted_digest_is_not_written_again(conn: Conn) -> None:
    tenant, hikes, _ = seeded(conn)
    run(conn, tenant)
    [hiking] = [d for d in digests(conn, tenant) if d["facts"] == hikes]
    with tenant_scope(conn, tenant):
        conn.execute(
            "UPDATE memory_entries SET status = 'deleted' WHERE tenant_id = %s AND id = %s",
            [tenant, hiking["id"]],
        )
    assert run(conn, tenant, full=True)["written"] == 0
    assert [d["facts"] for d in digests(conn, tenant)] != [hikes]


def test_another_tenants_facts_are_never_gathered(conn: Conn) -> None:
    tenant, _, _ = seeded(conn)
    other, _, _ = seeded(conn)
    run(conn, tenant)
    assert digests(conn, other) == []
    facts = {f for d in digests(conn, tenant) for f in d["facts"]}
    with tenant_scope(conn, tenant):
        owned = conn.execute(
            "SELECT count(*) AS n FROM memory_entries WHERE tenant_id = %s AND id = ANY(%s)",
            [tenant, sorted(facts)],
        ).fetchone()
    assert owned is not None and owned["n"] == len(facts)


def test_without_an_embedder_the_job_does_nothing(conn: Conn) -> None:
    tenant, _, _ = seeded(conn)
    window = point_window(NOW + timedelta(microseconds=next(RUNS)))
    outcome = run_job(
        conn, "digest", ConsolidationConfig(), JobScope(NOW, tenant), window=window,
        clock=lambda: NOW,
    )  # fmt: skip
    assert outcome.stats == {"tenants": 0, "skipped_without_embedder": 1}
    assert digests(conn, tenant) == []
