"""The embedded PostgreSQL runs with memory computed from its machine, a MEMLEDGER_PG_*
setting winning over it, also on a data directory made earlier, and with pg_prewarm's
autoprewarm worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ops.embedded_postgres import memory_for
from tests.system.home_services import base_dir

NAMES = ("shared_buffers", "effective_cache_size", "work_mem", "maintenance_work_mem")
REPORT = """
import json, sys
from pathlib import Path
import psutil, psycopg
from ops.services import postgres_server
from ops.settings import load_settings
from ops.wiring import server_options
server = postgres_server(Path(sys.argv[1]), server_options(load_settings()))
with psycopg.connect(server.get_uri(), autocommit=True) as conn:
    sizes = {name: conn.execute(
        "SELECT pg_size_bytes(current_setting(%s))", [name]).fetchone()[0]
        for name in sys.argv[2:]}
    sizes["shared_preload_libraries"] = conn.execute(
        "SELECT current_setting('shared_preload_libraries')").fetchone()[0]
    conn.execute("CREATE TABLE IF NOT EXISTS warm AS SELECT generate_series(1, 1000) AS n")
print("report", json.dumps({"total": psutil.virtual_memory().total, **sizes}), flush=True)
"""


@pytest.fixture
def home() -> Iterator[Path]:
    with base_dir() as base:
        yield base / "home"


def report(home: Path, **settings: str) -> dict[str, int | str]:
    """What a server of ``home`` started with ``settings`` (MEMLEDGER_<NAME>) reports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env |= {"MEMLEDGER_HOME": str(home)} | {
        f"MEMLEDGER_{k.upper()}": v for k, v in settings.items()
    }
    done = subprocess.run(
        [sys.executable, "-c", REPORT, str(home), *NAMES],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("report "))
    reported: dict[str, int | str] = json.loads(line.removeprefix("report "))
    return reported


def bytes_of(value: str) -> int:
    units = {"kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}
    return int(value[:-2]) * units[value[-2:]]


def test_the_server_gets_its_machines_memory_and_a_setting_wins(home: Path) -> None:
    first = report(home)
    computed = memory_for(int(first["total"]))
    assert {name: first[name] for name in NAMES} == {
        name: bytes_of(getattr(computed, name)) for name in NAMES
    }
    assert first["shared_preload_libraries"] == "pg_prewarm"
    # autoprewarm recorded the pages in shared buffers as the server stopped
    blocks = home / "postgres" / "autoprewarm.blocks"
    assert blocks.read_text().startswith("<<")
    blocks.unlink()
    # the same data directory, started again (its last user left) with settings
    again = report(home, pg_shared_buffers="128MB", pg_work_mem="5MB", pg_prewarm="false")
    assert again["shared_buffers"] == 128 * 1024**2
    assert again["work_mem"] == 5 * 1024**2
    assert again["effective_cache_size"] == first["effective_cache_size"]
    assert again["shared_preload_libraries"] == ""
    assert not blocks.exists()
