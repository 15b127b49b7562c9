"""Who may reach the embedded PostgreSQL: the system user it runs as when memledger runs
as root, let through the directories above its files; and its authentication, the home
owner's alone (peer, through the Unix socket)."""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import structlog

from ledger.errors import ServiceError
from ops.acl import grant_traversal

log = structlog.get_logger(__name__)
SERVER_USER = "embedded_postgres"  # the system user it runs as when memledger runs as root
RELOAD_SECONDS = 30.0
HBA = """\
# memledger: only the owner of MEMLEDGER_HOME (pg_ident.conf), through the Unix socket
local all all peer map=owner
"""


@dataclass(frozen=True, slots=True)
class RunAs:
    """The system user the server runs as when memledger runs as root."""

    uid: int
    gid: int
    groups: list[int]

    @property
    def owner(self) -> tuple[int, int]:
        return self.uid, self.gid

    def spawn(self) -> dict[str, Any]:
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


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


def let_through(path: Path, run_as: RunAs) -> None:
    """Let the server's user traverse ``path`` and every directory above it."""
    for directory in (path, *path.parents):
        if grant_traversal(directory, run_as.uid, run_as.groups):
            log.info("traversal_granted", path=str(directory), uid=run_as.uid)


def write_auth(pgdata: Path, run_as: RunAs | None) -> bool:
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


def reload(pid: int, uri: str) -> None:
    """Have the server (postmaster ``pid``) read its authentication files again, and wait
    until it has: the connections open stay as they are, new ones meet the new rules."""
    before = _loaded_at(uri)
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + RELOAD_SECONDS
    while _loaded_at(uri) == before:
        if time.monotonic() > deadline:
            raise ServiceError("embedded PostgreSQL did not reload its configuration", pid=pid)
        time.sleep(0.05)


def _loaded_at(uri: str) -> object:
    with psycopg.connect(uri, autocommit=True) as conn:
        row = conn.execute("SELECT pg_conf_load_time()").fetchone()
    return row[0] if row else None
