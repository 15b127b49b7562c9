"""Fixtures of the system tests: the HTTP API served by uvicorn on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ops.services import drop_database, recreate_database
from tests.system.live_api import Server, api_server


@pytest.fixture(scope="module")
def server(
    request: pytest.FixtureRequest, admin_url: str, template_db: str, redis: Any
) -> Iterator[Server]:
    """The API on a database of this test module's own."""
    name = "memledger_test_" + request.module.__name__.rsplit(".", 1)[-1]
    db_url = recreate_database(admin_url, name, template_db)
    with api_server(db_url, f"unix://{redis.socket_file}") as s:
        yield s
    drop_database(admin_url, name)
