"""Connections, the schema, and tenant-scoped transactions.

Library code takes a connection and opens ``with conn.transaction():`` (a savepoint when
nested); the entrypoint that made the connection owns the outer transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from pgvector.psycopg import register_vector
from psycopg import pq
from psycopg.abc import Buffer, DumperKey
from psycopg.adapt import Dumper, PyFormat, Transformer
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from ledger.errors import InvalidScope
from ledger.migrations import upgrade
from ledger.scope import check_id

APP_ROLE = "memledger_app"
# Advisory lock keys (pg_advisory_xact_lock takes one bigint); 0x6D6C_0001 is the
# schema's (ledger.migrations.SCHEMA_LOCK).
LEDGER_LOCK = 0x6D6C_0002
# Writers of entry changes hold it shared; the read-model runner takes it exclusively for
# an instant to find its horizon (see observations/changes.py).
ENTRY_CHANGES_LOCK = 0x6D6C_0003

Conn = psycopg.Connection[dict[str, Any]]


class Encoded:
    """A parameter dumped ahead of its statement (:func:`encode`), passed through as it is."""

    __slots__ = ("data", "format", "oid")

    def __init__(self, data: Buffer | None, oid: int, format: pq.Format) -> None:
        self.data, self.oid, self.format = data, oid, format


def encode(values: dict[str, Any]) -> dict[str, Encoded]:
    """The values dumped now as a statement's ``%(name)b`` placeholders would dump them
    when it runs: work taken out of the statement's time (a bulk append does it while
    the database stores the batch before)."""
    tx = Transformer()
    encoded = {}
    for name, value in values.items():
        dumper = tx.get_dumper(value, PyFormat.BINARY)
        encoded[name] = Encoded(dumper.dump(value), dumper.oid, dumper.format)
    return encoded


class _EncodedDumper(Dumper):
    format = pq.Format.BINARY

    def get_key(self, obj: Encoded, format: PyFormat) -> DumperKey:
        return cast(DumperKey, (Encoded, obj.oid, obj.format))  # a dumper per oid and format

    def upgrade(self, obj: Encoded, format: PyFormat) -> Dumper:
        dumper = _EncodedDumper(Encoded)
        dumper.oid, dumper.format = obj.oid, obj.format  # an empty list dumps as text
        return dumper

    def dump(self, obj: Encoded) -> Buffer | None:
        return obj.data


psycopg.adapters.register_dumper(Encoded, _EncodedDumper)


def apply_schema(conn: psycopg.Connection[Any]) -> bool:
    """Bring the schema up to date: apply the pending migrations (:mod:`ledger.migrations`;
    safe to run again, and from several processes at once). Returns whether any was applied."""
    applied = bool(upgrade(conn))
    _register_vector(conn)
    return applied


def configure(conn: psycopg.Connection[Any]) -> None:
    """Per-connection set-up: times in UTC, whatever the server's ``timezone`` (initdb
    takes the host's) or the client's ``PGTZ`` (times come back as UTC, and ``::date``
    is the UTC day); the vector type adapter, once the schema has the type."""
    conn.execute("SET TimeZone TO 'UTC'")
    if not conn.autocommit:
        conn.commit()  # a session setting, kept past this transaction
    _register_vector(conn)


def _register_vector(conn: psycopg.Connection[Any]) -> None:
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:  # "vector type not found": schema not applied yet
        if not conn.autocommit:
            conn.rollback()


def connect(url: str, *, autocommit: bool = False) -> Conn:
    """One connection with dict rows, configured (:func:`configure`)."""
    conn = psycopg.connect(url, row_factory=dict_row, autocommit=autocommit)
    configure(conn)
    return conn


# How long the pool keeps retrying one failed connection before it gives the attempt up;
# the next caller that finds the pool empty starts a new one. (psycopg_pool's default, five
# minutes of retries backing off to a minute apart, can leave a pool that long without
# noticing the database is back.)
RECONNECT_SECONDS = 5.0


def make_pool(
    url: str, *, min_size: int = 1, max_size: int = 8, timeout: float = 30.0
) -> ConnectionPool[Conn]:
    """A connection pool whose connections are configured like :func:`connect`. A caller
    waits at most ``timeout`` seconds for a connection, then gets ``PoolTimeout``."""
    return ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        kwargs={"row_factory": dict_row},
        configure=configure,
        timeout=timeout,
        reconnect_timeout=RECONNECT_SECONDS,
        open=True,
    )


def pg_array(ids: Sequence[int]) -> str:
    """Ids as PostgreSQL array text ('{1,2}'), for a column of arrays sent through
    ``unnest`` (arrays of arrays cannot be ragged)."""
    return "{" + ",".join(map(str, ids)) + "}"


def announce_entry_changes(conn: psycopg.Connection[Any]) -> None:
    """Declare that this transaction may change memory entries (and write their history).

    Call it in the writing transaction before its first ``memory_entry_history`` row: it
    holds :data:`ENTRY_CHANGES_LOCK` shared until the transaction ends, so a reader that
    takes the lock exclusively sees every history id below its horizon settled.
    """
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", [ENTRY_CHANGES_LOCK])


@contextmanager
def _isolation(conn: psycopg.Connection[Any], snapshot: bool) -> Iterator[None]:
    """The transactions begun in the block at REPEATABLE READ when ``snapshot`` (said in
    their BEGIN: no round trip of its own)."""
    if not snapshot:
        yield
        return
    before = conn.isolation_level
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        yield
    finally:
        conn.isolation_level = before


@contextmanager
def tenant_scope(
    conn: psycopg.Connection[Any], tenant_id: str, *, snapshot: bool = False
) -> Iterator[None]:
    """Run the block in a transaction as ``memledger_app`` with ``app.tenant_id`` set.

    Row-level security then hides every other tenant's rows, even from a query that
    forgets its tenant filter. The previous role and tenant are restored on exit, so a
    caller's outer transaction continues as it was. With ``snapshot``, an outermost block
    runs at REPEATABLE READ: every statement of a read sees the same committed state.
    """
    check_id(tenant_id, "tenant_id")
    # SET LOCAL ends with the transaction: an outermost block needs neither to look at the
    # role and tenant it replaces nor to restore them (and saves that round trip).
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        with _isolation(conn, snapshot), conn.transaction():
            conn.execute(_SCOPE, [tenant_id, APP_ROLE])
            yield
        return
    with conn.transaction():
        row = conn.execute(
            "SELECT current_user::text AS role, current_setting('app.tenant_id', true) AS tenant"
        ).fetchone()
        prev_role, prev_tenant = _row_values(row)
        if prev_role == APP_ROLE:
            if prev_tenant != tenant_id:
                raise InvalidScope(
                    "connection is already scoped to another tenant",
                    tenant_id=tenant_id,
                    scoped_to=prev_tenant,
                )
            yield
            return
        conn.execute(_SCOPE, [tenant_id, APP_ROLE])
        yield
        conn.execute(_SCOPE, [prev_tenant or "", prev_role])


# SET LOCAL of the tenant and the role in one round trip (set_config('role') = SET ROLE).
_SCOPE = "SELECT set_config('app.tenant_id', %s, true), set_config('role', %s, true)"


def _row_values(row: Any) -> tuple[str, str | None]:
    if isinstance(row, dict):
        return row["role"], row["tenant"]
    return row[0], row[1]
