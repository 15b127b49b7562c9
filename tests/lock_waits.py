"""Waiting until a PostgreSQL backend is blocked on a lock, instead of sleeping and hoping."""

from __future__ import annotations

import time

from ledger.db import connect

DEADLINE_S = 10.0


def wait_until_blocked(url: str, pid: int, by: int, *, timeout: float = DEADLINE_S) -> None:
    """Poll, on a connection of its own, until backend ``pid`` waits for a lock that backend
    ``by`` holds; fail after ``timeout`` seconds if it never does."""
    deadline = time.monotonic() + timeout
    with connect(url, autocommit=True) as watch:  # autocommit: every poll sees the present
        while True:
            row = watch.execute("SELECT pg_blocking_pids(%s) AS pids", [pid]).fetchone()
            blockers = row["pids"] if row else []
            if by in blockers:
                return
            assert time.monotonic() < deadline, (
                f"backend {pid} never waited for a lock of backend {by} (blocked by {blockers})"
            )
            time.sleep(0.005)
