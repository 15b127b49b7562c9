"""The gap rule, as a pure function: which session each event of a batch belongs to.

Sessions of a channel are maximal runs of events whose consecutive gaps (on the backend's
``occurred_at``) are at most ``gap``. A batch is placed against the channel's open session:

* events within ``gap`` of the open session's window join it (also earlier ones that chain
  back to its start);
* an event more than ``gap`` after the open session's last event closes it (reason
  ``gap``) and opens a new one;
* late events that chain to no open session form new sessions that are closed at once
  (reason ``late``): they are never dropped, and never reopen a closed session.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class OpenSession:
    """The channel's open session as stored."""

    id: int
    started_at: datetime
    last_event_at: datetime


@dataclass(slots=True)
class Run:
    """One session's share of a batch: an existing open session or a new session."""

    session_id: int | None  # None: a new session
    started_at: datetime
    last_event_at: datetime
    members: list[int] = field(default_factory=list)  # positions in the batch
    close_reason: str | None = None  # set when the run ends closed

    def add(self, position: int, at: datetime) -> None:
        self.members.append(position)
        self.started_at = min(self.started_at, at)
        self.last_event_at = max(self.last_event_at, at)


def place(times: Sequence[datetime], open_session: OpenSession | None, gap: timedelta) -> list[Run]:
    """Assign batch positions to runs; members of each run are in time order."""
    order = sorted(range(len(times)), key=lambda i: times[i])
    current: Run | None = None
    runs: list[Run] = []
    if open_session is not None:
        current = Run(open_session.id, open_session.started_at, open_session.last_event_at)
        runs.append(current)
        before = [i for i in order if times[i] < open_session.started_at]
        order = order[len(before) :]
        runs.extend(_place_before(before, times, current, gap))
    for i in order:
        at = times[i]
        if current is None or at > current.last_event_at + gap:
            if current is not None:
                current.close_reason = "gap"
            current = Run(None, at, at)
            runs.append(current)
        current.add(i, at)
    return [run for run in runs if run.members or run.close_reason]


def _place_before(
    before: list[int], times: Sequence[datetime], current: Run, gap: timedelta
) -> list[Run]:
    """Events earlier than the open session: chain back into it, the rest are late."""
    start = current.started_at
    chained: list[int] = []
    for i in reversed(before):
        if start - times[i] > gap:
            break
        chained.append(i)
        start = times[i]
    for i in reversed(chained):
        current.add(i, times[i])
    late_runs: list[Run] = []
    for i in before[: len(before) - len(chained)]:
        at = times[i]
        if not late_runs or at > late_runs[-1].last_event_at + gap:
            late_runs.append(Run(None, at, at, close_reason="late"))
        late_runs[-1].add(i, at)
    return late_runs
