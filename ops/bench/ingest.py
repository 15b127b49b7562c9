"""Ingest benchmark: events/s through the Python API (``ledger.append``) in batches."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ledger.events import iter_chunks
from ledger.store import append
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
    """Append ``events`` with ``writers`` concurrent connections; time only the appends."""
    per_writer = events // writers
    closed = [0] * writers
    elapsed = [0.0] * writers
    start = datetime(2025, 1, 1, tzinfo=UTC)

    def work(w: int) -> None:
        stream = synthetic_events(
            per_writer, channels=channels, start=start, seed=w, prefix=f"w{w}-"
        )
        with bench_conn(url) as conn:
            for batch in iter_chunks(stream, batch_size):
                t = time.perf_counter()
                result = append(conn, f"bench-{w}", batch, now=now)
                elapsed[w] += time.perf_counter() - t
                closed[w] += len(result.closed)

    if writers == 1:
        work(0)
        return IngestFigures(per_writer, elapsed[0], closed[0], peak_rss_mib())
    wall = time.perf_counter()
    threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - wall
    return IngestFigures(per_writer * writers, seconds, sum(closed), peak_rss_mib())
