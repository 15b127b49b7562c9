"""Shared pieces of the benchmarks: a scratch database and resource figures."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from contextlib import contextmanager

from ledger.db import Conn, apply_schema, connect
from ops.services import ensure_database, recreate_database

BENCH_DATABASE = "memledger_bench"


@contextmanager
def scratch_database(
    server_url: str, name: str = BENCH_DATABASE, *, reuse: bool = False
) -> Iterator[str]:
    """A freshly created database ``name`` on the same server, with the schema (with
    ``reuse``, the one an earlier run left, if any)."""
    url = ensure_database(server_url, name) if reuse else recreate_database(server_url, name)
    with connect(url, autocommit=True) as conn:
        apply_schema(conn)
    yield url


def bench_conn(url: str) -> Conn:
    return connect(url, autocommit=True)


def peak_rss_mib() -> float:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
