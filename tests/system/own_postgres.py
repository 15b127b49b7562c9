"""A PostgreSQL server of a test's own, run with the embedded package's binaries: it can be
killed and started again without touching the server the other tests share."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

from ledger.db import apply_schema
from ops.embedded_postgres import BIN
from ops.postgres_access import let_through, server_user
from ops.services import database_url


@dataclass
class OwnPostgres:
    root: Path  # data/, sockets/ and the server's log

    @classmethod
    def create(cls) -> OwnPostgres:
        """A new server, initialised and started; as root it runs as the embedded server's
        user (PostgreSQL refuses to run as root), let through to the binaries as that
        server is, in a directory of that user's own."""
        root = Path(tempfile.mkdtemp(prefix="memledger-pg-"))  # a socket path is short
        server = cls(root)
        (root / "sockets").mkdir()
        run_as = server_user()
        if run_as is not None:
            let_through(BIN, run_as)
            for path in (root, root / "sockets"):
                os.chown(path, *run_as.owner)
        try:
            server._run("initdb", "-D", root / "data", "-U", "postgres", "--auth=trust")
            server.start()
        except BaseException:
            server.remove()
            raise
        return server

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.root / 'sockets'}"

    @property
    def pid(self) -> int:
        """The postmaster's process id (the first line of its pid file)."""
        return int((self.root / "data" / "postmaster.pid").read_text().split()[0])

    def database(self, name: str) -> str:
        """A new database ``name`` with the schema; its URL."""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = database_url(self.admin_url, name)
        with psycopg.connect(url, autocommit=True) as conn:
            apply_schema(conn)
        return url

    def start(self) -> None:
        """Start the server (again) and wait until it accepts connections."""
        sockets = self.root / "sockets"
        self._run(
            "pg_ctl", "-w", "-D", self.root / "data", "-l", self.root / "log",
            "-o", f"-h '' -k {sockets}", "start",
        )  # fmt: skip

    def remove(self) -> None:
        """Stop the server if it runs (at once: nothing in it is kept) and delete it all."""
        if (self.root / "data" / "postmaster.pid").exists() and psutil.pid_exists(self.pid):
            self._run("pg_ctl", "-w", "-D", self.root / "data", "-m", "immediate", "stop")
        shutil.rmtree(self.root)

    def _run(self, program: str, *args: Any) -> None:
        run_as = server_user()
        done = subprocess.run(
            [str(BIN / program), *map(str, args)], capture_output=True, timeout=60,
            cwd=self.root, **(run_as.spawn() if run_as else {}),
        )  # fmt: skip
        if done.returncode != 0:
            log = self.root / "log"
            raise RuntimeError(
                f"{program} failed: {done.stderr.decode(errors='replace')}"
                + (log.read_text(errors="replace")[-2000:] if log.exists() else "")
            )
