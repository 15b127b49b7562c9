"""Embedded PostgreSQL (with pgvector) and Redis for a machine with nothing installed, and
the helpers that make and drop databases.

When ``MEMLEDGER_DATABASE_URL`` / ``MEMLEDGER_REDIS_URL`` are set those servers are used
instead. Otherwise the home's embedded servers (``ops.embedded_postgres``,
``ops.embedded_redis``), private to the home's owner, are started or attached to under the
home's start lock, and each is stopped when the last process that started or attached to it
leaves.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import psycopg
import structlog
from psycopg import sql

from ledger.errors import ServiceError
from ops import embedded_postgres, embedded_redis
from ops.service_files import private_dir

log = structlog.get_logger(__name__)
DATABASE = "memledger"


@dataclass(frozen=True, slots=True)
class ServiceUrls:
    database_url: str
    redis_url: str


def _usable_dir(path: Path, what: str) -> Path:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
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


def _home(home: Path) -> Path:
    """The home, absolute and writable (made private under its start lock)."""
    return _usable_dir(home.expanduser().resolve(), "MEMLEDGER_HOME")


@contextlib.contextmanager
def _starting(home: Path) -> Iterator[None]:
    """One process at a time starts, attaches to or leaves the embedded servers of
    ``home``: two started together would each start a server on the same data."""
    try:
        fd = os.open(home / ".start.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except FileNotFoundError:  # the home was removed: its servers are only to be stopped
        yield
        return
    with os.fdopen(fd, "r+") as held:
        os.fchmod(fd, 0o600)  # one an older version made is 0644
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


class _Users:
    """How many users in this process each home's embedded server has: the process joins
    a server's users once and leaves when its last user here does (or at exit)."""

    def __init__(self, attach: Callable[..., Any], detach: Callable[[Path], None]) -> None:
        self.attach, self.detach = attach, detach
        self.count: dict[Path, int] = {}
        self.mutex = threading.Lock()
        atexit.register(self.leave_all)

    def join(self, home: Path, *args: Any) -> Any:
        """Start or attach to the home's server (``args`` go to the start)."""
        with self.mutex, _starting(home):
            private_dir(home)  # under the lock: a server's user may be let through it meanwhile
            server = self.attach(home, *args)
            self.count[home] = self.count.get(home, 0) + 1
        return server

    def leave(self, home: Path) -> None:
        with self.mutex:
            self.count[home] -= 1
            if self.count[home] == 0:
                del self.count[home]
                with _starting(home):
                    self.detach(home)

    def leave_all(self) -> None:
        for home in list(self.count):
            self.count[home] = 1
            self.leave(home)


_postgres_users = _Users(embedded_postgres.attach, embedded_postgres.detach)
_redis_users = _Users(embedded_redis.attach, embedded_redis.detach)


def postgres_server(home: Path, options: Sequence[str] = ()) -> embedded_postgres.EmbeddedPostgres:
    """Start (or attach to) the embedded PostgreSQL of ``home``, started with ``options``
    on its command line (``-c name=value`` pairs: see ``ops.wiring.server_options``); a
    running server keeps the options it was started with. This process stays among its
    users until it exits."""
    server = _postgres_users.join(_home(home), tuple(options))
    return cast(embedded_postgres.EmbeddedPostgres, server)


def redis_server(home: Path) -> RedisHandle:
    """Start (or attach to) the embedded Redis of ``home``, until the handle's ``leave``
    (or the process's exit)."""
    home = _home(home)
    server = cast(embedded_redis.EmbeddedRedis, _redis_users.join(home))
    return RedisHandle(server.socket_file, server.pid, home)


@dataclass(frozen=True, slots=True)
class RedisHandle:
    socket_file: str
    pid: int
    home: Path

    def leave(self) -> None:
        """Let go of the server: the last process to let go stops it."""
        _redis_users.leave(self.home)


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


@contextlib.contextmanager
def running_services(
    home: Path,
    database_url_: str | None,
    redis_url: str | None,
    *,
    redis: bool = True,
    postgres_options: Sequence[str] = (),
) -> Iterator[ServiceUrls]:
    """The URLs to use, starting embedded servers for those not configured (PostgreSQL
    with ``postgres_options``)."""
    redis_handle = None
    if database_url_ is None:
        server = postgres_server(home, postgres_options)
        database_url_ = ensure_database(server.get_uri(), DATABASE)
    if redis_url is None and redis:
        redis_handle = redis_server(home)
        redis_url = f"unix://{redis_handle.socket_file}"
    try:
        yield ServiceUrls(database_url_, redis_url or "")
    finally:
        if redis_handle is not None:
            redis_handle.leave()
