"""Forward-only schema migrations: the numbered files in ``ledger/migrations/``.

``NNNN_name.sql`` files run once each, in numeric order, each in its own transaction that
also records it in ``memledger_migrations``; every transaction holds the schema advisory
lock, so processes starting together apply each file once. A file must not manage its own
transaction (no ``BEGIN``/``COMMIT``, no ``CREATE INDEX CONCURRENTLY``). Never edit an
applied file: add the next number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from ledger.errors import MemledgerError

SCHEMA_LOCK = 0x6D6C_0001  # the advisory lock the upgrade runs under

# sha256 of the last schema.sql before migrations (kept by that mechanism in
# memledger_schema): a database that has exactly that schema is 0001_baseline, adopted.
LEGACY_SCHEMA_DIGEST = "8e96c802ba85f88c224178445efc0bb8b14ce2be11686b81c080505b48f9cae0"
_FILE = re.compile(r"(\d{4})_(\w+)\.sql")


class DatabasePredatesMigrations(MemledgerError):
    """The database predates migrations and cannot be adopted: its schema is not the last
    schema.sql before migrations. Start the last memledger release before migrations on it
    once (it brings the schema up to date), then this one."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def migrations() -> list[Migration]:
    """The packaged migrations, in order (numbered 1, 2, … without gaps)."""
    found = []
    for item in resources.files("ledger").joinpath("migrations").iterdir():
        if m := _FILE.fullmatch(item.name):
            found.append(Migration(int(m[1]), item.name[:-4], item.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations are not numbered 1, 2, …: {[m.name for m in found]}")
    return found


def pending(conn: psycopg.Connection[Any]) -> list[int]:
    """The versions :func:`upgrade` would apply; reads only (no lock, no DDL)."""
    applied = _applied(conn, adopt=False)
    return [m.version for m in migrations() if m.version not in applied]


def upgrade(conn: psycopg.Connection[Any], *, to: int | None = None) -> list[int]:
    """Apply the pending migrations (those up to version ``to`` only, when given); returns
    the versions applied (none: already current). A database of the older digest mechanism
    is adopted first (:data:`LEGACY_SCHEMA_DIGEST`)."""
    done: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
        applied = _applied(conn, adopt=True)
    todo = [m for m in migrations() if m.version not in applied and (to is None or m.version <= to)]
    for m in todo:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            if m.version in _applied(conn, adopt=True):  # another process applied it
                continue
            conn.execute(m.sql.encode())
            _record(conn, m)
        done.append(m.version)
    return done


def _applied(conn: psycopg.Connection[Any], *, adopt: bool) -> set[int]:
    """The versions recorded; with ``adopt`` (under the lock), creates the table first and
    adopts a legacy database."""
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(
            "SELECT to_regclass('memledger_migrations') IS NOT NULL,"
            " to_regclass('memledger_schema') IS NOT NULL"
        )
        has_table, legacy = cur.fetchone() or (False, False)
        if has_table:
            cur.execute("SELECT version FROM memledger_migrations")
            return {int(v) for (v,) in cur.fetchall()}
        if legacy:
            cur.execute("SELECT digest FROM memledger_schema WHERE id = 1")
            row = cur.fetchone()
            if row is None or row[0] != LEGACY_SCHEMA_DIGEST:
                raise DatabasePredatesMigrations(digest=None if row is None else row[0])
        if not adopt:
            return {1} if legacy else set()
        cur.execute(
            "CREATE TABLE memledger_migrations (version integer PRIMARY KEY,"
            " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
    if legacy:
        _record(conn, migrations()[0])  # its schema is the baseline: recorded, not run
        conn.execute("DROP TABLE memledger_schema")
        return {1}
    return set()


def _record(conn: psycopg.Connection[Any], m: Migration) -> None:
    conn.execute(
        "INSERT INTO memledger_migrations (version, name) VALUES (%s, %s)", [m.version, m.name]
    )
