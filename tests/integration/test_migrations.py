"""The numbered migrations (ledger/migrations/): a database upgraded from the baseline ends
up exactly as a fresh install, with its data; an upgrade is applied once, however many
processes run it; a database of the older digest mechanism is adopted."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from ledger import DatabasePredatesMigrations, append
from ledger.db import Conn, apply_schema, connect
from ledger.migrations import LEGACY_SCHEMA_DIGEST, migrations, pending, upgrade
from observations.embed_local import LOCAL_MODELS
from observations.embed_models import read_model, record_read_model
from observations.extract.base import KINDS
from ops.services import drop_database, recreate_database
from tests.events import message

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 10, tzinfo=UTC)
LATEST = [m.version for m in migrations()]

# The schema's objects, each rendered by the server, so two databases can be compared.
# Objects of extensions (pgvector's functions and types) are left out.
_NOT_EXTENSION = """NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = '{catalog}'::regclass
                                 AND d.objid = {oid} AND d.deptype = 'e')"""
CATALOG = {
    "schema": "SELECT nspname::text, nspacl::text FROM pg_namespace"
    " WHERE nspname = current_schema()",
    "relations": "SELECT relname::text, relkind::text, relrowsecurity, relforcerowsecurity,"
    " reloptions::text, relacl::text FROM pg_class c"
    " WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p', 'S', 'v')"
    f" AND {_NOT_EXTENSION.format(catalog='pg_class', oid='c.oid')} ORDER BY 1",
    "columns": "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod),"
    " a.attnotnull, pg_get_expr(ad.adbin, ad.adrelid), a.attidentity::text,"
    " a.attgenerated::text, a.attstorage::text FROM pg_attribute a"
    " JOIN pg_class c ON c.oid = a.attrelid"
    " LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum"
    " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')"
    " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, a.attnum",
    "constraints": "SELECT conrelid::regclass::text, conname::text, contype::text,"
    " pg_get_constraintdef(oid), convalidated FROM pg_constraint"
    " WHERE connamespace = current_schema()::regnamespace AND conrelid <> 0 ORDER BY 1, 2",
    "indexes": "SELECT tablename::text, indexname::text, indexdef FROM pg_indexes"
    " WHERE schemaname = current_schema() ORDER BY 1, 2",
    "policies": "SELECT tablename::text, policyname::text, permissive, roles::text, cmd, qual,"
    " with_check FROM pg_policies WHERE schemaname = current_schema() ORDER BY 1, 2",
    "functions": "SELECT p.proname::text, pg_get_functiondef(p.oid), p.proacl::text"
    " FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace"
    f" AND {_NOT_EXTENSION.format(catalog='pg_proc', oid='p.oid')} ORDER BY 1, 2",
    "triggers": "SELECT tgrelid::regclass::text, tgname::text, pg_get_triggerdef(oid),"
    " tgenabled::text FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2",
    "extensions": "SELECT extname::text FROM pg_extension ORDER BY 1",
}


def catalog(conn: psycopg.Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
    with conn.cursor(row_factory=psycopg.rows.tuple_row) as cur:
        return {name: cur.execute(query).fetchall() for name, query in CATALOG.items()}


@pytest.fixture
def empty_db(admin_url: str) -> Iterator[Callable[[], str]]:
    """Makes empty databases (no schema at all); dropped after the test."""
    names: list[str] = []

    def make() -> str:
        names.append(f"memledger_test_{os.getpid()}_mig_{uuid.uuid4().hex[:8]}")
        return recreate_database(admin_url, names[-1])

    yield make
    for name in names:
        drop_database(admin_url, name)


@pytest.fixture
def fresh_catalog(shared_db_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """A fresh install's catalog: the test databases are made by apply_schema."""
    with connect(shared_db_url, autocommit=True) as conn:
        return catalog(conn)


def versions(conn: Conn) -> list[int]:
    rows = conn.execute("SELECT version FROM memledger_migrations ORDER BY 1").fetchall()
    return [r["version"] for r in rows]


