"""Ingest benchmark: events/s through the Python API (``ledger.append_batches``)."""

from __future__ import annotations

import gc
import multiprocessing
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger.events import iter_chunks
from ledger.store import append_batches
from ops.bench.common import bench_conn, peak_rss_mib

_TEXT = (
    "I moved to Berlin last May and love the coffee near the office we should book "
    "a table for Friday my sister visits next week can you check the train times "
    "the deploy failed again because of the timeout in the payment service"
)
_WORDS = _TEXT.split()


@dataclass(frozen=True, slots=True)
class IngestFigures:
    events: int
    seconds: float
    sessions_closed: int
    peak_rss_mib: float

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds


def synthetic_events(
    n: int, *, channels: int, start: datetime, seed: int, prefix: str
) -> Iterator[dict[str, Any]]:
    """A stream of realistic chat events: per-channel clocks, sometimes a long pause."""
    rng = random.Random(seed)
    clocks = [start] * channels
    for i in range(n):
        ch = rng.randrange(channels)
        pause = rng.choice((45, 120, 300, 600)) if rng.random() > 0.02 else 3 * 3600
        clocks[ch] += timedelta(seconds=pause)
        user = f"user-{ch}"
        yield {
            "external_id": f"{prefix}{i}",
            "channel_id": f"channel-{ch}",
            "role": "user" if i % 2 else "assistant",
            "actor_id": user if i % 2 else "agent",
            "actor_name": f"User {ch}" if i % 2 else "Agent",
            "content": " ".join(rng.choices(_WORDS, k=rng.randint(6, 40))),
            "occurred_at": clocks[ch],
            "metadata": {},
        }


def run_ingest(
    url: str, *, events: int, batch_size: int, channels: int, writers: int, now: datetime
) -> IngestFigures:
    """Append ``events`` with ``writers`` writers, each a process of its own with its own
    connection and tenant (threads would share one interpreter lock, and a writer waiting
    for it would hold the ledger lock meanwhile). Each generates its events first; the
    time is that of the appends, from the first writer's start to the last one's end."""
    per_writer = events // writers
    jobs = [(url, w, per_writer, batch_size, channels, now) for w in range(writers)]
    if writers == 1:
        spans = [_write_events(*jobs[0])]
    else:
        context = multiprocessing.get_context("spawn")
        with context.Pool(writers) as pool:
            spans = pool.starmap(_write_events, jobs)
    seconds = max(end for _, end, _, _ in spans) - min(start for start, _, _, _ in spans)
    rss = max([peak_rss_mib(), *(r for _, _, _, r in spans)])
    return IngestFigures(per_writer * writers, seconds, sum(c for _, _, c, _ in spans), rss)


def _write_events(
    url: str, writer: int, n: int, batch_size: int, channels: int, now: datetime
) -> tuple[float, float, int, float]:
    """One writer's appends: when they started and ended (epoch seconds), the sessions
    they closed, and the writer's peak RSS."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    stream = synthetic_events(n, channels=channels, start=start, seed=writer, prefix=f"w{writer}-")
    batches = list(iter_chunks(stream, batch_size))
    # The events waiting to be sent are the benchmark's, not the appender's: out of the
    # cyclic collector's sight, as a streaming client would not hold them.
    gc.freeze()
    closed = 0
    with bench_conn(url) as conn:
        began = time.time()
        for result in append_batches(conn, f"bench-{writer}", batches, clock=lambda: now):
            closed += len(result.closed)
        ended = time.time()
    return began, ended, closed, peak_rss_mib()
