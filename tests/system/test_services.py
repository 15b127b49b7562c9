"""The embedded PostgreSQL on a fresh home, started by several commands at once: they
take turns starting it (a lock in the home), and none trips over another's half-made
database. (Redis is the test run's own: an embedded one that a finishing command stops
while another attaches is a race of the embedded Redis that remains.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MEMLEDGER = Path(sys.executable).parent / "memledger"


def test_commands_started_together_on_a_fresh_home_all_succeed(
    tmp_path: Path, redis_url: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env.update(MEMLEDGER_HOME=str(tmp_path / "home"), MEMLEDGER_REDIS_URL=redis_url)
    started = [
        subprocess.Popen(
            [MEMLEDGER, "sessions"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=240)[1].decode()[-800:] for p in started]
    assert [p.returncode for p in started] == [0, 0, 0], errors
