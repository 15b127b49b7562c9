"""Re-embedding the store into another model (see :mod:`observations.reembed`): the walk,
batch by batch at a bounded rate, then the switch."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ledger.db import Conn
from observations import reembed
from observations.embed import Embedder
from observations.embed_models import read_model


@dataclass(frozen=True, slots=True)
class Outcome:
    model: str
    resumed: bool
    embedded: int  # entries embedded by this run's walk
    switched: int  # entries moved into the model at the switch
    previous_model: str | None


def run(
    conn: Conn,
    embedder: Embedder,
    *,
    missing_only: bool,
    batch: int,
    rate: float | None,
    clock: Callable[[], datetime],
    progress: Callable[[int, int], object] = lambda done, total: None,
) -> Outcome:
    """Re-embed every entry into ``embedder``'s model (resuming a run that was stopped),
    at most ``rate`` entries a second (``None``: as fast as it goes), then switch reads to
    it. ``progress(done, total)`` is called once before the walk and after each batch."""
    previous = read_model(conn)
    job, resumed = reembed.begin(conn, embedder.model, missing_only=missing_only, now=clock())
    total = reembed.remaining(conn, job)
    progress(0, total)
    embedded = 0
    started = time.monotonic()
    while n := reembed.step(conn, embedder, batch=batch, now=clock()):
        embedded += n
        progress(embedded, total)
        if rate is not None:  # sleep off what this run is ahead of its rate
            time.sleep(max(0.0, embedded / rate - (time.monotonic() - started)))
    switched = reembed.switch(conn, embedder, now=clock())
    return Outcome(embedder.model, resumed, embedded, switched, previous)
