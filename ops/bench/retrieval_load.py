"""Loading the retrieval benchmark's database: synthetic entries by COPY, indexes after.

The users' entry counts are Zipf-like (:func:`ops.bench.synthetic.skewed_counts`) and each
user's entries are spread through the table in session-sized bursts. Every secondary index
of ``memory_entries`` is dropped before the COPY and rebuilt after it (the HNSW index timed
on its own; the owners' own HNSW indexes are left to consolidation's ``owner_indexes``
job, :func:`owner_indexes`), then the table is vacuumed and analyzed, as autovacuum would
have done on a live database. Half of the users (every other rank) get a small profile.
Every user also takes part in sessions whose summaries are channel entries (one per
``SUMMARY_EVERY`` of the user's entries, at least one), as builds write them, and the
agent ``AGENT`` learnt as many experiences from each user: a user's scope holds the
summaries, and with the agent, those experiences too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
from psycopg import sql

from consolidation.owner_indexes import OwnerIndexPolicy, run_owner_indexes
from ledger.db import Conn
from ledger.owner_indexes import PREFIX
from observations.embed import Embedder
from ops.bench import statements
from ops.bench.synthetic import Pool, copy_entries, entry_rows, interleaved

TENANT = "bench"
START = datetime(2024, 10, 1, tzinfo=UTC)
SEED = 7
_PROFILE_KEYS = ("home_city", "job", "favourite_food", "morning_drink", "sport", "pet")
SUMMARY_EVERY = 25  # a user's entries per session summary (a LoCoMo session's build: 25)
AGENT = "assistant"  # the agent every user talks to


@dataclass(frozen=True, slots=True)
class LoadFigures:
    pool_statements: int
    pool_embed_s: float
    rows: int
    copy_s: float
    profile_rows: int
    indexes_s: float  # the btree and GIN indexes
    hnsw_s: float
    vacuum_analyze_s: float


def user_id(rank: int) -> str:
    """The id of the user with the ``rank``-th most entries (1 = the largest)."""
    return f"user-{rank:05d}"


def summaries(entries: int) -> int:
    """How many session summaries name a user with ``entries`` entries as a participant
    (and how many experiences the agent learnt from them)."""
    return -(-entries // SUMMARY_EVERY)


def holds(conn: Conn, counts: list[int]) -> bool:
    """Whether the database already holds exactly these users, entries, summaries and
    experiences, indexed."""
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE owner_type = 'user') AS n,"
        " count(DISTINCT owner_id) FILTER (WHERE owner_type = 'user') AS users,"
        " count(*) FILTER (WHERE owner_id = %s) AS largest,"
        " count(*) FILTER (WHERE owner_type = 'channel') AS summaries,"
        " count(*) FILTER (WHERE owner_type = 'agent') AS experiences"
        " FROM memory_entries WHERE tenant_id = %s",
        [user_id(1), TENANT],
    ).fetchone()
    index = conn.execute(
        "SELECT 1 FROM pg_indexes WHERE indexname = 'memory_entries_embedding_minilm'"
    ).fetchone()
    sessions = sum(map(summaries, counts))  # each a summary and an experience
    return (
        row is not None
        and index is not None
        and (row["n"], row["users"], row["largest"], row["summaries"], row["experiences"])
        == (sum(counts), len(counts), counts[0], sessions, sessions)
    )


def embed_pool(embedder: Embedder, size: int) -> tuple[Pool, float]:
    """``size`` distinct statements embedded with ``embedder``, and the seconds it took."""
    texts = statements.statements(size, seed=SEED)
    t = time.perf_counter()
    vectors = embedder.embed(texts)
    return Pool(texts, vectors, embedder.model), time.perf_counter() - t


def load(
    conn: Conn, counts: list[int], embedder: Embedder, *, pool_size: int, work_mem: str
) -> LoadFigures:
    """Replace the tenant's entries and profiles with a fresh synthetic load."""
    pool, pool_s = embed_pool(embedder, pool_size)
    conn.execute("TRUNCATE memory_entries, memory_channel_participants, user_profile CASCADE")
    indexes = _secondary_indexes(conn)
    for name in indexes:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    indexes = {n: d for n, d in indexes.items() if not n.startswith(PREFIX)}
    owners = [(user_id(rank), n) for rank, n in enumerate(counts, 1)]
    t = time.perf_counter()
    rows = copy_entries(
        conn, entry_rows(TENANT, interleaved(owners, seed=SEED), pool, start=START, seed=SEED)
    )
    sessions = list(interleaved([(user, summaries(n)) for user, n in owners], seed=SEED))
    for made in (
        entry_rows(TENANT, sessions, pool, start=START, seed=SEED + 2, summaries=True),
        entry_rows(TENANT, sessions, pool, start=START, seed=SEED + 3, agent=AGENT),
    ):
        rows += copy_entries(conn, made)
    copy_s = time.perf_counter() - t
    profiles = _load_profiles(conn, len(counts))
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(work_mem)))
    hnsw = {n: d for n, d in indexes.items() if " USING hnsw " in d}
    t = time.perf_counter()
    for definition in (d for n, d in indexes.items() if n not in hnsw):
        conn.execute(definition.encode())
    indexes_s = time.perf_counter() - t
    for definition in hnsw.values():
        conn.execute(definition.encode())
    hnsw_s = time.perf_counter() - t - indexes_s
    t = time.perf_counter()
    conn.execute("VACUUM ANALYZE memory_entries")
    conn.execute("VACUUM ANALYZE user_profile")
    vacuum_s = time.perf_counter() - t
    conn.execute("RESET maintenance_work_mem")
    return LoadFigures(
        len(pool.statements), pool_s, rows, copy_s, profiles, indexes_s, hnsw_s, vacuum_s
    )


