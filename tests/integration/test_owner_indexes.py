"""Owners' own HNSW indexes on real PostgreSQL: the job builds one for each large owner,
search walks it, a tenant's run touches its own indexes only, and an owner that shrinks
loses its index."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from consolidation.owner_indexes import OwnerIndexPolicy, run_owner_indexes
from ledger.db import Conn, connect
from ledger.owner_indexes import LEARNT, PARTICIPANT, PREFIX, learnt_owner, owner_index_name
from observations.embed_local import ROWS_MODEL_NAME
from ops.bench.synthetic import Pool, copy_entries, entry_rows
from retrieval.search import Filters, Scope, vector_search
from retrieval.types import Candidate
from tests.integration.test_retrieval import PoolEmbedder

NOW = datetime(2025, 10, 7, tzinfo=UTC)
MODEL = ROWS_MODEL_NAME


def _pool(n: int = 120) -> Pool:
    gen = np.random.default_rng(7)
    vectors = gen.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Pool([f"statement {i} on topic {i % 11}" for i in range(n)], vectors, MODEL)


@pytest.fixture
def db(fresh_db_url: str) -> Iterator[tuple[Conn, Pool]]:
    """t1: "big" with 600 entries, "mid" with 300, "small" with 20; t2: "big" with 500."""
    pool = _pool()
    start = NOW - timedelta(days=100)
    with connect(fresh_db_url, autocommit=True) as c:
        owners = [("big", 600), ("mid", 300), ("small", 20)]
        copy_entries(c, entry_rows("t1", owners, pool, start=start, seed=1))
        copy_entries(c, entry_rows("t2", [("big", 500)], pool, start=start, seed=2))
        c.execute("ANALYZE memory_entries")
        yield c, pool


def _indexes(conn: Conn) -> dict[str, bool]:
    rows = conn.execute(
        "SELECT c.relname, x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
        " WHERE c.relname LIKE %s",
        [f"{PREFIX}%"],
    )
    return {r["relname"]: r["indisvalid"] for r in rows}


def _name(tenant: str, owner: str) -> str:
    return owner_index_name(tenant, "user", owner, MODEL)


def _scans(conn: Conn, name: str) -> int:
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s", [name]
    ).fetchone()
    return int(row["idx_scan"]) if row else -1


def test_large_owners_get_an_index_of_their_own_and_search_walks_it(
    db: tuple[Conn, Pool],
) -> None:
    conn, pool = db
    stats = run_owner_indexes(conn, None, policy=OwnerIndexPolicy(min_entries=400))
    assert stats == {"indexes": 2, "created": 2, "dropped": 0}
    assert _indexes(conn) == {_name("t1", "big"): True, _name("t2", "big"): True}
    comment = conn.execute(
        "SELECT obj_description(to_regclass(%s), 'pg_class') AS c", [_name("t1", "big")]
    ).fetchone()
    assert comment is not None and '"owner_id": "big"' in comment["c"]

    def search(owner: str, k: int, *, plan: str) -> list[Candidate]:
        # so few rows would be read and sorted: ordered by distance, they must come from
        # an HNSW index (the planner takes the smaller one) or, with no index scans, from
        # an exact sort
        with conn.transaction():
            conn.execute(f"SET LOCAL {plan} = off")
            if plan == "enable_sort":
                conn.execute("SET LOCAL enable_seqscan = off")
            return vector_search(conn, Scope("t1", owner), pool.vectors[4], embedder=embedder, k=k)

    embedder = PoolEmbedder(pool)
    before = _scans(conn, _name("t1", "big"))
    hits = search("big", 20, plan="enable_sort")
    assert _scans(conn, _name("t1", "big")) == before + 1
    assert len(hits) == 20 and {h.owner_id for h in hits} == {"big"}
    assert hits[0].statement.startswith(pool.statements[4] + " (")
    exact = search("big", 20, plan="enable_indexscan")
    assert [h.entry_id for h in hits] == [h.entry_id for h in exact]
    # a small owner is ranked exactly, and never through another owner's index
    small = search("small", 50, plan="enable_sort")
    assert len(small) == 20 and {h.owner_id for h in small} == {"small"}
    assert _scans(conn, _name("t1", "big")) == before + 1

    again = run_owner_indexes(conn, None, policy=OwnerIndexPolicy(min_entries=400))
    assert again == {"indexes": 2, "created": 0, "dropped": 0}
    # the owner's entries deleted before the next run: its index is still there, and empty
    with conn.transaction(force_rollback=True):
        conn.execute("DELETE FROM memory_entries WHERE tenant_id = 't1' AND owner_id = 'big'")
        assert search("big", 20, plan="enable_sort") == []


def test_a_user_in_many_sessions_gets_an_index_of_the_channel_entries_naming_them(
    db: tuple[Conn, Pool],
) -> None:
    """ "mid" (300 entries of their own) took part in 450 sessions, each summarized in a
    channel of its own: those summaries get an index, which the search of mid's scope
    walks for that part, to the same results as ranked exactly."""
    conn, pool = db
    start = NOW - timedelta(days=100)
    copy_entries(conn, entry_rows("t1", [("mid", 450)], pool, start=start, seed=3, summaries=True))
    conn.execute("ANALYZE memory_entries")
    stats = run_owner_indexes(conn, "t1", policy=OwnerIndexPolicy(min_entries=400))
    assert stats == {"indexes": 2, "created": 2, "dropped": 0}
    participant = owner_index_name("t1", PARTICIPANT, "mid", MODEL)
    assert _indexes(conn) == {_name("t1", "big"): True, participant: True}

    def search(k: int, *, plan: str) -> list[Candidate]:
        with conn.transaction():
            conn.execute(f"SET LOCAL {plan} = off")
            return vector_search(conn, Scope("t1", "mid"), pool.vectors[5], embedder=embedder, k=k)

    embedder = PoolEmbedder(pool)
    before = _scans(conn, participant)
    hits = search(40, plan="enable_sort")
    assert _scans(conn, participant) == before + 1
    assert {h.owner_type for h in hits} == {"user", "channel"}
    assert all(h.fields["participant_ids"] == ["mid"] for h in hits if h.owner_type == "channel")
    exact = search(40, plan="enable_indexscan")
    assert [h.entry_id for h in hits] == [h.entry_id for h in exact]
    assert len(search(1000, plan="enable_indexscan")) == 300 + 450
    # with history: the part's active entries through its index, the others exactly
    conn.execute(
        "UPDATE memory_entries SET status = 'superseded' WHERE id = %s", [exact[0].entry_id]
    )
    history = vector_search(
        conn, Scope("t1", "mid"), pool.vectors[5], embedder=embedder, k=40,
        filters=Filters(history=True),
    )  # fmt: skip
    assert [h.entry_id for h in history] == [h.entry_id for h in exact]
    assert _scans(conn, participant) == before + 2


def test_a_users_channel_entries_get_their_index_at_half_the_line(
    db: tuple[Conn, Pool],
) -> None:
    """Searched beside the user's own entries, the 450 channel entries naming "mid" get an
    index at a line of 700, which no user of 600 reaches, and keep it down to half their
    own line; owners below their line without an index take no room under the cap."""
    conn, pool = db
    start = NOW - timedelta(days=100)
    copy_entries(conn, entry_rows("t1", [("mid", 450)], pool, start=start, seed=3, summaries=True))
    conn.execute("ANALYZE memory_entries")
    participant = owner_index_name("t1", PARTICIPANT, "mid", MODEL)
    for line, indexes in [(700, {participant}), (1600, {participant}), (2000, set())]:
        run_owner_indexes(conn, None, policy=OwnerIndexPolicy(min_entries=line, max_indexes=2))
        assert set(_indexes(conn)) == indexes, line


def test_a_user_with_a_large_agent_gets_every_entry_the_agent_learnt_from_them(
    db: tuple[Conn, Pool],
) -> None:
    """Atlas learnt 900 entries: 3 from Ada, 430 from Bo, the rest from others. It has an
    index of its own, which serves its scope alone; what it learnt from Bo has one too,
    which Bo's scope with Atlas walks; Ada's 3 are ranked exactly (a filtered walk of
    Atlas's graph could stop before finding them)."""
    conn, pool = db
    start = NOW - timedelta(days=100)

    def rows() -> Iterator[tuple[object, ...]]:
        for n, row in enumerate(entry_rows("t1", [("atlas", 900)], pool, start=start, seed=4)):
            learnt = "ada" if n < 3 else "bo" if n < 433 else f"user-{n}"
            fields = Jsonb({"source_actor_ids": [learnt, "atlas"]})
            yield (*row[:1], "agent", *row[2:6], fields, *row[7:])

    copy_entries(conn, rows())
    conn.execute("ANALYZE memory_entries")
    run_owner_indexes(conn, "t1", policy=OwnerIndexPolicy(min_entries=400))
    atlas = owner_index_name("t1", "agent", "atlas", MODEL)
    bo = owner_index_name("t1", LEARNT, learnt_owner("atlas", "bo"), MODEL)
    assert set(_indexes(conn)) == {_name("t1", "big"), atlas, bo}
    embedder = PoolEmbedder(pool)

    def search(scope: Scope, plan: str = "enable_sort") -> list[Candidate]:
        with conn.transaction():
            conn.execute(f"SET LOCAL {plan} = off")  # enable_sort: an index that orders
            return vector_search(conn, scope, pool.vectors[6], embedder=embedder)

    def learnt(hits: list[Candidate]) -> set[str]:
        return {h.fields["source_actor_ids"][0] for h in hits if h.owner_type == "agent"}

    before = {name: _scans(conn, name) for name in (atlas, bo)}
    assert len(search(Scope("t1", agent_id="atlas"))) == 50
    assert _scans(conn, atlas) == before[atlas] + 1
    hers = search(Scope("t1", "ada", "atlas"))
    assert len(hers) == 3 and learnt(hers) == {"ada"}
    his = search(Scope("t1", "bo", "atlas"))
    assert len(his) == 50 and learnt(his) == {"bo"}
    assert [_scans(conn, name) for name in (atlas, bo)] == [before[atlas] + 1, before[bo] + 1]
    exact = search(Scope("t1", "bo", "atlas"), plan="enable_indexscan")
    assert [h.entry_id for h in his] == [h.entry_id for h in exact]


def test_the_largest_owners_come_first_when_indexes_are_capped(db: tuple[Conn, Pool]) -> None:
    conn, _ = db
    policy = OwnerIndexPolicy(min_entries=250, max_indexes=2)
    assert run_owner_indexes(conn, "t2", policy=policy)["created"] == 1
    # the cap is across tenants: t2's index leaves t1 room for one, its largest owner
    assert run_owner_indexes(conn, "t1", policy=policy)["created"] == 1
    assert run_owner_indexes(conn, None, policy=policy)["created"] == 0
    assert set(_indexes(conn)) == {_name("t1", "big"), _name("t2", "big")}


def test_an_owner_keeps_its_index_until_it_falls_below_half_the_line(
    db: tuple[Conn, Pool],
) -> None:
    conn, _ = db
    policy = OwnerIndexPolicy(min_entries=400)
    run_owner_indexes(conn, None, policy=policy)

    def keep(tenant: str, n: int) -> None:
        conn.execute(
            "DELETE FROM memory_entries WHERE tenant_id = %s AND owner_id = 'big' AND id NOT IN"
            " (SELECT id FROM memory_entries WHERE tenant_id = %s AND owner_id = 'big'"
            "  ORDER BY id LIMIT %s)",
            [tenant, tenant, n],
        )

    keep("t1", 250)  # under the line, over half of it: kept
    keep("t2", 150)  # under half: dropped, but not by a run for t1 alone
    stats = run_owner_indexes(conn, "t1", policy=policy)
    assert stats == {"indexes": 1, "created": 0, "dropped": 0}
    assert set(_indexes(conn)) == {_name("t1", "big"), _name("t2", "big")}
    stats = run_owner_indexes(conn, None, policy=policy)
    assert stats == {"indexes": 1, "created": 0, "dropped": 1}
    assert set(_indexes(conn)) == {_name("t1", "big")}
    off = run_owner_indexes(conn, None, policy=OwnerIndexPolicy(min_entries=0))
    assert off == {"indexes": 0, "created": 0, "dropped": 1} and _indexes(conn) == {}


def test_a_build_that_failed_leaves_an_invalid_index_which_the_next_run_builds_again(
    db: tuple[Conn, Pool], fresh_db_url: str
) -> None:
    conn, _ = db
    policy = OwnerIndexPolicy(min_entries=550, build_wait=timedelta(milliseconds=200))
    with connect(fresh_db_url) as other:  # a writer older than the build, left open
        other.execute("UPDATE memory_entries SET importance = importance WHERE id = 1")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            run_owner_indexes(conn, None, policy=policy)
    assert _indexes(conn) == {_name("t1", "big"): False}
    stats = run_owner_indexes(conn, None, policy=policy)
    assert stats == {"indexes": 1, "created": 1, "dropped": 1}
    assert _indexes(conn) == {_name("t1", "big"): True}