def has_table(conn: Conn, name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL AS found", [name]).fetchone()
    return bool(row and row["found"])


def add_entry(conn: Conn, tenant: str, kind: str) -> int:
    row = conn.execute(
        "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
        " canonical_statement, confidence, importance, valid_from, recorded_at,"
        " source_event_ids, updated_at)"
        " VALUES (%s, 'user', 'maya', %s, %s, 'Maya likes tea.', 0.8, 0.5, %s, %s, '{1}', %s)"
        " RETURNING id",
        [tenant, kind, f"{kind}:drink", T0, NOW, NOW],
    ).fetchone()
    assert row is not None
    return int(row["id"])


def make_legacy(conn: Conn, digest: str) -> None:
    """The state the digest mechanism left: the baseline schema, its digest in
    memledger_schema, no memledger_migrations."""
    assert upgrade(conn, to=1) == [1]
    conn.execute("DROP TABLE memledger_migrations")
    conn.execute(
        "CREATE TABLE memledger_schema"
        " (id integer PRIMARY KEY CHECK (id = 1), digest text NOT NULL)"
    )
    conn.execute("INSERT INTO memledger_schema (id, digest) VALUES (1, %s)", [digest])


def test_a_fresh_install_applies_every_migration_in_order(empty_db: Callable[[], str]) -> None:
    with connect(empty_db(), autocommit=True) as conn:
        assert pending(conn) == LATEST
        assert apply_schema(conn) is True
        assert versions(conn) == LATEST
        rows = conn.execute("SELECT name FROM memledger_migrations ORDER BY version").fetchall()
        assert [r["name"] for r in rows] == [m.name for m in migrations()]
        assert pending(conn) == []
        assert not has_table(conn, "memledger_schema")


def test_a_baseline_database_upgraded_matches_a_fresh_install_and_keeps_its_data(
    empty_db: Callable[[], str], fresh_catalog: dict[str, list[tuple[Any, ...]]]
) -> None:
    with connect(empty_db(), autocommit=True) as conn:
        assert upgrade(conn, to=1) == [1]
        assert pending(conn) == LATEST[1:]
        assert catalog(conn) != fresh_catalog
        tenant = "mig"
        result = append(conn, tenant, [message("a", T0), message("b", T0 + timedelta(minutes=5))],
                        now=NOW)  # fmt: skip
        entry = add_entry(conn, tenant, "preference")

        assert apply_schema(conn) is True  # like every start
        assert versions(conn) == LATEST
        assert catalog(conn) == fresh_catalog
        events = conn.execute(
            "SELECT external_id, session_id FROM memory_session_events WHERE tenant_id = %s"
            " ORDER BY seq",
            [tenant],
        ).fetchall()
        assert [(e["external_id"], e["session_id"]) for e in events] == [
            ("a", result.opened[0]),
            ("b", result.opened[0]),
        ]
        row = conn.execute("SELECT kind, canonical_statement FROM memory_entries").fetchone()
        assert row == {"kind": "preference", "canonical_statement": "Maya likes tea."}
        assert conn.execute("SELECT id FROM memory_entries").fetchall() == [{"id": entry}]


def test_an_upgrade_run_again_changes_nothing(conn: Conn) -> None:
    def objects() -> list[tuple[str, str]]:  # xmin moves when a row is written again
        rows = conn.execute(
            "SELECT polname::text AS name, xmin::text AS version FROM pg_policy"
            " UNION ALL SELECT conname::text, xmin::text FROM pg_constraint"
            " UNION ALL SELECT relname::text, xmin::text FROM pg_class"
            " WHERE relnamespace = current_schema()::regnamespace ORDER BY 1, 2"
        ).fetchall()
        return [(r["name"], r["version"]) for r in rows]

    before = objects()
    assert pending(conn) == []
    assert upgrade(conn) == []
    assert upgrade(conn) == []
    assert apply_schema(conn) is False
    assert objects() == before


def test_processes_upgrading_at_once_apply_each_migration_once(
    empty_db: Callable[[], str], fresh_catalog: dict[str, list[tuple[Any, ...]]]
) -> None:
    url = empty_db()
    results: list[list[int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def run() -> None:
        try:
            with connect(url, autocommit=True) as conn:
                start.wait()
                results.append(upgrade(conn))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(v for r in results for v in r) == LATEST  # each version by one of them
    with connect(url, autocommit=True) as conn:
        assert versions(conn) == LATEST
        assert catalog(conn) == fresh_catalog


def test_a_database_of_the_digest_mechanism_is_adopted(
    empty_db: Callable[[], str], fresh_catalog: dict[str, list[tuple[Any, ...]]]
) -> None:
    with connect(empty_db(), autocommit=True) as conn:
        make_legacy(conn, LEGACY_SCHEMA_DIGEST)
        entry = add_entry(conn, "mig", "goal")
        assert pending(conn) == LATEST[1:]  # the baseline is recorded, not run
        assert not has_table(conn, "memledger_migrations")  # pending only reads

        assert upgrade(conn) == LATEST[1:]
        assert versions(conn) == LATEST
        assert not has_table(conn, "memledger_schema")
        assert catalog(conn) == fresh_catalog
        assert conn.execute("SELECT id FROM memory_entries").fetchall() == [{"id": entry}]
        assert upgrade(conn) == []


def test_a_database_of_another_schema_digest_is_refused(empty_db: Callable[[], str]) -> None:
    with connect(empty_db(), autocommit=True) as conn:
        make_legacy(conn, "0" * 64)
        before = catalog(conn)
        with pytest.raises(DatabasePredatesMigrations, match="predates migrations") as raised:
            pending(conn)
        assert raised.value.fields == {"digest": "0" * 64}
        with pytest.raises(DatabasePredatesMigrations):
            upgrade(conn)
        with pytest.raises(DatabasePredatesMigrations):
            apply_schema(conn)
        assert catalog(conn) == before  # nothing created, nothing dropped
        assert not has_table(conn, "memledger_migrations")


def test_entries_take_every_kind_the_extractors_write(conn: Conn) -> None:
    for kind in KINDS:
        add_entry(conn, "mig", kind)


def test_entries_of_an_unknown_kind_are_refused(conn: Conn) -> None:
    with pytest.raises(psycopg.errors.CheckViolation) as raised, conn.transaction():
        add_entry(conn, "mig", "hobby")
    assert raised.value.diag.constraint_name == "memory_entries_kind_check"


def add_embedded(conn: Conn, tenant: str, key: str, vector: Any, model: str) -> int:
    """An active entry with ``vector`` (sent as text, cast to the column's type)."""
    text = "[" + ",".join(repr(float(x)) for x in vector) + "]"
    row = conn.execute(
        "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
        " canonical_statement, embedding, embedding_model, confidence, importance, valid_from,"
        " recorded_at, source_event_ids, updated_at)"
        " VALUES (%s, 'user', 'maya', 'preference', %s, 'Maya likes tea.', %s::vector, %s,"
        " 0.8, 0.5, %s, %s, '{1}', %s) RETURNING id",
        [tenant, key, text, model, T0, NOW, NOW],
    ).fetchone()
    assert row is not None
    return int(row["id"])


def stored(conn: Conn, entry: int) -> tuple[Any, bool]:
    """The entry's vector as read back (float64), and whether it lies in the TOAST table."""
    row = conn.execute(
        "SELECT embedding::text AS v, pg_column_toast_chunk_id(embedding) IS NOT NULL AS toasted"
        " FROM memory_entries WHERE id = %s",
        [entry],
    ).fetchone()
    assert row is not None
    return np.array([float(x) for x in row["v"].strip("[]").split(",")]), row["toasted"]


def test_vectors_written_before_halfvec_read_back_after_it_in_the_row(
    empty_db: Callable[[], str],
) -> None:
    """0003 turns the stored fp32 vectors into halfvec in place (fp16 rounding: relative
    error ≤ 2^-11 per component), kept in the row, a wider model's too; the default
    model's active entries are found through its HNSW index."""
    gen = np.random.default_rng(3)
    unit = [v / np.linalg.norm(v) for v in gen.normal(size=(2, 384)).astype(np.float32)]
    wide = gen.normal(size=1536).astype(np.float32)
    wide /= np.linalg.norm(wide)
    with connect(empty_db(), autocommit=True) as conn:
        assert upgrade(conn, to=2) == [1, 2]
        minilm = [
            add_embedded(conn, "mig", f"preference:drink{i}", v, "all-MiniLM-L6-v2-int8")
            for i, v in enumerate(unit)
        ]
        other = add_embedded(conn, "mig", "preference:other", wide, "text-embedding-3-small")
        assert stored(conn, other)[1]  # 6 KB of fp32: in TOAST before

        assert apply_schema(conn) is True
        column = conn.execute(
            "SELECT format_type(atttypid, atttypmod) AS type, attstorage::text AS storage"
            " FROM pg_attribute"
            " WHERE attrelid = 'memory_entries'::regclass AND attname = 'embedding'"
        ).fetchone()
        assert column == {"type": "halfvec", "storage": "m"}
        for entry, vector in [*zip(minilm, unit, strict=True), (other, wide)]:
            back, toasted = stored(conn, entry)
            assert back.shape == vector.shape
            assert np.allclose(back, vector, rtol=2**-10, atol=1e-7)
            assert not toasted
        conn.execute("SET enable_seqscan = off")  # two rows: the planner would rather scan
        query = conn.execute(
            "SELECT id, 1 - (embedding::halfvec(384) <=> %s::halfvec(384)) AS similarity"
            " FROM memory_entries WHERE embedding_model = 'all-MiniLM-L6-v2-int8'"
            " AND status = 'active' ORDER BY embedding::halfvec(384) <=> %s::halfvec(384)"
            " LIMIT 1",
            [unit[1], unit[1]],
        )
        top = query.fetchone()
        assert top is not None and top["id"] == minilm[1] and top["similarity"] > 0.999
        plan = conn.execute(
            "EXPLAIN SELECT id FROM memory_entries WHERE embedding_model = 'all-MiniLM-L6-v2-int8'"
            " AND status = 'active' ORDER BY embedding::halfvec(384) <=> %s::halfvec(384)"
            " LIMIT 1",
            [unit[1]],
        ).fetchall()
        assert "memory_entries_embedding_minilm" in str(plan)


def test_an_upgraded_database_keeps_reading_the_model_its_entries_are_in(
    empty_db: Callable[[], str],
) -> None:
    """0004 records the model most entries are in as the read model (a database from
    before it, whatever the default model is now); an empty one records none."""
    vector = np.full(384, 384**-0.5, dtype=np.float32)
    with connect(empty_db(), autocommit=True) as conn:
        assert upgrade(conn, to=3) == [1, 2, 3]
        for i in range(2):
            add_embedded(conn, "mig", f"preference:drink{i}", vector, "all-MiniLM-L6-v2-int8")
        add_embedded(conn, "mig", "preference:other", vector, "hash-v1-384")
        assert upgrade(conn, to=4) == [4]
        assert read_model(conn) == "all-MiniLM-L6-v2-int8"
        assert record_read_model(conn, "all-MiniLM-L6-v2-q8", now=NOW) == "all-MiniLM-L6-v2-int8"
    with connect(empty_db(), autocommit=True) as conn:
        apply_schema(conn)
        assert read_model(conn) is None
        assert record_read_model(conn, "all-MiniLM-L6-v2-q8", now=NOW) == "all-MiniLM-L6-v2-q8"
        assert read_model(conn) == "all-MiniLM-L6-v2-q8"


def test_skill_proposals_upgraded_count_no_failures_until_projected_again(
    empty_db: Callable[[], str],
) -> None:
    """0005 adds the outcome counts to existing proposals, at zero, within the checks."""
    with connect(empty_db(), autocommit=True) as conn:
        assert upgrade(conn, to=4) == [1, 2, 3, 4]
        at = datetime(2025, 1, 1, tzinfo=UTC)
        conn.execute(
            "INSERT INTO skill_proposal (tenant_id, agent_id, skill_key, goal, evidence_count,"
            " source_entry_ids, created_at, updated_at)"
            " VALUES ('mig', 'atlas', 'book-train', 'book a train', 1, '{7}', %s, %s)",
            [at, at],
        )
        assert upgrade(conn, to=5) == [5]
        row = conn.execute(
            "SELECT evidence_count, failure_count, successes_since_failure, last_failure_at"
            " FROM skill_proposal WHERE tenant_id = 'mig'"
        ).fetchone()
        assert row == {"evidence_count": 1, "failure_count": 0, "successes_since_failure": 0,
                       "last_failure_at": None}  # fmt: skip
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("UPDATE skill_proposal SET successes_since_failure = 2")


def test_channel_entries_written_before_0007_find_their_participants_after_it(
    empty_db: Callable[[], str],
) -> None:
    """0007 fills the participants table from the channel entries already there; entries
    written after it add theirs (the trigger)."""
    with connect(empty_db(), autocommit=True) as conn:
        assert upgrade(conn, to=6) == [1, 2, 3, 4, 5, 6]
        add_channel_entry(conn, "mig", "dm-1", {"participant_ids": ["maya", "tom"]})
        add_channel_entry(conn, "mig", "dm-1", {"participant_ids": ["maya"]})
        add_channel_entry(conn, "mig", "dm-2", {"participant_ids": "maya"})  # not a list
        add_channel_entry(conn, "other", "dm-1", {"participant_ids": ["ada"]})
        assert upgrade(conn, to=7) == [7]
        assert participants(conn) == [
            ("mig", "dm-1", "maya"), ("mig", "dm-1", "tom"), ("other", "dm-1", "ada")
        ]  # fmt: skip
        add_channel_entry(conn, "mig", "dm-3", {"participant_ids": ["tom"]})
        assert ("mig", "dm-3", "tom") in participants(conn)


def add_channel_entry(conn: Conn, tenant: str, channel: str, fields: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
        " canonical_statement, fields, confidence, importance, valid_from, recorded_at,"
        " source_event_ids, updated_at)"
        " VALUES (%s, 'channel', %s, 'session_summary', %s, 'They talked.', %s, 0.8, 0.5,"
        " %s, %s, '{1}', %s)",
        [tenant, channel, f"summary:{uuid.uuid4().hex}", Jsonb(fields), T0, NOW, NOW],
    )


def participants(conn: Conn) -> list[tuple[str, str, str]]:
    rows = conn.execute(
        "SELECT tenant_id, channel_id, user_id FROM memory_channel_participants ORDER BY 1, 2, 3"
    ).fetchall()
    return [(r["tenant_id"], r["channel_id"], r["user_id"]) for r in rows]


SOURCES: list[Any] = [
    None, [], ["atlas"], ["maya"], ["maya", "atlas"], ["maya", "maya"], ["maya", "tom"],
    ["maya", "tom", "atlas"], "maya", "atlas", 7, [7], ["maya", 7], {"maya": 1}, "",
]  # fmt: skip


@pytest.mark.parametrize("sources", SOURCES)
def test_the_learnt_from_column_says_what_the_source_actor_check_says(
    conn: Conn, sources: Any
) -> None:
    """For every shape of source_actor_ids (missing, lists, a bare id, malformed), an
    agent entry's learnt_from puts it in a user's scope exactly when
    memledger_learnt_from(fields, user, agent) does."""
    fields = {} if sources is None else {"source_actor_ids": sources}
    row = conn.execute(
        "SELECT memledger_learnt_key(%(f)s, 'atlas') AS key,"
        " memledger_learnt_from(%(f)s, 'maya', 'atlas') AS maya,"
        " memledger_learnt_from(%(f)s, 'tom', 'atlas') AS tom,"
        " memledger_learnt_from(%(f)s, 'ada', 'atlas') AS ada",
        {"f": Jsonb(fields)},
    ).fetchone()
    assert row is not None
    for user in ("maya", "tom", "ada"):
        assert (row["key"] in (user, "")) is row[user], (user, row["key"])


def test_agent_entries_written_before_0008_know_whom_they_were_learnt_from_after_it(
    empty_db: Callable[[], str],
) -> None:
    """0008 fills learnt_from for the agent entries already there; the trigger keeps it for
    entries written and rewritten after it."""
    with connect(empty_db(), autocommit=True) as conn:
        assert upgrade(conn, to=7) == [1, 2, 3, 4, 5, 6, 7]
        old = add_agent_entry(conn, {"source_actor_ids": ["maya", "atlas"]})
        alone = add_agent_entry(conn, {})
        assert upgrade(conn, to=8) == [8]
        new = add_agent_entry(conn, {"source_actor_ids": ["maya", "tom"]})
        assert learnt_from(conn) == {old: "maya", alone: "", new: None}
        conn.execute(
            "UPDATE memory_entries SET fields = %s WHERE id = %s",
            [Jsonb({"source_actor_ids": ["tom"]}), new],
        )
        assert learnt_from(conn)[new] == "tom"


def add_agent_entry(conn: Conn, fields: dict[str, Any]) -> int:
    row = conn.execute(
        "INSERT INTO memory_entries (tenant_id, owner_type, owner_id, kind, key,"
        " canonical_statement, fields, confidence, importance, valid_from, recorded_at,"
        " source_event_ids, updated_at)"
        " VALUES ('mig', 'agent', 'atlas', 'agent_experience', %s, 'Booked a train.', %s,"
        " 0.8, 0.5, %s, %s, '{1}', %s) RETURNING id",
        [f"agent_experience:{uuid.uuid4().hex}", Jsonb(fields), T0, NOW, NOW],
    ).fetchone()
    assert row is not None
    return int(row["id"])


def learnt_from(conn: Conn) -> dict[int, str | None]:
    rows = conn.execute("SELECT id, learnt_from FROM memory_entries WHERE owner_type = 'agent'")
    return {r["id"]: r["learnt_from"] for r in rows}


@pytest.mark.parametrize("model", LOCAL_MODELS)
def test_each_local_model_ranks_its_active_entries_through_an_hnsw_index_of_its_own(
    shared_db_url: str, model: str
) -> None:
    vector = "[" + ",".join(["0.05"] * 384) + "]"
    query = psycopg.sql.SQL(
        "EXPLAIN SELECT id FROM memory_entries WHERE embedding_model = {model}"
        " AND status = 'active' ORDER BY embedding::halfvec(384) <=> {vector}::halfvec(384)"
        " LIMIT 1"
    ).format(model=psycopg.sql.Literal(model), vector=psycopg.sql.Literal(vector))
    with connect(shared_db_url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # an empty table: the planner would scan
        plan = str(conn.execute(query).fetchall())
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_entries'"
            " AND indexdef LIKE %s",
            [f"%hnsw%'{model}'%"],
        ).fetchall()
    assert [row["indexname"] for row in indexes] == [plan.split("Index Scan using ")[1].split()[0]]
