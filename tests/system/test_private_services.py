"""The embedded servers are their owner's alone: another local user cannot list the home,
read the Redis dump, connect to Redis, or connect to PostgreSQL (through its socket or
TCP), also when the home is too long to hold the sockets and they move to the runtime
directory; and the directories above the home keep their modes. A server an older version
started with trust authentication is made private in place, its open connections kept.

Run as root: the other user is ``nobody``, through runuser (or setpriv)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from ops.acl import grant_traversal
from ops.embedded_postgres import BIN, SOCKET
from tests.system.home_services import base_dir, holding

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not (shutil.which("runuser") or shutil.which("setpriv")),
    reason="proving what another user cannot do needs root (to act as nobody) and runuser",
)
LONG = "h" * 110  # too long for a socket path: the sockets move to the runtime directory
SECRET = "maya's chat: the door code is 4711"
# Run by the base interpreter with the standard library alone: the other user need not
# reach the checkout's virtualenv (a checkout may lie in a directory only its owner enters).
PROBE = """
import json, os, socket, sys
home, postgres_socket, redis_socket = sys.argv[1:]
def denied(attempt):
    try:
        attempt()
    except OSError:
        return True
    return False
def unix(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(3)
        s.connect(path)
def tcp():
    socket.create_connection(("127.0.0.1", 5432), timeout=3).close()
print(json.dumps({
    "list home": denied(lambda: os.listdir(home)),
    "read dump": denied(lambda: open(f"{home}/redis/memledger.rdb", "rb").read()),
    "redis": denied(lambda: unix(redis_socket)),
    "postgres socket": denied(lambda: unix(postgres_socket)),
    "postgres tcp": denied(tcp),
}))
"""
EVERYTHING_DENIED = {
    what: True for what in ("list home", "read dump", "redis", "postgres socket", "postgres tcp")
}


def as_nobody(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*_NOBODY, _python_for_nobody(), "-I", "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, cwd="/", timeout=60)


_NOBODY = (
    ["runuser", "-u", "nobody", "--"]
    if shutil.which("runuser")
    else ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
)


@functools.cache
def _python_for_nobody() -> str:
    """An interpreter the other user can start: the base interpreter of this run (not the
    virtualenv's), else the system's, when the base one lies in a directory only its owner
    enters (as under a home of mode 0700)."""
    candidates = [os.path.realpath(sys.executable), "/usr/bin/python3", "/usr/local/bin/python3"]
    for python in dict.fromkeys(candidates):
        started = subprocess.run([*_NOBODY, python, "-I", "-c", "pass"], capture_output=True)
        if started.returncode == 0:
            return python
    pytest.skip(f"none of these can be started by nobody: {', '.join(candidates)}")


@pytest.fixture
def base() -> Iterator[Path]:
    with base_dir() as path:
        yield path


def _modes(paths: list[Path]) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in paths}


@pytest.mark.parametrize("name", ["home", LONG], ids=["short-home", "long-home"])
def test_another_user_reaches_nothing_of_the_embedded_services(base: Path, name: str) -> None:
    home = base / name
    parents = _modes(list(home.parents))
    with holding(home) as held:
        with redis.Redis.from_url(held.redis_url) as client:
            client.set("memledger:test", SECRET)
            client.save()
        assert SECRET.encode() in (home / "redis" / "memledger.rdb").read_bytes()
        with psycopg.connect(held.database_url) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)  # no TCP
        redis_socket = held.redis_url.removeprefix("unix://")
        postgres_socket = f"{held.database_url.split('host=')[1].split()[0]}/{SOCKET}"
        assert Path(postgres_socket).is_socket()
        probe = as_nobody(PROBE, str(home), postgres_socket, redis_socket)
        assert probe.returncode == 0, probe.stderr
        assert json.loads(probe.stdout) == EVERYTHING_DENIED
        if name == LONG:  # the sockets are elsewhere, and as private
            assert not redis_socket.startswith(str(home))
    assert _modes(list(home.parents)) == parents


def test_a_directory_grant_lets_one_user_through_and_no_one_else(base: Path) -> None:
    """As root, the embedded PostgreSQL's user traverses a private directory above its
    data by an ACL entry of its own: it cannot list it, nobody cannot even traverse it,
    and the directory's permissions for group and others stay none."""
    private = base / "private"
    (private / "inside").mkdir(parents=True)
    private.chmod(0o700)
    uid = int(subprocess.check_output(["id", "-u", "embedded_postgres"], text=True))
    assert grant_traversal(private, uid, [uid])
    assert not grant_traversal(private, uid, [uid])  # once is enough
    assert stat.S_IMODE(private.stat().st_mode) & 0o007 == 0
    as_postgres = ["runuser", "-u", "embedded_postgres", "--", "ls"]
    assert subprocess.run([*as_postgres, private / "inside"], capture_output=True).returncode == 0
    assert subprocess.run([*as_postgres, private], capture_output=True).returncode != 0
    probe = as_nobody("import os, sys; os.listdir(sys.argv[1])", str(private / "inside"))
    assert "PermissionError" in probe.stderr


def test_a_running_server_made_with_trust_is_made_private_in_place(base: Path) -> None:
    """An older version made the data directory with trust authentication and, for a long
    home, a socket directory anyone could enter."""
    home = base / LONG
    home.mkdir()
    start_old = (
        "import sys, embedded_postgres;"
        " print(embedded_postgres.get_server(sys.argv[1], cleanup_mode=None).get_uri())"
    )
    # as root, the package widens (g+rx, o+rx) every directory above its binaries and the
    # data: the checkout's own are given back their modes after it
    widened = _modes([*BIN.parents, *home.parents])
    try:
        old = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", start_old, str(home / "postgres")],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        for path, mode in widened.items():
            path.chmod(mode)
    old_url = old.stdout.strip().splitlines()[-1]
    socket_dir = old_url.split("host=")[1]
    assert stat.S_IMODE(Path(socket_dir).stat().st_mode) == 0o777
    with psycopg.connect(old_url, autocommit=True) as live:
        pid = live.execute("SELECT pg_backend_pid()").fetchone()
        with holding(home) as held:
            assert held.database_url.find(f"host={socket_dir}") >= 0  # the same server
            assert live.execute("SELECT pg_backend_pid()").fetchone() == pid
            assert stat.S_IMODE(Path(socket_dir).stat().st_mode) == 0o700
            hba = (home / "postgres" / "pg_hba.conf").read_text()
            assert "trust" not in hba and "peer map=owner" in hba
            probe = as_nobody(PROBE, str(home), f"{socket_dir}/{SOCKET}", "/nonexistent")
            assert json.loads(probe.stdout)["postgres socket"] is True
            with psycopg.connect(old_url) as fresh:  # its owner connects as before
                assert fresh.execute("SELECT 1").fetchone() == (1,)
