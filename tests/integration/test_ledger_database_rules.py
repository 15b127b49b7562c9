"""Invariants the database itself enforces, whatever the client does: the ledger is
append-only (but for retention), and row-level security isolates tenants."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql

from ledger import InvalidScope, append, list_sessions, tenant_scope
from ledger.db import Conn, apply_schema, connect, encode, make_pool
from tests.events import message

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 10, tzinfo=UTC)

TENANT_TABLES = [
    "memory_sessions",
    "memory_session_events",
    "memory_observations",
    "memory_entries",
    "memory_links",
    "memory_entry_history",
    "user_profile",
    "skill_proposal",
    "consumer_checkpoint",
    "consolidation_runs",
    "api_keys",
    "memory_channel_participants",
]


def new_tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


def ev(external_id: str, minutes: float, channel: str = "c1") -> dict[str, Any]:
    return message(external_id, T0 + timedelta(minutes=minutes), channel=channel)


def count(conn: Conn, query: Any, params: Any = None) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(next(iter(row.values())))


def events_of(conn: Conn, tenant: str) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT * FROM memory_session_events WHERE tenant_id = %s ORDER BY id", [tenant]
    ).fetchall()


@pytest.fixture
def tenant_with_events(conn: Conn) -> str:
    tenant = new_tenant()
    append(conn, tenant, [ev("a", 0), ev("b", 5)], now=NOW)
    return tenant


# ------------------------------------------------------------------------ append-only


def test_the_database_refuses_to_update_a_ledger_event_even_for_the_owner(
    conn: Conn, tenant_with_events: str
) -> None:
    before = events_of(conn, tenant_with_events)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
        conn.transaction(),
    ):
        conn.execute(
            "UPDATE memory_session_events SET content = 'rewritten' WHERE tenant_id = %s",
            [tenant_with_events],
        )
    assert events_of(conn, tenant_with_events) == before


def test_the_database_refuses_to_delete_a_ledger_event_even_for_the_owner(
    conn: Conn, tenant_with_events: str
) -> None:
    before = events_of(conn, tenant_with_events)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
        conn.transaction(),
    ):
        conn.execute("DELETE FROM memory_session_events WHERE tenant_id = %s", [tenant_with_events])
    assert events_of(conn, tenant_with_events) == before


def test_the_database_refuses_to_truncate_the_ledger_even_for_the_owner(
    conn: Conn, tenant_with_events: str
) -> None:
    before = events_of(conn, tenant_with_events)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"),
        conn.transaction(),
    ):
        conn.execute("TRUNCATE memory_session_events CASCADE")
    assert events_of(conn, tenant_with_events) == before


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE memory_session_events SET content = 'rewritten'",
        "DELETE FROM memory_session_events",
        "TRUNCATE memory_session_events",
    ],
    ids=["update", "delete", "truncate"],
)
def test_the_app_role_under_tenant_scope_cannot_rewrite_its_own_ledger(
    conn: Conn, tenant_with_events: str, statement: Any
) -> None:
    before = events_of(conn, tenant_with_events)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        tenant_scope(conn, tenant_with_events),
    ):
        conn.execute(statement)
    assert events_of(conn, tenant_with_events) == before


def _mark_built(conn: Conn, tenant: str, session_id: int, closed_at: datetime = NOW) -> None:
    """Close (if still open, at ``closed_at``) and mark built, as the builder would."""
    conn.execute(
        "UPDATE memory_sessions SET status = 'closed', closed_at = %(closed)s,"
        " ended_at = last_event_at, close_reason = 'explicit'"
        " WHERE tenant_id = %(t)s AND id = %(id)s AND status = 'open'",
        {"t": tenant, "id": session_id, "closed": closed_at},
    )
    conn.execute(
        "UPDATE memory_sessions SET status = 'built', built_at = %(now)s"
        " WHERE tenant_id = %(t)s AND id = %(id)s",
        {"t": tenant, "id": session_id, "now": NOW},
    )


def test_retention_delete_removes_an_old_built_session_and_its_events(conn: Conn) -> None:
    tenant, other = new_tenant(), new_tenant()
    (old_id,) = append(conn, tenant, [ev("old-1", 0), ev("old-2", 1)], now=NOW).opened
    # three days later on the same channel: closes the old session by the gap rule
    (recent_id,) = append(conn, tenant, [ev("recent", 60 * 24 * 3)], now=NOW).opened
    # old, but only closed (never built): retention must keep it for the builder
    (unbuilt_id,) = append(conn, tenant, [ev("unbuilt", 0, channel="c2")], now=NOW).opened
    conn.execute(
        "UPDATE memory_sessions SET status = 'closed', closed_at = %s, ended_at = last_event_at"
        " WHERE tenant_id = %s AND id = %s",
        [NOW, tenant, unbuilt_id],
    )
    (other_id,) = append(conn, other, [ev("o", 0)], now=NOW).opened
    later = NOW + timedelta(days=3)  # age counts from the close, on the server's clock
    for t, sid, closed_at in ((tenant, old_id, NOW), (tenant, recent_id, later),
                              (other, other_id, NOW)):  # fmt: skip
        _mark_built(conn, t, sid, closed_at)
    cutoff = NOW + timedelta(days=1)

    deleted = count(conn, "SELECT memledger_retention_delete(%s, %s)", [tenant, cutoff])

    assert deleted == 1
    assert {s["id"] for s in list_sessions(conn, tenant)} == {recent_id, unbuilt_id}
    assert {e["external_id"] for e in events_of(conn, tenant)} == {"recent", "unbuilt"}
    # another tenant's old built session is untouched
    assert [e["external_id"] for e in events_of(conn, other)] == ["o"]


def test_retention_delete_leaves_the_ledger_append_only_for_the_rest_of_the_transaction(
    conn: Conn, tenant_with_events: str
) -> None:
    conn.execute("SELECT memledger_retention_delete(%s, %s)", [tenant_with_events, NOW])
    with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
        conn.execute("DELETE FROM memory_session_events WHERE tenant_id = %s", [tenant_with_events])
    assert len(events_of(conn, tenant_with_events)) == 2


def test_setting_the_retention_flag_by_hand_does_not_open_the_ledger_to_the_app_role(
    conn: Conn, tenant_with_events: str
) -> None:
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege),
        tenant_scope(conn, tenant_with_events),
    ):
        conn.execute("SELECT set_config('memledger.retention', 'on', true)")
        conn.execute("DELETE FROM memory_session_events")
    assert len(events_of(conn, tenant_with_events)) == 2


# ------------------------------------------------------------------------ row-level security


@pytest.fixture
def two_tenants(conn: Conn) -> tuple[str, str]:
    a, b = new_tenant(), new_tenant()
    append(conn, a, [ev("a1", 0), ev("a2", 1)], now=NOW)
    append(conn, b, [ev("b1", 0), ev("b2", 1), ev("b3", 2, channel="c2")], now=NOW)
    return a, b


@pytest.mark.parametrize("table", ["memory_session_events", "memory_sessions"])
def test_a_tenant_scoped_query_that_forgets_the_tenant_filter_sees_only_its_own_rows(
    conn: Conn, two_tenants: tuple[str, str], table: str
) -> None:
    a, b = two_tenants
    unfiltered = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
    of_b = sql.SQL("SELECT count(*) FROM {} WHERE tenant_id = %s").format(sql.Identifier(table))
    owner_a, owner_b = count(conn, of_b, [a]), count(conn, of_b, [b])
    assert owner_a > 0 and owner_b > 0
    assert count(conn, unfiltered) >= owner_a + owner_b  # the owner sees both

    with tenant_scope(conn, a):
        assert count(conn, unfiltered) == owner_a
        assert count(conn, of_b, [b]) == 0
    with tenant_scope(conn, b):
        assert count(conn, unfiltered) == owner_b
    # the owner's view is back after the scope
    assert count(conn, of_b, [b]) == owner_b


def test_a_tenant_scope_reads_zero_rows_of_another_tenant_from_every_table(
    conn: Conn, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    conn.execute(
        "INSERT INTO consumer_checkpoint (tenant_id, consumer, position, updated_at)"
        " VALUES (%s, 'probe', 1, %s)",
        [b, NOW],
    )
    with tenant_scope(conn, a):
        for table in TENANT_TABLES:
            query = sql.SQL("SELECT count(*) FROM {} WHERE tenant_id <> %s").format(
                sql.Identifier(table)
            )
            assert count(conn, query, [a]) == 0, table
    assert count(conn, "SELECT count(*) FROM consumer_checkpoint WHERE tenant_id = %s", [b]) == 1


def test_every_table_of_tenants_rows_the_app_role_reads_is_under_row_level_security(
    conn: Conn,
) -> None:
    """(A table the app role has no grant on, such as a re-embed's waiting vectors, is the
    owner role's alone.)"""
    rows = conn.execute(
        "SELECT c.relname::text AS name, c.relrowsecurity AS secured FROM pg_class c"
        " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id'"
        " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
        "   AND has_table_privilege('memledger_app', c.oid, 'SELECT, INSERT, UPDATE, DELETE')"
    ).fetchall()
    assert {r["name"] for r in rows} >= set(TENANT_TABLES)
    assert [r["name"] for r in rows if not r["secured"]] == []


def test_a_tenant_scope_cannot_insert_a_row_for_another_tenant(
    conn: Conn, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        tenant_scope(conn, a),
    ):
        conn.execute(
            "INSERT INTO memory_sessions (tenant_id, channel_id, started_at, last_event_at,"
            " opened_at) VALUES (%s, 'smuggled', %s, %s, %s)",
            [b, T0, T0, NOW],
        )
    assert count(conn, "SELECT count(*) FROM memory_sessions WHERE channel_id = 'smuggled'") == 0


def test_a_tenant_scope_cannot_insert_an_event_for_another_tenant(
    conn: Conn, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    (b_session,) = [s["id"] for s in list_sessions(conn, b, channel_id="c1")]
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        tenant_scope(conn, a),
    ):
        conn.execute(
            "INSERT INTO memory_session_events (tenant_id, session_id, channel_id, seq, role,"
            " actor_id, content, occurred_at, recorded_at, external_id)"
            " VALUES (%s, %s, 'c1', 99, 'user', 'x', 'smuggled', %s, %s, 'smuggled')",
            [b, b_session, T0, NOW],
        )
    assert (
        count(conn, "SELECT count(*) FROM memory_session_events WHERE external_id = 'smuggled'")
        == 0
    )


def test_a_tenant_scope_cannot_move_its_rows_to_another_tenant(
    conn: Conn, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"),
        tenant_scope(conn, a),
    ):
        conn.execute("UPDATE memory_sessions SET tenant_id = %s", [b])


def test_a_tenant_scope_cannot_change_another_tenants_rows(
    conn: Conn, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    with tenant_scope(conn, a):
        changed = conn.execute(
            "UPDATE memory_sessions SET participants = '{intruder}' WHERE tenant_id = %s", [b]
        ).rowcount
        removed = conn.execute("DELETE FROM memory_sessions WHERE tenant_id = %s", [b]).rowcount
    assert (changed, removed) == (0, 0)
    assert all("intruder" not in s["participants"] for s in list_sessions(conn, b))


def test_tenant_scope_refuses_to_switch_a_scoped_connection_to_another_tenant(
    conn: Conn, two_tenants: tuple[str, str]
) -> None:
    a, b = two_tenants
    with tenant_scope(conn, a):
        with pytest.raises(InvalidScope), tenant_scope(conn, b):
            pytest.fail("entered another tenant's scope")
        # still scoped to A, and nesting the same tenant is fine
        with tenant_scope(conn, a):
            assert count(conn, "SELECT count(*) FROM memory_session_events") == 2
        assert conn.execute("SELECT current_setting('app.tenant_id') AS t").fetchone() == {"t": a}


def test_tenant_scope_restores_the_owner_role_after_the_block(conn: Conn) -> None:
    before = conn.execute("SELECT current_user::text AS role").fetchone()
    with tenant_scope(conn, new_tenant()):
        inside = conn.execute("SELECT current_user::text AS role").fetchone()
    assert inside == {"role": "memledger_app"}
    assert conn.execute("SELECT current_user::text AS role").fetchone() == before


def test_an_outermost_tenant_scope_ends_with_its_transaction(shared_db_url: str) -> None:
    """Outside any transaction the scope is SET LOCAL in a transaction of its own: after
    the block, committed or failed, the connection is the owner again with no tenant."""
    with connect(shared_db_url, autocommit=True) as own:
        before = own.execute("SELECT current_user::text AS role").fetchone()
        unscoped = "SELECT current_user::text AS role, current_setting('app.tenant_id', true) AS t"
        with tenant_scope(own, new_tenant()):
            assert own.execute("SELECT current_user::text AS role").fetchone() == {
                "role": "memledger_app"
            }
        after = own.execute(unscoped).fetchone()
        assert after is not None and before is not None
        assert after["role"] == before["role"] and not after["t"]
        with pytest.raises(ZeroDivisionError), tenant_scope(own, new_tenant()):
            raise ZeroDivisionError
        after = own.execute(unscoped).fetchone()
        assert after is not None and before is not None
        assert after["role"] == before["role"] and not after["t"]


def test_tenant_scope_restores_the_owner_role_when_the_block_fails(conn: Conn) -> None:
    before = conn.execute("SELECT current_user::text AS role").fetchone()
    with pytest.raises(ZeroDivisionError), tenant_scope(conn, new_tenant()):
        conn.execute("SELECT 1")
        raise ZeroDivisionError
    assert conn.execute("SELECT current_user::text AS role").fetchone() == before


@pytest.mark.parametrize(
    "bad", ["", " padded ", "tab\there", "x" * 129], ids=["empty", "padded", "control", "long"]
)
def test_tenant_scope_rejects_a_malformed_tenant_id(conn: Conn, bad: str) -> None:
    with pytest.raises(InvalidScope), tenant_scope(conn, bad):
        pytest.fail("entered a malformed scope")


def test_the_schema_applies_only_the_migrations_the_database_lacks(conn: Conn) -> None:
    def policies() -> list[tuple[str, str]]:
        rows = conn.execute(
            "SELECT polname::text AS name, xmin::text AS version FROM pg_policy ORDER BY 1"
        ).fetchall()
        return [(r["name"], r["version"]) for r in rows]

    def kind_check() -> int:
        return count(
            conn,
            "SELECT count(*) FROM pg_constraint WHERE conname = 'memory_entries_kind_check'",
        )

    before = policies()
    assert apply_schema(conn) is False  # the database has every migration: nothing is run
    assert policies() == before
    # a database that lacks 0002 (the kind check) gets that one alone
    conn.execute("ALTER TABLE memory_entries DROP CONSTRAINT memory_entries_kind_check")
    conn.execute("DELETE FROM memledger_migrations WHERE version = 2")
    assert kind_check() == 0
    assert apply_schema(conn) is True
    assert kind_check() == 1
    assert policies() == before  # the baseline did not run again
    assert apply_schema(conn) is False


@pytest.mark.parametrize("pgtz", ["Pacific/Kiritimati", "America/Los_Angeles"])
def test_connections_read_and_write_times_in_utc_whatever_the_client_or_server_zone(
    shared_db_url: str, monkeypatch: pytest.MonkeyPatch, pgtz: str
) -> None:
    """Dates shown as UTC days, and `::date` in SQL, must not follow PGTZ or the server's
    `timezone` setting (initdb takes the host's)."""
    monkeypatch.setenv("PGTZ", pgtz)
    with (
        connect(shared_db_url) as conn,
        make_pool(shared_db_url, min_size=1, max_size=1) as pool,
        pool.connection() as pooled,
    ):
        for c in (conn, pooled):
            row = c.execute(
                "SELECT current_setting('TimeZone') AS tz,"
                " '2025-09-08 23:30+00'::timestamptz AS at,"
                " '2025-09-08 23:30+00'::timestamptz::date AS day"
            ).fetchone()
            assert row is not None
            assert row["tz"] == "UTC"
            assert row["at"].utcoffset() == timedelta(0)
            assert row["day"] == date(2025, 9, 8)


@pytest.mark.parametrize(
    ("value", "cast"),
    [
        ([], "text[]"),
        ([None], "text[]"),
        (["a", None, "zoë"], "text[]"),
        ([1, None, 2], "integer[]"),
        ([2**40, -5], "bigint[]"),
        ([datetime(2025, 3, 1, 12, tzinfo=UTC), T0], "timestamptz[]"),
    ],
)
def test_a_value_encoded_ahead_reads_back_as_the_value_itself(
    conn: Conn, value: list[Any], cast: str
) -> None:
    query = sql.SQL("SELECT %(v)b::{t} AS v").format(t=sql.SQL(cast))
    ahead = conn.execute(query, {"v": encode({"v": value})["v"]}).fetchone()
    assert ahead == conn.execute(query, {"v": value}).fetchone() == {"v": value}
