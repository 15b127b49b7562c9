"""Real PostgreSQL (embedded unless MEMLEDGER_TEST_DATABASE_URL is set) for the tests.

A template database is built from the schema migrations once per run; integration tests share one
database cloned from it and run each inside a rolled-back transaction; system tests get a
fresh clone each.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from redis import Redis

from ledger.db import Conn, apply_schema, connect
from ops.service_files import gone
from ops.services import drop_database, postgres_server, recreate_database, redis_server


@pytest.fixture(scope="session")
def admin_url() -> Iterator[str]:
    url = os.environ.get("MEMLEDGER_TEST_DATABASE_URL")
    if url:
        yield url
        return
    home = Path(os.environ.get("MEMLEDGER_HOME") or Path.home() / ".local/share/memledger")
    yield postgres_server(home).get_uri()


@pytest.fixture(scope="session")
def template_db(admin_url: str) -> Iterator[str]:
    name = f"memledger_test_tpl_{os.getpid()}"
    url = recreate_database(admin_url, name)
    with psycopg.connect(url, autocommit=True) as c:
        apply_schema(c)
    yield name
    drop_database(admin_url, name)


@pytest.fixture(scope="session")
def shared_db_url(admin_url: str, template_db: str) -> Iterator[str]:
    name = f"memledger_test_{os.getpid()}"
    yield recreate_database(admin_url, name, template_db)
    drop_database(admin_url, name)


@pytest.fixture
def conn(shared_db_url: str) -> Iterator[Conn]:
    """A connection whose every change is rolled back after the test."""
    with connect(shared_db_url, autocommit=True) as c, c.transaction(force_rollback=True):
        yield c


@pytest.fixture
def fresh_db_url(admin_url: str, template_db: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A database of its own, for tests that need real commits or several processes."""
    name = f"memledger_test_{os.getpid()}_{abs(hash(request.node.nodeid)) % 10**8}"
    yield recreate_database(admin_url, name, template_db)
    drop_database(admin_url, name)


@pytest.fixture(scope="session")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real Redis (the embedded one of a home of the run's own)."""
    server = redis_server(tmp_path_factory.mktemp("redis"))
    yield server
    with Redis(unix_socket_path=server.socket_file) as client:
        clients = client.client_list()  # named in the failure below: who kept a connection
    server.leave()  # this process was its only user: it stops
    assert gone(server.pid, 10), f"redis-server {server.pid} still running; clients: {clients}"


@pytest.fixture
def redis_url(redis: Any) -> str:
    url = f"unix://{redis.socket_file}"
    with Redis.from_url(url) as client:
        client.flushall()  # nothing of an earlier test reaches this one
    return url
