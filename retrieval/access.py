"""Access tracking off the read path: hits are counted in memory and written in batches.

A search records which entries it returned; nothing is written then. ``flush`` turns the
counts gathered since the last flush into one UPDATE per tenant (the caller decides when:
after a CLI command, on a timer in a server, or when ``pending`` grows past a bound).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime

from ledger.db import Conn, tenant_scope
from ledger.sqlfile import load_queries

Q = load_queries("retrieval")


class AccessLog:
    """Thread-safe counts of entry accesses per tenant, with the latest access time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: defaultdict[str, Counter[int]] = defaultdict(Counter)
        self._last: dict[str, datetime] = {}

    def record(self, tenant_id: str, entry_ids: Iterable[int], at: datetime) -> None:
        with self._lock:
            self._counts[tenant_id].update(entry_ids)
            self._last[tenant_id] = max(at, self._last.get(tenant_id, at))

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(len(c) for c in self._counts.values())

    def flush(self, conn: Conn) -> int:
        """Write the gathered counts; returns the number of entries updated. Counts whose
        write fails are kept for the next flush."""
        with self._lock:
            counts, last = self._counts, self._last
            self._counts, self._last = defaultdict(Counter), {}
        done = 0
        pending = sorted(counts)
        try:
            while pending:
                tenant_id = pending[0]
                done += self._write(conn, tenant_id, counts[tenant_id], last[tenant_id])
                pending.pop(0)
        finally:
            for tenant_id in pending:
                self.record(tenant_id, counts[tenant_id], last[tenant_id])
        return done

    @staticmethod
    def _write(conn: Conn, tenant_id: str, counts: Counter[int], at: datetime) -> int:
        ids = sorted(counts)  # one lock order for concurrent flushes
        params = {"tenant_id": tenant_id, "ids": ids, "counts": [counts[i] for i in ids], "at": at}
        with tenant_scope(conn, tenant_id):
            return conn.execute(Q["record_access"], params).rowcount
