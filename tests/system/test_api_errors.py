"""Every memledger error answers with its family's status through the API: a test lists
the not-found errors (every subclass of ``NotFound`` in the packages) and raises each from
a route, so that a new one cannot fall through to another status."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from fastapi.testclient import TestClient

import consolidation
import ledger
import materializers
import observations
import ops
import retrieval
from ledger.errors import Conflict, InvalidInput, MemledgerError, NotFound, Unavailable
from ops.api.app import create_app
from tests.system.live_api import Server

PACKAGES = (ledger, observations, materializers, retrieval, consolidation, ops)
SKIPPED = ("ops.__main__",)  # runs the command line when imported


def every_error() -> set[type[MemledgerError]]:
    """Every error class defined in memledger's packages."""
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name not in SKIPPED:
                importlib.import_module(info.name)
    found: set[type[MemledgerError]] = set()
    todo: list[type[MemledgerError]] = [MemledgerError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.split(".")[0] in {p.__name__ for p in PACKAGES}:
                found.add(sub)
                todo.append(sub)
    return found


def instance(error: type[MemledgerError]) -> MemledgerError:
    """An instance of ``error`` with its default message, whatever its constructor asks."""
    exc = error.__new__(error)
    MemledgerError.__init__(exc, None, id=7)
    return exc


def status_through_the_api(server: Server, error: type[MemledgerError]) -> tuple[int, Any]:
    app = create_app(server.state)

    @app.get("/raise")
    def raise_it() -> None:
        raise instance(error)

    with TestClient(app) as client:
        r = client.get("/raise")
    return r.status_code, r.json()


def test_the_not_found_family_is_every_kind_of_not_found() -> None:
    names = {e.__name__ for e in every_error() if issubclass(e, NotFound)}
    assert names >= {"SessionNotFound", "EntryNotFound", "SkillNotFound", "KeyNotFound",
                     "UnknownJob", "UnknownReadModel"}  # fmt: skip
    # no not-found outside the family: each error named so is in it
    loose = {e.__name__ for e in every_error() if "NotFound" in e.__name__}
    assert loose <= names


FAMILIES = [(NotFound, 404), (InvalidInput, 422), (Conflict, 409), (Unavailable, 503)]


@pytest.mark.parametrize(("family", "status"), FAMILIES)
def test_every_error_of_a_family_answers_its_status(
    server: Server, family: type[MemledgerError], status: int
) -> None:
    members = sorted((e for e in every_error() if issubclass(e, family)), key=lambda e: e.__name__)
    assert members
    for error in members:
        got, body = status_through_the_api(server, error)
        assert got == status, error
        assert body["error"] == error.__name__
