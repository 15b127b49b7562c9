"""Unit tests use no PostgreSQL and no Redis: the fixtures of tests/conftest.py that would
start or reach one fail here instead (a test that needs them belongs in tests/integration)."""

from __future__ import annotations

from typing import NoReturn

import pytest


def _refused(what: str) -> NoReturn:
    pytest.fail(f"a unit test asked for {what}: move it to tests/integration", pytrace=False)


@pytest.fixture(scope="session")
def admin_url() -> NoReturn:
    _refused("PostgreSQL")


@pytest.fixture(scope="session")
def redis() -> NoReturn:
    _refused("Redis")
