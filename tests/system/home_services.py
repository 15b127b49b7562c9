"""Processes holding the embedded services of a home, and what is running for it.

A holder is a child process inside ``running_services`` of a home (as every command is)
until its stdin closes; it reports the URLs it was given and the servers' process ids.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ops.service_files import alive, gone

HOLD = """
import json, sys
from pathlib import Path
import redis
from ops.services import postgres_server, running_services
home = Path(sys.argv[1])
with running_services(home, None, None) as urls:
    with redis.Redis.from_url(urls.redis_url) as client:
        redis_pid = int(client.info("server")["process_id"])
    postgres_pid = postgres_server(home).get_pid()
    print("held", json.dumps({"database_url": urls.database_url, "redis_url": urls.redis_url,
                      "postgres_pid": postgres_pid, "redis_pid": redis_pid}), flush=True)
    sys.stdin.read()
"""


@contextmanager
def base_dir() -> Iterator[Path]:
    """A directory for homes, outside pytest's own (0700, so as root the embedded
    PostgreSQL's user would need an ACL entry on it, which a pytest run starting meanwhile
    undoes when it chmods it back to 0700): others may traverse it (0711), not list it."""
    base = Path(tempfile.mkdtemp(prefix="memledger-test-"))
    base.chmod(0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base)


@dataclass
class Holder:
    proc: subprocess.Popen[str]
    database_url: str
    redis_url: str
    postgres_pid: int
    redis_pid: int


def start_holder(home: Path) -> Holder:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # the lines before are its log
        if line.startswith("held "):
            return Holder(proc, **json.loads(line.removeprefix("held ")))
    raise AssertionError(f"the holder of {home} exited with {proc.wait()}")


def release(holder: Holder, timeout: float = 60) -> None:
    """Close its stdin: it leaves the services and exits."""
    assert holder.proc.stdin is not None and holder.proc.stdout is not None
    holder.proc.stdin.close()
    code = holder.proc.wait(timeout)
    holder.proc.stdout.close()
    assert code == 0


def kill(holder: Holder) -> None:
    """SIGKILL: it leaves nothing, its servers run on."""
    assert holder.proc.stdin is not None and holder.proc.stdout is not None
    holder.proc.kill()
    holder.proc.wait()
    holder.proc.stdin.close()
    holder.proc.stdout.close()


@contextmanager
def holding(home: Path) -> Iterator[Holder]:
    holder = start_holder(home)
    try:
        yield holder
    finally:
        if holder.proc.poll() is None:
            release(holder)


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """Those of ``pids`` still running after ``seconds`` (a zombie has ended)."""
    deadline = time.monotonic() + seconds
    for pid in pids:
        gone(pid, max(0.0, deadline - time.monotonic()))
    return [pid for pid in pids if alive(pid)]


def handle_pids(path: Path) -> list[int]:
    pids: list[int] = json.loads(path.read_text())
    return pids
