"""The gap rule (ledger.sessionize.place): batch by batch it cuts the same sessions as one
look at the whole sorted timeline, and late events join or stand apart by the rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.sessionize import OpenSession, place
from tests.examples import examples

GAP = timedelta(minutes=30)
BASE = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)

# Steps between consecutive events: mostly ties and steps hugging the 30-minute boundary,
# plus arbitrary steps up to a few hours (so a timeline spans up to a few days).
_BOUNDARY_STEPS = [
    timedelta(0),
    GAP - timedelta(microseconds=1),
    GAP,
    GAP + timedelta(microseconds=1),
]
step = st.one_of(
    st.sampled_from(_BOUNDARY_STEPS),
    st.sampled_from([timedelta(seconds=s) for s in (0, 1, 60, 1799, 1800, 1801, 3600)]),
    st.integers(0, 4 * 3600).map(lambda s: timedelta(seconds=s)),
)
# Any fixed offset: the same instant written in many zones must sort as one instant.
zone = st.integers(-12 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@st.composite
def timelines(draw: st.DrawFn) -> list[datetime]:
    """Timestamps in time order, each written in some timezone."""
    steps = draw(st.lists(step, min_size=1, max_size=40))
    out: list[datetime] = []
    at = BASE
    for s in steps:
        at = at + s
        out.append(at.astimezone(draw(zone)))
    return out


@st.composite
def batched(draw: st.DrawFn, n: int) -> list[list[int]]:
    """Positions 0..n-1 cut into consecutive non-empty batches, each shuffled."""
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    return [draw(st.permutations(list(range(lo, hi)))) for lo, hi in pairwise(bounds)]


def maximal_runs(times: list[datetime], gap: timedelta) -> list[list[int]]:
    """Positions of the sorted ``times`` grouped into runs whose consecutive gaps are <= gap."""
    runs: list[list[int]] = []
    for i, at in enumerate(times):
        if not runs or at - times[runs[-1][-1]] > gap:
            runs.append([])
        runs[-1].append(i)
    return runs


@dataclass
class Sessions:
    """What append would store for one channel, fed batch by batch through ``place``."""

    members: dict[int, list[int]] = field(default_factory=dict)
    bounds: dict[int, tuple[datetime, datetime]] = field(default_factory=dict)
    close_reason: dict[int, str | None] = field(default_factory=dict)
    open: OpenSession | None = None
    next_id: int = 1

    def feed(self, times: list[datetime], batch: list[int], gap: timedelta) -> None:
        runs = place([times[p] for p in batch], self.open, gap)
        for run in runs:
            if run.session_id is None:
                sid, self.next_id = self.next_id, self.next_id + 1
                self.members[sid] = []
            else:
                assert self.open is not None and run.session_id == self.open.id
                sid = run.session_id
            self.members[sid].extend(batch[m] for m in run.members)
            self.bounds[sid] = (run.started_at, run.last_event_at)
            self.close_reason[sid] = run.close_reason
            if run.close_reason is None:
                self.open = OpenSession(sid, run.started_at, run.last_event_at)
            elif self.open is not None and self.open.id == sid:
                self.open = None


@settings(max_examples=examples(300))
@given(data=st.data())
def test_place_batch_by_batch_cuts_the_maximal_runs_of_the_sorted_timeline(
    data: st.DataObject,
) -> None:
    times = data.draw(timelines(), label="times")
    batches = data.draw(batched(len(times)), label="batches")
    state = Sessions()
    for batch in batches:
        state.feed(times, batch, GAP)

    got = sorted(sorted(m) for m in state.members.values())
    assert got == maximal_runs(times, GAP)
    for sid, members in state.members.items():
        started, last = state.bounds[sid]
        assert started == min(times[p] for p in members)
        assert last == max(times[p] for p in members)
    # Time-ordered input never makes late sessions: every session but the last was closed
    # by the gap rule, and the last one is still open.
    by_start = sorted(state.members, key=lambda sid: state.bounds[sid][0])
    assert [state.close_reason[sid] for sid in by_start] == ["gap"] * (len(by_start) - 1) + [None]
    assert state.open is not None and state.open.id == by_start[-1]


def test_place_orders_each_runs_members_by_time_whatever_the_batch_order() -> None:
    times = [BASE + timedelta(minutes=m) for m in (20, 0, 10, 75, 70)]
    runs = place(times, None, GAP)
    assert [r.members for r in runs] == [[1, 2, 0], [4, 3]]
    assert [r.close_reason for r in runs] == ["gap", None]


def test_place_joins_a_late_event_that_chains_back_to_the_open_sessions_start() -> None:
    open_session = OpenSession(7, BASE, BASE + timedelta(minutes=20))
    # 11:15 is within 30 min of 11:40, which is within 30 min of the start at 12:00.
    times = [BASE - timedelta(minutes=45), BASE - timedelta(minutes=20)]
    runs = place(times, open_session, GAP)
    assert len(runs) == 1
    (run,) = runs
    assert run.session_id == 7
    assert run.members == [0, 1]
    assert run.close_reason is None
    assert run.started_at == BASE - timedelta(minutes=45)
    assert run.last_event_at == BASE + timedelta(minutes=20)


def test_place_joins_a_late_event_inside_the_open_sessions_window() -> None:
    open_session = OpenSession(7, BASE, BASE + timedelta(minutes=50))
    runs = place([BASE + timedelta(minutes=25)], open_session, GAP)
    assert [(r.session_id, r.members, r.close_reason) for r in runs] == [(7, [0], None)]
    assert (runs[0].started_at, runs[0].last_event_at) == (BASE, BASE + timedelta(minutes=50))


def test_place_puts_an_event_far_before_the_open_session_in_a_new_session_closed_as_late() -> None:
    open_session = OpenSession(7, BASE, BASE + timedelta(minutes=20))
    far = BASE - timedelta(hours=3)
    runs = place([far], open_session, GAP)
    assert len(runs) == 1
    (late,) = runs
    assert late.session_id is None
    assert late.close_reason == "late"
    assert late.members == [0]
    assert (late.started_at, late.last_event_at) == (far, far)


def test_place_splits_late_events_by_the_gap_and_still_chains_the_rest_to_the_open_session() -> (
    None
):
    open_session = OpenSession(7, BASE, BASE + timedelta(minutes=5))
    minutes = [-300, -290, -200, -31, -10]  # two late groups; -31 chains via -10
    runs = place([BASE + timedelta(minutes=m) for m in minutes], open_session, GAP)
    summary = [(r.session_id, r.members, r.close_reason) for r in runs]
    assert summary == [(7, [3, 4], None), (None, [0, 1], "late"), (None, [2], "late")]


def test_place_exactly_one_gap_apart_stays_in_one_session_and_one_microsecond_more_splits() -> None:
    at_gap = place([BASE, BASE + GAP], None, GAP)
    assert [r.members for r in at_gap] == [[0, 1]]
    over = place([BASE, BASE + GAP + timedelta(microseconds=1)], None, GAP)
    assert [r.members for r in over] == [[0], [1]]
    assert [r.close_reason for r in over] == ["gap", None]


def test_place_closes_the_open_session_by_gap_when_the_batch_starts_after_it() -> None:
    open_session = OpenSession(7, BASE, BASE + timedelta(minutes=5))
    runs = place([BASE + timedelta(hours=2)], open_session, GAP)
    assert [(r.session_id, r.members, r.close_reason) for r in runs] == [
        (7, [], "gap"),
        (None, [0], None),
    ]
