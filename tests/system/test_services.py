"""The embedded services on a fresh home, used by several commands at once. They take
turns starting, attaching to and stopping them (a lock in the home): none trips over
another's half-made database, starts a second Redis on the same data file, or attaches
to a Redis that a finishing command is stopping."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MEMLEDGER = Path(sys.executable).parent / "memledger"


def test_commands_started_together_on_a_fresh_home_all_succeed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env["MEMLEDGER_HOME"] = str(tmp_path / "home")
    started = [
        subprocess.Popen(
            [MEMLEDGER, "sessions"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=240)[1].decode()[-800:] for p in started]
    assert [p.returncode for p in started] == [0, 0, 0, 0], errors
