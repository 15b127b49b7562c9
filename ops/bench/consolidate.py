"""Consolidation benchmark: every job over N synthetic entries (a full pass), then again
after 1% of the entries changed (an incremental pass), with the time of each job and the
process's peak RSS while the passes ran.

The entries (see :mod:`ops.bench.consolidate_load`) are loaded by binary COPY with the
secondary indexes dropped, which are then rebuilt (the HNSW index too unless told not
to: a status change of an entry writes a new row version into every index, so the
index set decides what consolidation's writes cost). The change is what a day of builds
brings: new entries — duplicates, same-key conflicts and fresh facts in the same
proportions as the load — for 2% of the users, written with their ADD history rows, as
the builder writes them. Jobs run through :func:`consolidation.run_job`, as the
scheduler runs them.
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psutil
from psycopg import sql

from consolidation import JOBS, ConsolidationConfig, EntryState, JobScope, point_window, run_job
from ledger.db import Conn, announce_entry_changes
from observations.embed import Embedder
from ops.bench import consolidate_load as data
from ops.bench import statements
from ops.bench.common import peak_rss_mib
from ops.bench.synthetic import Pool
from ops.wiring import wall_clock

SEED = 11
DATABASE = "memledger_bench_consolidate"


@dataclass(frozen=True, slots=True)
class Pass:
    seconds: dict[str, float]
    stats: dict[str, dict[str, Any]]

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


@dataclass(frozen=True, slots=True)
class Figures:
    entries: int
    owners: int
    pool_s: float
    copy_s: float
    index_s: float
    full: Pass
    changed_entries: int
    changed_owners: int
    baseline_rss_mib: float  # before the passes: the embedder, the pool
    full_pass_rss_mib: float
    incremental: Pass
    incremental_rss_mib: float
    peak_rss_mib: float


def run_consolidate(
    conn: Conn,
    embedder: Embedder,
    config: ConsolidationConfig,
    *,
    entries: int,
    per_owner: int,
    pool_size: int,
    hnsw: bool,
    work_mem: str = "2GB",
    now: datetime,
) -> Figures:
    t = time.perf_counter()
    texts = statements.statements(pool_size, seed=SEED)
    pool = Pool(texts, embedder.embed(texts), embedder.model)
    pool_s = time.perf_counter() - t
    counts = data.owner_counts(entries, per_owner)
    generator = data.Generator(pool, now=now, seed=SEED, shape=data.Shape())
    copy_s, index_s = load(conn, generator, counts, hnsw=hnsw, work_mem=work_mem)
    generator.recent.clear()  # the load's dup sources: not part of what the passes hold
    baseline = psutil.Process().memory_info().rss / 2**20
    with rss_peak() as full_rss:
        full = run_pass(conn, config, now, full=True)
    changed, owners = change(conn, generator, counts, fraction=0.01)
    with rss_peak() as incremental_rss:
        incremental = run_pass(conn, config, now, full=False)
    return Figures(
        entries=entries,
        owners=len(counts),
        pool_s=pool_s,
        copy_s=copy_s,
        index_s=index_s,
        full=full,
        changed_entries=changed,
        changed_owners=owners,
        baseline_rss_mib=baseline,
        full_pass_rss_mib=full_rss[0],
        incremental=incremental,
        incremental_rss_mib=incremental_rss[0],
        peak_rss_mib=peak_rss_mib(),
    )


def load(
    conn: Conn, generator: data.Generator, counts: list[int], *, hnsw: bool, work_mem: str
) -> tuple[float, float]:
    """COPY the entries with the secondary indexes dropped; rebuild them. (seconds each)"""
    indexes = conn.execute(
        "SELECT c.relname AS name, pg_get_indexdef(c.oid) AS definition"
        "  FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid"
        " WHERE x.indrelid = 'memory_entries'::regclass"
        "   AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)"
    ).fetchall()
    for index in indexes:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index["name"])))
    t = time.perf_counter()
    data.copy_rows(conn, data.interleaved_rows(generator, counts))
    copy_s = time.perf_counter() - t
    t = time.perf_counter()
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(work_mem)))
    for index in indexes:
        if hnsw or " USING hnsw " not in index["definition"]:
            conn.execute(index["definition"].encode())
    conn.execute("RESET maintenance_work_mem")
    conn.execute("VACUUM ANALYZE memory_entries")
    return copy_s, time.perf_counter() - t


def run_pass(conn: Conn, config: ConsolidationConfig, now: datetime, *, full: bool) -> Pass:
    seconds: dict[str, float] = {}
    stats: dict[str, dict[str, Any]] = {}
    for job in JOBS:
        t = time.perf_counter()
        outcome = run_job(
            conn,
            job,
            config,
            JobScope(now, None, full),
            window=point_window(wall_clock()),
            clock=wall_clock,
        )
        seconds[job] = time.perf_counter() - t
        stats[job] = outcome.stats
    return Pass(seconds, stats)


def change(
    conn: Conn, generator: data.Generator, counts: list[int], *, fraction: float
) -> tuple[int, int]:
    """New entries (``fraction`` of all) for 2% of the users, with ADD history rows."""
    rng = random.Random(SEED + 1)
    owners = sorted(rng.sample(range(1, len(counts) + 1), max(1, len(counts) // 50)))
    per_owner = max(1, round(sum(counts) * fraction / len(owners)))
    _prime(conn, generator, [data.user_id(i) for i in owners])
    with conn.transaction():
        before = conn.execute("SELECT max(id) AS id FROM memory_entries").fetchone()
        announce_entry_changes(conn)
        rows = (r for i in owners for r in generator.rows(data.user_id(i), per_owner))
        n = data.copy_rows(conn, rows)
        conn.execute(
            "INSERT INTO memory_entry_history (tenant_id, entry_id, action, new_statement,"
            " new_status, actor, reason, at)"
            " SELECT tenant_id, id, 'ADD', canonical_statement, status, 'builder', 'extracted',"
            " recorded_at FROM memory_entries WHERE id > %s ORDER BY id",
            [before["id"] if before else 0],
        )
    return n, len(owners)


def _prime(conn: Conn, generator: data.Generator, owners: list[str]) -> None:
    """Make the users' latest stored entries the generator's dup and conflict sources."""
    rows = conn.execute(
        "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY owner_id ORDER BY id DESC) AS n"
        "  FROM memory_entries WHERE tenant_id = %s AND owner_id = ANY(%s)) r"
        " WHERE n <= 8 ORDER BY id",
        [data.TENANT, owners],
    ).fetchall()
    for row in rows:
        e = EntryState.from_row(row)
        recent = generator.recent.setdefault(e.owner_id, deque(maxlen=8))
        vector = e.embedding.astype("float16")
        recent.append(data.Recent(e.kind, e.key, e.statement, dict(e.fields), vector, e.valid_from))


@contextmanager
def rss_peak() -> Iterator[list[float]]:
    """The process's highest RSS (MiB) while the block runs, sampled every 50 ms."""
    proc = psutil.Process()
    peak = [proc.memory_info().rss / 2**20]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], proc.memory_info().rss / 2**20)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()
        peak[0] = max(peak[0], proc.memory_info().rss / 2**20)


