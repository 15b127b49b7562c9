"""Ingest: the one policy for a batch of events, whatever interface it came through.

A batch is written whole or not at all. Every event is validated first; when any is bad,
:class:`BatchRejected` names each bad event (its position, field and reason) and nothing
of the batch is written — fix those and send the whole batch again: events already stored
are duplicates, i.e. no-ops, so a resend never doubles anything. The HTTP API answers 422
with the list, the Mem0 ``add`` 422 naming the message, and ``memledger ingest`` reports the
line numbers and exits non-zero.

A JSONL file (:func:`ingest_lines`) is read in batches of ``batch_size`` lines under the
same rule: a line that is not JSON or not a valid event is reported with its number; its
batch writes nothing, other batches are appended.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from ledger.db import Conn
from ledger.errors import InvalidEvent
from ledger.events import EventIn, Limits, iter_chunks, parse_events
from ledger.store import AppendResult, append, close_session
from ops.metrics import EVENTS
from ops.usecases.base import Defer, Deps
from retrieval.recent import RecentWindow


@dataclass(frozen=True, slots=True)
class Rejection:
    index: int  # the event's position in its batch
    field: str
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {"index": self.index, "field": self.field, "reason": self.reason}


class BatchRejected(InvalidEvent):
    """A batch held invalid events and nothing of it was written: fix the named events and
    resend the whole batch (events already stored are duplicates)."""

    def __init__(self, rejections: Sequence[Rejection]) -> None:
        self.rejections = tuple(rejections)
        first = self.rejections[0]
        message = (
            f"{len(self.rejections)} invalid event(s), nothing was written;"
            f" event {first.index}: {first.reason}"
        )
        rejected = [r.as_json() for r in self.rejections]
        super().__init__(message, index=first.index, field=first.field, rejected=rejected)


def check_batch(raw: Sequence[Any], *, now: datetime, limits: Limits) -> list[EventIn]:
    """Every event of the batch validated, or :class:`BatchRejected` naming each bad one."""
    events: list[EventIn] = []
    rejections: list[Rejection] = []
    for index, item in enumerate(raw):
        try:
            events.extend(parse_events([item], now=now, limits=limits))
        except InvalidEvent as exc:
            rejections.append(Rejection(index, exc.field, exc.reason))
    if rejections:
        raise BatchRejected(rejections)
    return events


def append_batch(
    conn: Conn,
    tenant_id: str,
    raw: Sequence[Any],
    *,
    now: datetime,
    gap: timedelta,
    limits: Limits,
) -> tuple[list[EventIn], AppendResult]:
    """Validate the whole batch (:func:`check_batch`), then append it."""
    events = check_batch(raw, now=now, limits=limits)
    return events, append(conn, tenant_id, events, now=now, gap=gap, limits=limits)


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
    """Parse every line of a batch and validate it as one batch (:func:`check_batch`),
    collecting all bad lines."""
    decoded: list[tuple[int, Any]] = []
    bad: list[BadLine] = []
    for number, text in batch:
        try:
            decoded.append((number, json.loads(text)))
        except json.JSONDecodeError as exc:
            bad.append(BadLine(number, f"not JSON: {exc.msg} at column {exc.colno}"))
        except (ValueError, RecursionError) as exc:  # a 5,000-digit number, deep nesting
            bad.append(BadLine(number, f"not JSON this reader takes: {exc}"))
    try:
        events = check_batch([event for _, event in decoded], now=now, limits=limits)
    except BatchRejected as exc:
        lines = [decoded[r.index][0] for r in exc.rejections]
        bad += [
            BadLine(n, f"{r.reason} [field {r.field}]")
            for n, r in zip(lines, exc.rejections, strict=True)
        ]
        bad.sort(key=lambda b: b.line)
        return [], bad
    return events, bad


def count_lines(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


def ingest(conn: Conn, tenant_id: str, raw: Sequence[Any], deps: Deps, defer: Defer) -> Ingested:
    """A batch from a client: appended whole (or :class:`BatchRejected`, counted as
    rejected events); once the caller commits, the events are counted, put in the recent
    window, and each session the append closed is queued for building."""
    with deps.appending:
        now = deps.clock()
        limits = deps.settings.limits
        try:
            events, result = append_batch(
                conn, tenant_id, raw, now=now, gap=deps.settings.session_gap, limits=limits
            )
        except BatchRejected as exc:
            deps.metrics.add([(EVENTS, ("rejected",), len(exc.rejections))])
            raise
    defer(_after_commit, deps, tenant_id, events, result)
    return Ingested(events, result)


@dataclass(frozen=True, slots=True)
class Ingested:
    events: list[EventIn]
    result: AppendResult


def _after_commit(deps: Deps, tenant_id: str, events: list[EventIn], result: AppendResult) -> None:
    """Once the caller's transaction has committed (and let go of the ledger lock): the
    events counted, the recent window, and a build for each session the append closed.
    None of it raises: with Redis down, the window and the counts wait (the ledger has the
    events) and the builds stay in the outbox."""
    counts = (("accepted", result.accepted), ("duplicate", result.duplicates))
    deps.metrics.add((EVENTS, (status,), n) for status, n in counts)
    if deps.window is not None:
        deps.window.record(tenant_id, accepted_events(events, result))
    deps.queue_builds(tenant_id, result.closed)


def close(conn: Conn, tenant_id: str, session_id: int, deps: Deps, defer: Defer) -> bool:
    """Close an open session now and queue its build once the caller commits; closing
    twice is a no-op (False)."""
    closed = close_session(conn, tenant_id, session_id, now=deps.clock())
    if closed:
        defer(deps.queue_builds, tenant_id, [session_id])
    return closed
