"""Streaming JSONL ingest: one event per line, appended in batches.

A line that is not valid JSON or not a valid event is reported with its line number and
reason; the batch it belongs to writes nothing. Other batches are appended. Re-running the
same file after a fix is safe: events already stored are duplicates, i.e. no-ops.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from ledger.db import Conn
from ledger.errors import InvalidEvent
from ledger.events import EventIn, Limits, iter_chunks, parse_events
from ledger.store import AppendResult, append
from retrieval.recent import RecentWindow


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    reason: str


@dataclass(slots=True)
class IngestReport:
    accepted: int = 0
    duplicates: int = 0
    skipped: int = 0  # valid lines not written because their batch held a bad line
    bad: list[BadLine] = field(default_factory=list)
    closed_sessions: list[int] = field(default_factory=list)
    # each channel's latest event of the written batches (new or duplicate), as
    # (occurred_at, external id): it lies in the channel's last session of the file
    last_events: dict[str, tuple[datetime, str]] = field(default_factory=dict)


def read_lines(stream: TextIO) -> Iterator[tuple[int, str]]:
    for number, text in enumerate(stream, start=1):
        if text.strip():
            yield number, text


def ingest_lines(
    conn: Conn,
    tenant_id: str,
    lines: Iterable[tuple[int, str]],
    *,
    clock: Callable[[], datetime],
    gap: timedelta,
    limits: Limits,
    batch_size: int,
    on_batch: Callable[[int], None] = lambda n: None,
    window: RecentWindow | None = None,
) -> IngestReport:
    """Append the lines in batches, each at the time ``clock`` gives when it is written (a
    long file, or a pipe fed slowly, records each batch's own arrival)."""
    report = IngestReport()
    for batch in iter_chunks(lines, batch_size):
        now = clock()
        events, bad = _decode(batch, now, limits)
        if bad:
            report.bad.extend(bad)
            report.skipped += len(batch) - len(bad)
        else:
            result = append(conn, tenant_id, events, now=now, gap=gap, limits=limits)
            report.accepted += result.accepted
            report.duplicates += result.duplicates
            report.closed_sessions.extend(result.closed)
            for e in events:
                seen = report.last_events.get(e.channel_id)
                if seen is None or seen < (e.occurred_at, e.external_id):
                    report.last_events[e.channel_id] = (e.occurred_at, e.external_id)
            if window is not None:
                window.record(tenant_id, accepted_events(events, result))
        on_batch(len(batch))
    return report


def accepted_events(events: list[EventIn], result: AppendResult) -> list[dict[str, Any]]:
    """The events an append stored, each with its id and the session it went to."""
    return [
        {**events[o.index].model_dump(), "id": o.event_id, "session_id": o.session_id}
        for o in result.outcomes
        if o.status == "accepted"
    ]


def _decode(
    batch: list[tuple[int, str]], now: datetime, limits: Limits
) -> tuple[list[EventIn], list[BadLine]]:
    """Parse and validate every line of a batch, collecting all bad lines."""
    events: list[EventIn] = []
    bad: list[BadLine] = []
    for number, text in batch:
        try:
            event = json.loads(text)
        except json.JSONDecodeError as exc:
            bad.append(BadLine(number, f"not JSON: {exc.msg} at column {exc.colno}"))
            continue
        except (ValueError, RecursionError) as exc:  # a 5,000-digit number, deep nesting
            bad.append(BadLine(number, f"not JSON this reader takes: {exc}"))
            continue
        try:
            events.extend(parse_events([event], now=now, limits=limits))
        except InvalidEvent as exc:
            bad.append(BadLine(number, f"{exc.reason} [field {exc.field}]"))
    return events, bad


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())