def text(f: Figures) -> str:
    """The figures as the command prints them."""

    def figures(p: Pass, job: str) -> str:
        shown = {k: v for k, v in sorted(p.stats[job].items()) if v and k != "tenants"}
        return ", ".join(f"{k} {v:,}" for k, v in shown.items()) or "-"

    lines = [
        f"consolidate: {f.entries:,} entries of {f.owners:,} users; pool embedded in "
        f"{f.pool_s:.1f} s; COPY {f.copy_s:.1f} s ({f.entries / f.copy_s:,.0f} rows/s); "
        f"indexes + VACUUM ANALYZE {f.index_s:.1f} s",
        f"  {'job':<10}{'full s':>9}{'incr. s':>9}   full pass / incremental pass",
    ]
    for job in JOBS:
        lines.append(
            f"  {job:<10}{f.full.seconds[job]:>9.2f}{f.incremental.seconds[job]:>9.2f}   "
            f"{figures(f.full, job)} / {figures(f.incremental, job)}"
        )
    lines += [
        f"  {'total':<10}{f.full.total:>9.2f}{f.incremental.total:>9.2f}",
        f"  incremental after {f.changed_entries:,} new entries "
        f"({f.changed_entries / f.entries:.1%}) for {f.changed_owners:,} users",
        f"  RSS: {f.baseline_rss_mib:.0f} MiB before the passes (embedder, pool); peak "
        f"{f.full_pass_rss_mib:.0f} MiB in the full pass, {f.incremental_rss_mib:.0f} MiB in "
        f"the incremental; {f.peak_rss_mib:.0f} MiB overall (the load included)",
    ]
    return "\n".join(lines)
