"""The embedded services on a fresh home. Used by several commands at once, they take
turns starting, attaching to and stopping them (a lock in the home): none trips over
another's half-made database, starts a second Redis on the same data file, or attaches
to a Redis that a finishing command is stopping. A home whose path holds a space (macOS's
default, "Application Support") works like any other."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ops.services import _usable_dir
from tests.system.home_services import base_dir

MEMLEDGER = Path(sys.executable).parent / "memledger"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env["MEMLEDGER_HOME"] = str(home)
    return env


@pytest.fixture
def base() -> Iterator[Path]:
    """Homes outside pytest's 0700 directory (see base_dir)."""
    with base_dir() as path:
        yield path


def test_commands_started_together_on_a_fresh_home_all_succeed(base: Path) -> None:
    env = _env(base / "home")
    started = [
        subprocess.Popen(
            [MEMLEDGER, "sessions"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=240)[1].decode()[-800:] for p in started]
    assert [p.returncode for p in started] == [0, 0, 0, 0], errors


def test_the_home_probe_of_commands_started_together_never_trips_over_another(
    tmp_path: Path,
) -> None:
    """Each command checks the home is writable with a file of its own: with one shared
    probe file, one command's unlink removed another's, which then found the home
    unusable (the race behind an occasional failure of the test above)."""
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: _usable_dir(tmp_path, "MEMLEDGER_HOME"), range(2000)))
    assert list(tmp_path.iterdir()) == []


def test_a_home_whose_path_holds_a_space_serves_commands() -> None:
    # a short path: a long one has its socket moved elsewhere for its length anyway
    with tempfile.TemporaryDirectory(prefix="app support ", dir="/tmp") as home:
        env = _env(Path(home))
        for _ in range(2):  # the first starts PostgreSQL on a new data directory
            done = subprocess.run(
                [MEMLEDGER, "db", "init"], env=env, capture_output=True, text=True, timeout=240
            )
            assert done.returncode == 0, done.stderr[-800:]
            assert "host=" in done.stdout