def _secondary_indexes(conn: Conn) -> dict[str, str]:
    """Name → definition of every index of memory_entries that backs no constraint."""
    rows = conn.execute(
        "SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition"
        "  FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
        " WHERE x.indrelid = 'memory_entries'::regclass"
        "   AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)"
    ).fetchall()
    return {r["name"]: r["definition"] for r in rows}


def _load_profiles(conn: Conn, users: int) -> int:
    """A six-key profile for every other user (odd ranks), so bundles show both cases."""
    pool = statements.statements(len(_PROFILE_KEYS) * 50, seed=SEED + 1)
    rows = [
        (TENANT, user_id(rank), key, f"value {rank}-{k}", pool[(rank * 7 + k) % len(pool)], 0.9,
         [rank * 10 + k], START + timedelta(days=k), START + timedelta(days=k))
        for rank in range(1, users + 1, 2)
        for k, key in enumerate(_PROFILE_KEYS)
    ]  # fmt: skip
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO user_profile (tenant_id, user_id, key, value, statement, confidence,"
            " source_entry_ids, valid_from, updated_at)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            rows,
        )
    return len(rows)


@dataclass(frozen=True, slots=True)
class OwnerIndexFigures:
    min_entries: int
    indexes: int
    built: int
    seconds: float


def owner_indexes(conn: Conn, policy: OwnerIndexPolicy) -> OwnerIndexFigures:
    """The owners' own HNSW indexes, as the ``owner_indexes`` job keeps them (built now
    if missing; timed)."""
    t = time.perf_counter()
    stats = run_owner_indexes(conn, TENANT, policy=policy)
    seconds = time.perf_counter() - t
    return OwnerIndexFigures(policy.min_entries, stats["indexes"], stats["created"], seconds)


@dataclass(frozen=True, slots=True)
class CacheFigures:
    shared_buffers_mib: float
    relations_mib: float  # memory_entries with its TOAST table and indexes
    prewarmed: bool


def prewarm(conn: Conn) -> CacheFigures:
    """Read memory_entries, its TOAST table and its indexes into shared buffers (as much as
    fits), as a live server's cache would hold them, so the first queries do not measure
    cold reads. Without the pg_prewarm extension nothing is read."""
    shared = conn.execute(
        "SELECT setting::bigint * current_setting('block_size')::bigint AS n"
        " FROM pg_settings WHERE name = 'shared_buffers'"
    ).fetchone()
    rels = [
        r["rel"]
        for r in conn.execute(
            "SELECT c.oid::regclass::text AS rel FROM pg_class c, pg_class t"
            " WHERE t.oid = 'memory_entries'::regclass"
            "   AND (c.oid IN (t.oid, t.reltoastrelid)"
            "        OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = t.oid))"
            " ORDER BY pg_relation_size(c.oid)"
        )
    ]
    size = conn.execute(
        "SELECT sum(pg_relation_size(r::regclass)) AS n FROM unnest(%s::text[]) AS r", [rels]
    ).fetchone()
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    except psycopg.Error:
        prewarmed = False
    else:
        for rel in rels:
            conn.execute("SELECT pg_prewarm(%s::regclass)", [rel])
        prewarmed = True
    return CacheFigures(
        float(shared["n"] if shared else 0) / 2**20,
        float(size["n"] if size else 0) / 2**20,
        prewarmed,
    )
