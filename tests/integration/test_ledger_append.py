"""The ledger's append/close/read API on a real PostgreSQL: sessions by the gap rule,
idempotence, late events, the sweeper, replay, and validation that writes nothing."""

from __future__ import annotations

import itertools
import json
import math
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger import (
    AppendResult,
    InvalidArgument,
    InvalidEvent,
    Limits,
    SessionNotFound,
    append,
    append_batches,
    close_session,
    close_sessions,
    events_after,
    get_session,
    list_sessions,
    read_session,
    sweep_idle,
)
from ledger.db import Conn, connect
from ledger.store import DEFAULT_GAP, open_session_tail
from ops.usecases.ingest import ingest_lines
from tests.events import message

GAP = timedelta(minutes=30)
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 10, tzinfo=UTC)
_tenants = itertools.count()


def new_tenant() -> str:
    return f"t-{uuid.uuid4().hex[:8]}-{next(_tenants)}"


def ev(external_id: str, minutes: float, **fields: Any) -> dict[str, Any]:
    """``tests.events.message`` at ``minutes`` after T0 (``fields``: channel, actor, ..)."""
    return message(external_id, T0 + timedelta(minutes=minutes), **fields)


def table_rows(conn: Conn, tenant: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    sessions = conn.execute(
        "SELECT * FROM memory_sessions WHERE tenant_id = %s ORDER BY id", [tenant]
    ).fetchall()
    events = conn.execute(
        "SELECT * FROM memory_session_events WHERE tenant_id = %s ORDER BY id", [tenant]
    ).fetchall()
    return sessions, events


def session_members(
    conn: Conn, tenant: str, channel: str
) -> list[tuple[dict[str, Any], list[str]]]:
    """Each session of the channel (by start) with the external ids read_session replays."""
    return [
        (s, [e["external_id"] for e in read_session(conn, tenant, s["id"])])
        for s in list_sessions(conn, tenant, channel_id=channel)
    ]


# ------------------------------------------------------------------------ idempotence


def test_appending_the_same_batch_twice_leaves_the_same_rows(conn: Conn) -> None:
    tenant = new_tenant()
    batch = [
        ev("a", 0),
        ev("b", 5, actor="u2"),
        ev("c", 120),  # after the gap: closes the first session
        ev("d", 0, channel="c2"),
        ev("e", -300),  # late: before the open session, after a new one opens
    ]
    first = append(conn, tenant, batch, now=NOW)
    assert first.accepted == len(batch)
    before = table_rows(conn, tenant)
    assert len(before[1]) == len(batch)
    stored_ids = {r["external_id"]: r["id"] for r in before[1]}
    assert [o.event_id for o in first.outcomes] == [stored_ids[e["external_id"]] for e in batch]

    second = append(conn, tenant, batch, now=NOW + timedelta(hours=1))

    assert second.duplicates == len(batch)
    assert second.accepted == 0
    assert all(o.session_id is None and o.event_id is None for o in second.outcomes)
    assert second.opened == ()
    assert second.closed == ()
    assert table_rows(conn, tenant) == before


def test_event_ids_are_read_back_when_the_inserts_ids_are_not_consecutive(conn: Conn) -> None:
    """The insert returns its first and last ids; ids that skip (here a sequence stepping
    by 3) are read by external id instead, each event getting its own."""
    conn.execute("ALTER TABLE memory_session_events ALTER COLUMN id SET INCREMENT BY 3")
    tenant = new_tenant()
    batch = [ev("a", 0), ev("b", 1, channel="c2"), ev("c", 2), ev("a", 3)]
    result = append(conn, tenant, batch, now=NOW)
    stored = {r["external_id"]: r["id"] for r in table_rows(conn, tenant)[1]}
    assert [o.event_id for o in result.outcomes] == [stored["a"], stored["b"], stored["c"], None]
    assert len({stored["a"], stored["b"], stored["c"]}) == 3


def test_append_treats_a_repeated_external_id_inside_one_batch_as_a_duplicate(conn: Conn) -> None:
    tenant = new_tenant()
    result = append(conn, tenant, [ev("a", 0), ev("a", 1, content="retry")], now=NOW)
    assert [o.status for o in result.outcomes] == ["accepted", "duplicate"]
    (session,) = list_sessions(conn, tenant)
    (only,) = read_session(conn, tenant, session["id"])
    assert only["content"] == "message a"


def test_append_scopes_external_ids_per_channel_and_per_tenant(conn: Conn) -> None:
    tenant, other = new_tenant(), new_tenant()
    append(conn, tenant, [ev("a", 0)], now=NOW)
    result = append(conn, tenant, [ev("a", 0, channel="c2")], now=NOW)
    assert result.accepted == 1
    assert append(conn, other, [ev("a", 0)], now=NOW).accepted == 1


# ------------------------------------------------------------------------ gap rule property

_BOUNDARY = [timedelta(0), GAP - timedelta(microseconds=1), GAP, GAP + timedelta(microseconds=1)]
_step = st.one_of(
    st.sampled_from(_BOUNDARY),
    st.sampled_from([timedelta(seconds=s) for s in (0, 1, 1799, 1800, 1801, 3600)]),
    st.integers(0, 4 * 3600).map(lambda s: timedelta(seconds=s)),
)
_zone = st.integers(-12 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@st.composite
def _timeline_in_batches(draw: st.DrawFn) -> tuple[list[datetime], list[list[int]]]:
    steps = draw(st.lists(_step, min_size=1, max_size=30), label="steps")
    times: list[datetime] = []
    at = T0
    for s in steps:
        at += s
        times.append(at.astimezone(draw(_zone)))
    n = len(times)
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    batches = [draw(st.permutations(list(range(lo, hi)))) for lo, hi in pairwise(bounds)]
    return times, batches


def _maximal_runs(times: list[datetime]) -> list[list[int]]:
    runs: list[list[int]] = []
    for i, at in enumerate(times):
        if not runs or at - times[runs[-1][-1]] > GAP:
            runs.append([])
        runs[-1].append(i)
    return runs


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(case=_timeline_in_batches())
def test_append_batch_by_batch_stores_the_maximal_runs_of_the_sorted_timeline(
    conn: Conn, case: tuple[list[datetime], list[list[int]]]
) -> None:
    times, batches = case
    tenant = new_tenant()  # the fixture's transaction spans every example
    for batch in batches:
        events = [
            {**ev(f"e{p}", 0), "occurred_at": times[p], "actor_id": f"u{p % 3}"} for p in batch
        ]
        result = append(conn, tenant, events, now=times[-1] + timedelta(days=1), gap=GAP)
        assert result.accepted == len(batch)

    stored = session_members(conn, tenant, "c1")
    expected = _maximal_runs(times)
    assert [sorted(int(x[1:]) for x in ids) for _, ids in stored] == expected
    for (session, ids), run in zip(stored, expected, strict=True):
        assert session["event_count"] == len(run)
        assert session["started_at"] == times[run[0]]
        assert session["last_event_at"] == times[run[-1]]
        # replay is in time order
        replayed = [times[int(x[1:])] for x in ids]
        assert replayed == sorted(replayed)
    assert [s["status"] for s, _ in stored] == ["closed"] * (len(stored) - 1) + ["open"]
    assert [s["close_reason"] for s, _ in stored] == ["gap"] * (len(stored) - 1) + [None]


# ------------------------------------------------------------------------ bulk appends


def _stream() -> list[list[dict[str, Any]]]:
    """Batches over two channels with gaps, late events, duplicates within a batch and
    across batches, an empty batch, display names in some batches only, and metadata."""
    return [
        [ev("a", 0), ev("b", 5, actor="u2"), ev("c", 1, channel="c2"), ev("a", 6)],
        [ev("d", 40), ev("b", 5), {**ev("e", 2, channel="c2"), "actor_name": "Eve"}],
        [ev("f", -200), ev("g", 41), ev("h", 300, channel="c2")],
        [],
        [{**ev("i", 42), "metadata": {"tool": "calendar"}}],
    ]


def _ledger_shape(conn: Conn, tenant: str) -> list[tuple[Any, ...]]:
    """The tenant's sessions, each with its events (external id, seq, recorded_at), by
    channel and start: what two tenants given the same stream must share, ids aside."""
    shape = []
    for s in sorted(list_sessions(conn, tenant), key=lambda s: (s["channel_id"], s["started_at"])):
        events = [
            (e["external_id"], e["seq"], e["recorded_at"])
            for e in read_session(conn, tenant, s["id"])
        ]
        fields = (
            "channel_id",
            "status",
            "started_at",
            "last_event_at",
            "close_reason",
            "event_count",
            "participants",
            "closed_at",
        )
        shape.append((*(s[f] for f in fields), events))
    return shape


def test_append_batches_stores_and_answers_what_appending_each_batch_does(conn: Conn) -> None:
    one_by_one, bulk = new_tenant(), new_tenant()
    times = [NOW + timedelta(minutes=k) for k in range(len(_stream()))]

    expected = [
        append(conn, one_by_one, b, now=t, gap=GAP) for b, t in zip(_stream(), times, strict=True)
    ]
    clock = iter(times)
    got = list(append_batches(conn, bulk, _stream(), clock=lambda: next(clock), gap=GAP))

    def answers(results: list[AppendResult]) -> list[Any]:
        return [
            ([(o.index, o.status) for o in r.outcomes], len(r.opened), len(r.closed))
            for r in results
        ]

    assert answers(got) == answers(expected)
    assert _ledger_shape(conn, bulk) == _ledger_shape(conn, one_by_one)
    stored = {r["id"] for r in table_rows(conn, bulk)[1]}
    assert {o.event_id for r in got for o in r.outcomes if o.event_id} == stored
    assert len(stored) == 9


@pytest.mark.parametrize("failure", ["bad event", "source error"])
def test_append_batches_stores_the_batches_before_a_failing_one_and_none_after(
    conn: Conn, failure: str
) -> None:
    tenant = new_tenant()

    def batches() -> Iterator[list[dict[str, Any]]]:
        yield [ev("a", 0), ev("b", 1)]
        yield [ev("c", 2)]
        if failure == "source error":
            raise OSError("the source failed")
        yield [ev("d", 3), {**ev("e", 4), "role": "robot"}]
        yield [ev("f", 5)]

    results = []
    with pytest.raises(InvalidEvent if failure == "bad event" else OSError) as caught:
        results.extend(append_batches(conn, tenant, batches(), clock=lambda: NOW))

    if failure == "bad event":
        assert (caught.value.index, caught.value.field) == (1, "role")
    assert [r.accepted for r in results] == [2, 1]
    assert sorted(e["external_id"] for e in table_rows(conn, tenant)[1]) == ["a", "b", "c"]


def test_append_batches_takes_each_batch_from_its_source_outside_any_transaction(
    fresh_db_url: str,
) -> None:
    """A slow source never holds the ledger lock (which every append waits for)."""
    tenant = new_tenant()
    with connect(fresh_db_url, autocommit=True) as conn:
        states = []

        def batches() -> Iterator[list[dict[str, Any]]]:
            for k in range(3):
                states.append(conn.info.transaction_status)
                yield [ev(f"e{k}", k)]

        results = list(append_batches(conn, tenant, batches(), clock=lambda: NOW))

    assert [r.accepted for r in results] == [1, 1, 1]
    assert states == [psycopg.pq.TransactionStatus.IDLE] * 3


# ------------------------------------------------------------------------ late events


def test_append_puts_a_late_event_within_the_open_sessions_window_into_it(conn: Conn) -> None:
    tenant = new_tenant()
    first = append(conn, tenant, [ev("a", 0), ev("b", 20)], now=NOW)
    (open_id,) = first.opened

    late = append(conn, tenant, [ev("late-inside", 10), ev("late-chained", -25)], now=NOW)

    assert late.opened == () and late.closed == ()
    assert {o.session_id for o in late.outcomes} == {open_id}
    session = get_session(conn, tenant, open_id)
    assert session["status"] == "open"
    assert session["event_count"] == 4
    assert session["started_at"] == T0 - timedelta(minutes=25)
    assert session["last_event_at"] == T0 + timedelta(minutes=20)
    ids = [e["external_id"] for e in read_session(conn, tenant, open_id)]
    assert ids == ["late-chained", "a", "late-inside", "b"]


def test_append_puts_a_late_event_before_a_closed_sessions_window_into_a_new_late_session(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    append(conn, tenant, [ev("a", 0), ev("b", 10)], now=NOW)
    gap_closed = append(conn, tenant, [ev("c", 120)], now=NOW)
    (first_id,) = gap_closed.closed
    (open_id,) = gap_closed.opened

    late = append(conn, tenant, [ev("ancient", -600), ev("inside-closed", 5)], now=NOW)

    assert len(late.opened) == 2
    assert sorted(late.closed) == sorted(late.opened)
    for sid in late.opened:
        row = get_session(conn, tenant, sid)
        assert (row["status"], row["close_reason"]) == ("closed", "late")
        assert row["ended_at"] == row["last_event_at"]
        assert row["closed_at"] == NOW
    # the closed session is never reopened, the open one is untouched
    closed = get_session(conn, tenant, first_id)
    assert (closed["status"], closed["event_count"]) == ("closed", 2)
    assert get_session(conn, tenant, open_id)["event_count"] == 1
    # never dropped: every event sent is stored
    assert len(table_rows(conn, tenant)[1]) == 5
    stored = session_members(conn, tenant, "c1")
    assert sorted(ids for _, ids in stored) == [["a", "b"], ["ancient"], ["c"], ["inside-closed"]]


def test_append_late_events_close_to_each_other_share_one_late_session(conn: Conn) -> None:
    tenant = new_tenant()
    append(conn, tenant, [ev("now", 0)], now=NOW)
    late = append(conn, tenant, [ev("x", -300), ev("y", -290), ev("z", -100)], now=NOW)
    groups = sorted(
        sorted(e["external_id"] for e in read_session(conn, tenant, sid)) for sid in late.opened
    )
    assert groups == [["x", "y"], ["z"]]


# ------------------------------------------------------------------------ opened / closed


def test_append_reports_the_sessions_it_opened_and_closed(conn: Conn) -> None:
    tenant = new_tenant()
    first = append(conn, tenant, [ev("a", 0), ev("b", 10)], now=NOW)
    assert len(first.opened) == 1 and first.closed == ()
    (s1,) = first.opened
    assert {o.session_id for o in first.outcomes} == {s1}

    same = append(conn, tenant, [ev("c", 35)], now=NOW)  # within 30 min of b
    assert same.opened == () and same.closed == ()
    assert same.outcomes[0].session_id == s1

    after_gap = append(conn, tenant, [ev("d", 70)], now=NOW)  # 35 min after c
    assert after_gap.closed == (s1,)
    (s2,) = after_gap.opened
    assert s2 != s1
    assert after_gap.outcomes[0].session_id == s2
    closed = get_session(conn, tenant, s1)
    assert (closed["status"], closed["close_reason"]) == ("closed", "gap")
    assert closed["ended_at"] == T0 + timedelta(minutes=35)
    assert get_session(conn, tenant, s2)["status"] == "open"


def test_append_one_batch_spanning_several_gaps_opens_and_closes_each(conn: Conn) -> None:
    tenant = new_tenant()
    result = append(conn, tenant, [ev("c", 200), ev("a", 0), ev("b", 100)], now=NOW)
    assert len(result.opened) == 3
    assert len(result.closed) == 2
    assert set(result.closed) < set(result.opened)
    sessions = list_sessions(conn, tenant)
    assert [s["status"] for s in sessions] == ["closed", "closed", "open"]
    assert [s["id"] for s in sessions if s["status"] == "closed"] == sorted(result.closed)


def test_append_cuts_sessions_per_channel(conn: Conn) -> None:
    tenant = new_tenant()
    result = append(conn, tenant, [ev("a", 0), ev("b", 1, channel="c2")], now=NOW)
    assert len(result.opened) == 2 and result.closed == ()
    assert {s["channel_id"] for s in list_sessions(conn, tenant)} == {"c1", "c2"}


# ------------------------------------------------------------------------ close and sweep


def test_close_session_is_idempotent(conn: Conn) -> None:
    tenant = new_tenant()
    (sid,) = append(conn, tenant, [ev("a", 0), ev("b", 5)], now=NOW).opened

    assert close_session(conn, tenant, sid, now=NOW) is True
    assert close_session(conn, tenant, sid, now=NOW + timedelta(hours=1)) is False

    row = get_session(conn, tenant, sid)
    assert (row["status"], row["close_reason"]) == ("closed", "explicit")
    assert row["closed_at"] == NOW
    assert row["ended_at"] == T0 + timedelta(minutes=5)
    # the next event opens a new session rather than reopening the closed one
    (new_sid,) = append(conn, tenant, [ev("c", 6)], now=NOW).opened
    assert new_sid != sid


def test_close_session_raises_session_not_found_for_an_unknown_id(conn: Conn) -> None:
    tenant = new_tenant()
    with pytest.raises(SessionNotFound):
        close_session(conn, tenant, 2**62, now=NOW)


def test_close_session_raises_session_not_found_for_another_tenants_session(conn: Conn) -> None:
    owner, intruder = new_tenant(), new_tenant()
    (sid,) = append(conn, owner, [ev("a", 0)], now=NOW).opened
    with pytest.raises(SessionNotFound):
        close_session(conn, intruder, sid, now=NOW)
    assert get_session(conn, owner, sid)["status"] == "open"


def live(conn: Conn, tenant: str, *events: dict[str, Any]) -> list[int]:
    """Append each event as it happens (the server's clock at its time), as a live chat
    does; the sessions each opened."""
    return [sid for e in events for sid in append(conn, tenant, [e], now=e["occurred_at"]).opened]


def test_sweep_idle_closes_sessions_idle_longer_than_the_gap_and_not_others(conn: Conn) -> None:
    tenant = new_tenant()
    opened = live(
        conn,
        tenant,
        ev("idle", 0, channel="idle"),
        ev("boundary", 30, channel="boundary"),  # idle exactly the gap: not longer
        ev("active", 50, channel="active"),
    )
    by_channel = {s["channel_id"]: s["id"] for s in list_sessions(conn, tenant)}
    assert len(opened) == 3
    sweep_now = T0 + timedelta(minutes=60)

    swept = sweep_idle(conn, now=sweep_now, gap=GAP, tenant_id=tenant)

    assert swept == [(tenant, by_channel["idle"])]
    idle = get_session(conn, tenant, by_channel["idle"])
    assert (idle["status"], idle["close_reason"]) == ("closed", "idle")
    assert idle["closed_at"] == sweep_now
    assert idle["ended_at"] == T0
    for channel in ("boundary", "active"):
        assert get_session(conn, tenant, by_channel[channel])["status"] == "open"
    assert sweep_idle(conn, now=sweep_now, gap=GAP, tenant_id=tenant) == []


def test_a_transcript_replayed_in_parts_stays_one_session_through_sweeps(conn: Conn) -> None:
    """Old events arriving now are idle by their own times, but not by their arrival: a
    sweep between two parts of a replay leaves the session open until the gap has passed
    since its last append."""
    tenant = new_tenant()
    (sid,) = append(conn, tenant, [ev("1", 0), ev("2", 5)], now=NOW).opened
    assert sweep_idle(conn, now=NOW + timedelta(minutes=29), gap=GAP, tenant_id=tenant) == []
    later = NOW + timedelta(minutes=20)
    assert append(conn, tenant, [ev("3", 10)], now=later).opened == ()
    assert sweep_idle(conn, now=later + timedelta(minutes=29), gap=GAP, tenant_id=tenant) == []
    swept = sweep_idle(conn, now=later + timedelta(minutes=31), gap=GAP, tenant_id=tenant)
    assert swept == [(tenant, sid)]
    assert get_session(conn, tenant, sid)["event_count"] == 3


def test_close_sessions_closes_those_still_open_of_this_tenant(conn: Conn) -> None:
    tenant, other = new_tenant(), new_tenant()
    append(conn, tenant, [ev("a", 0, channel="a"), ev("b", 0, channel="b")], now=NOW)
    (theirs,) = append(conn, other, [ev("x", 0)], now=NOW).opened
    by_channel = {s["channel_id"]: s["id"] for s in list_sessions(conn, tenant)}
    asked = [by_channel["a"], theirs, 2**62]
    assert close_sessions(conn, tenant, asked, now=NOW) == [by_channel["a"]]
    a, b = (get_session(conn, tenant, by_channel[c]) for c in ("a", "b"))
    assert (a["status"], a["close_reason"], a["closed_at"]) == ("closed", "explicit", NOW)
    assert b["status"] == "open" and get_session(conn, other, theirs)["status"] == "open"
    assert close_sessions(conn, tenant, [by_channel["a"]], now=NOW) == []


def test_sweep_idle_across_tenants_closes_each_tenants_idle_sessions(conn: Conn) -> None:
    a, b = new_tenant(), new_tenant()
    (sa,) = live(conn, a, ev("x", 0))
    (sb, sb_active) = live(conn, b, ev("x", 0), ev("y", 100, channel="c2"))

    swept = set(sweep_idle(conn, now=T0 + timedelta(minutes=110), gap=GAP))

    assert {(a, sa), (b, sb)} <= swept
    assert (b, sb_active) not in swept
    assert get_session(conn, b, sb_active)["status"] == "open"


def test_read_session_replays_events_in_occurred_at_order(conn: Conn) -> None:
    tenant = new_tenant()
    (sid,) = append(conn, tenant, [ev("c", 20), ev("a", 0), ev("d", 25)], now=NOW).opened
    append(conn, tenant, [ev("b", 10), ev("e", 26)], now=NOW)

    events = read_session(conn, tenant, sid)

    assert [e["external_id"] for e in events] == ["a", "b", "c", "d", "e"]
    assert [e["occurred_at"] for e in events] == sorted(e["occurred_at"] for e in events)
    # seq is arrival order within the session: the first batch (placed in time order),
    # then the later batch, even though its events replay in between
    assert {e["external_id"]: e["seq"] for e in events} == {"a": 1, "c": 2, "d": 3, "b": 4, "e": 5}


def test_read_session_raises_session_not_found_for_an_unknown_id(conn: Conn) -> None:
    with pytest.raises(SessionNotFound):
        read_session(conn, new_tenant(), 2**62)


def test_events_after_returns_events_in_id_order_after_the_checkpoint(conn: Conn) -> None:
    tenant = new_tenant()
    append(conn, tenant, [ev("a", 5), ev("b", 0)], now=NOW)
    append(conn, tenant, [ev("c", -100), ev("d", 1, channel="c2")], now=NOW)
    everything = events_after(conn, 0, tenant_id=tenant)
    ids = [e["id"] for e in everything]
    assert len(ids) == 4 and ids == sorted(ids) and len(set(ids)) == 4
    # a batch is stored in the order its events were placed; batches in append order
    assert {e["external_id"] for e in everything[:2]} == {"a", "b"}
    assert {e["external_id"] for e in everything[2:]} == {"c", "d"}

    checkpoint = ids[1]
    rest = events_after(conn, checkpoint, tenant_id=tenant)
    assert [e["id"] for e in rest] == ids[2:]
    assert [e["id"] for e in events_after(conn, checkpoint, 1, tenant_id=tenant)] == ids[2:3]
    assert events_after(conn, ids[-1], tenant_id=tenant) == []


# ------------------------------------------------------------------------ group chats


def test_a_group_chat_with_several_actors_is_one_session_listing_every_participant(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    result = append(
        conn,
        tenant,
        [
            ev("1", 0, actor="alice"),
            ev("2", 1, actor="bob"),
            ev("3", 2, actor="alice"),
            ev("4", 3, actor="helper-bot", role="assistant"),
        ],
        now=NOW,
    )
    (sid,) = result.opened
    append(conn, tenant, [ev("5", 4, actor="bob"), ev("6", 5, actor="carol")], now=NOW)

    (session,) = list_sessions(conn, tenant)
    assert session["id"] == sid
    assert session["event_count"] == 6
    assert session["participants"] == ["alice", "bob", "helper-bot", "carol"]


# ------------------------------------------------------------------------ bad input

BAD_AT = 2  # the bad event sits inside an otherwise-valid batch of four


def _drop(key: str) -> Callable[[dict[str, Any]], Any]:
    def mutate(e: dict[str, Any]) -> Any:
        del e[key]
        return e

    return mutate


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], Any]:
    def mutate(e: dict[str, Any]) -> Any:
        e[key] = value
        return e

    return mutate


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


MALFORMED: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("missing_external_id", _drop("external_id"), "external_id"),
    ("missing_channel_id", _drop("channel_id"), "channel_id"),
    ("missing_actor_id", _drop("actor_id"), "actor_id"),
    ("unknown_role", _set("role", "moderator"), "role"),
    ("empty_content", _set("content", ""), "content"),
    ("blank_content", _set("content", " \t\n "), "content"),
    ("oversized_content", _set("content", "x" * (Limits().max_content_bytes + 1)), "content"),
    (
        "oversized_multibyte_content",
        _set("content", "é" * (Limits().max_content_bytes // 2 + 1)),
        "content",
    ),
    ("naive_datetime", _set("occurred_at", datetime(2024, 5, 1, 9, 0)), "occurred_at"),
    ("naive_time_string", _set("occurred_at", "2024-05-01T09:00:00"), "occurred_at"),
    ("malformed_time_string", _set("occurred_at", "yesterday at noon"), "occurred_at"),
    ("far_future", _set("occurred_at", NOW + timedelta(days=365)), "occurred_at"),
    ("pre_1970", _set("occurred_at", datetime(1969, 12, 31, 23, 59, tzinfo=UTC)), "occurred_at"),
    ("int_content", _set("content", 42), "content"),
    ("str_metadata", _set("metadata", "{}"), "metadata"),
    ("list_actor_id", _set("actor_id", ["u1"]), "actor_id"),
    ("unknown_extra_field", _set("colour", "blue"), "colour"),
    ("nul_in_content", _set("content", "hello\x00world"), "content"),
    ("unpaired_surrogate_in_content", _set("content", "bad \ud800 text"), "content"),
    (
        "metadata_not_json_serializable",
        _set("metadata", {"when": datetime(2024, 1, 1)}),
        "metadata",
    ),
    ("metadata_nan", _set("metadata", {"score": math.nan}), "metadata"),
    # PostgreSQL's json types refuse NUL, in keys and values, at any depth
    ("nul_in_metadata_value", _set("metadata", {"k": ["ok", {"v": "a\x00b"}]}), "metadata"),
    ("nul_in_metadata_key", _set("metadata", {"a\x00": 1}), "metadata"),
    ("unpaired_surrogate_in_metadata", _set("metadata", {"k": "bad \ud800"}), "metadata"),
    ("metadata_over_64_levels", _set("metadata", {"k": _deep(64)}), "metadata"),
    # times whose conversion to UTC would leave the years datetime can hold
    ("time_past_year_9999", _set("occurred_at", "9999-12-31T23:59:59-01:00"), "occurred_at"),
    ("time_before_year_1", _set("occurred_at", "0001-01-01T00:00:00+01:00"), "occurred_at"),
    # offsets Python takes and PostgreSQL does not (it takes whole seconds under 16 hours)
    ("utc_offset_of_16_hours", _set("occurred_at", "2024-05-01T09:00:00+16:00"), "occurred_at"),
    ("utc_offset_of_23_59", _set("occurred_at", "2024-05-01T09:00:00-23:59"), "occurred_at"),
    (
        "utc_offset_with_a_fraction",
        _set("occurred_at", "2024-05-01T09:00:00+05:30:15.5"),
        "occurred_at",
    ),
    # ids that no scope accepts: the memory built from them could not be read or deleted
    ("actor_id_with_trailing_space", _set("actor_id", "maya "), "actor_id"),
    ("channel_id_with_a_tab", _set("channel_id", "dm\t3"), "channel_id"),
    ("channel_id_over_128", _set("channel_id", "c" * 129), "channel_id"),
    ("non_dict_event", lambda e: ["not", "an", "object"], "(event)"),
    ("string_event", lambda e: "just text", "(event)"),
]


@pytest.mark.parametrize(
    ("mutate", "field"), [pytest.param(m, f, id=name) for name, m, f in MALFORMED]
)
def test_append_rejects_a_malformed_event_naming_it_and_writes_nothing(
    conn: Conn, mutate: Callable[[dict[str, Any]], Any], field: str
) -> None:
    tenant = new_tenant()
    batch: list[Any] = [ev(f"ok{i}", i, channel=f"c{i % 2}") for i in range(4)]
    batch[BAD_AT] = mutate(dict(batch[BAD_AT]))

    with pytest.raises(InvalidEvent) as caught:
        append(conn, tenant, batch, now=NOW)

    assert caught.value.index == BAD_AT
    assert caught.value.field == field
    assert f"index={BAD_AT}" in str(caught.value)
    assert table_rows(conn, tenant) == ([], [])


# Any JSON a client can send as metadata, with strings (keys too) from all of Unicode,
# NUL and unpaired surrogates included. Floats stay below 1e15: PostgreSQL writes 3.6e+16
# back as 36028797018963970, the same JSON number, which Python reads as another value.
_ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=6)
_FLOATS = st.floats(allow_nan=False).filter(lambda f: not math.isfinite(f) or abs(f) < 1e15)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _FLOATS | _ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metadata=st.dictionaries(_ANY_TEXT, _JSON, max_size=3))
def test_any_metadata_is_stored_as_sent_or_its_event_is_rejected_naming_it(
    conn: Conn, metadata: dict[str, Any]
) -> None:
    """Never a database error: what PostgreSQL cannot store is refused as bad input."""
    tenant = new_tenant()
    event = {**ev("m1", 0), "metadata": metadata}
    try:
        append(conn, tenant, [event], now=NOW)
    except InvalidEvent as exc:
        assert exc.field == "metadata"
        return
    [row] = table_rows(conn, tenant)[1]
    assert row["metadata"] == metadata


def test_append_accepts_the_valid_batch_the_malformed_cases_are_built_from(conn: Conn) -> None:
    """Guards the test above: without the one mutation the batch is fine."""
    tenant = new_tenant()
    batch = [ev(f"ok{i}", i, channel=f"c{i % 2}") for i in range(4)]
    batch[BAD_AT] = {**batch[BAD_AT], "metadata": {"k": [1, "two", None]}, "actor_name": "Al"}
    assert append(conn, tenant, batch, now=NOW).accepted == 4
    assert len(table_rows(conn, tenant)[1]) == 4


def test_append_accepts_an_iso_time_string_with_an_offset_and_stores_the_instant(
    conn: Conn,
) -> None:
    tenant = new_tenant()
    e = {**ev("a", 0), "occurred_at": "2024-05-01T11:00:00+02:00"}
    (sid,) = append(conn, tenant, [e], now=NOW).opened
    (row,) = read_session(conn, tenant, sid)
    assert row["occurred_at"] == T0


@pytest.mark.parametrize("offset", ["+15:59:59", "-15:59", "+05:30:15", "-12:00"])
def test_append_accepts_every_utc_offset_postgresql_stores(conn: Conn, offset: str) -> None:
    tenant = new_tenant()
    at = datetime.fromisoformat(f"2024-05-01T09:00:00{offset}")
    e = {**ev("a", 0), "occurred_at": at.isoformat()}
    (sid,) = append(conn, tenant, [e], now=NOW + timedelta(days=1)).opened
    (row,) = read_session(conn, tenant, sid)
    assert row["occurred_at"] == at


def test_append_rejects_content_one_byte_over_a_custom_limit_but_not_at_it(conn: Conn) -> None:
    tenant = new_tenant()
    limits = Limits(max_content_bytes=10)
    assert (
        append(conn, tenant, [ev("a", 0, content="x" * 10)], now=NOW, limits=limits).accepted == 1
    )
    with pytest.raises(InvalidEvent) as caught:
        append(conn, tenant, [ev("b", 0, content="x" * 11)], now=NOW, limits=limits)
    assert (caught.value.index, caught.value.field) == (0, "content")


def test_append_accepts_an_event_within_the_future_skew_and_rejects_one_beyond(conn: Conn) -> None:
    tenant = new_tenant()
    skew = Limits().max_future_skew
    ok = {**ev("a", 0), "occurred_at": NOW + skew}
    assert append(conn, tenant, [ok], now=NOW).accepted == 1
    bad = {**ev("b", 0), "occurred_at": NOW + skew + timedelta(seconds=1)}
    with pytest.raises(InvalidEvent) as caught:
        append(conn, tenant, [bad], now=NOW)
    assert caught.value.field == "occurred_at"


def test_a_jsonl_file_reports_each_bad_line_and_writes_only_clean_batches(conn: Conn) -> None:
    tenant = new_tenant()

    def line(external_id: str, minutes: float, **fields: Any) -> str:
        event = ev(external_id, minutes)
        return json.dumps({**event, "occurred_at": event["occurred_at"].isoformat(), **fields})

    good = [line("a", 0), line("b", 1)]
    bad = [
        "{not json",
        '{"external_id": ' + "9" * 5000 + "}",  # past Python's digit limit for int()
        "[" * 5000 + "]" * 5000,  # deeper than the decoder's recursion
        line("c", 2, occurred_at="9999-12-31T23:59:59-01:00"),
        line("d", 3, actor_id="maya "),
    ]
    lines = list(enumerate([*good, *bad], start=1))
    report = ingest_lines(
        conn, tenant, lines, clock=lambda: NOW, gap=DEFAULT_GAP, limits=Limits(), batch_size=2
    )
    assert [b.line for b in report.bad] == [3, 4, 5, 6, 7]
    assert "occurred_at" in report.bad[3].reason and "actor_id" in report.bad[4].reason
    assert report.accepted == 2
    assert [e["external_id"] for e in table_rows(conn, tenant)[1]] == ["a", "b"]


NAIVE = datetime(2025, 1, 1)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda c, t: append(c, t, [ev("a", 0)], now=NAIVE), "now"),
        (lambda c, t: sweep_idle(c, now=NAIVE, tenant_id=t), "now"),
        (lambda c, t: close_sessions(c, t, [1], now=NAIVE), "now"),
        (lambda c, t: close_session(c, t, "abc", now=NOW), "session_id"),  # type: ignore[arg-type]
        (lambda c, t: get_session(c, t, "1"), "session_id"),  # type: ignore[arg-type]
        (lambda c, t: list_sessions(c, t, limit=-1), "limit"),
        (lambda c, t: open_session_tail(c, t, "dm", limit=-5), "limit"),
        (lambda c, t: events_after(c, "x", tenant_id=t), "after"),  # type: ignore[arg-type]
    ],
    ids=["append", "sweep", "close_sessions", "close_session", "get_session", "list_sessions",
         "open_session_tail", "events_after"],
)  # fmt: skip
def test_a_library_call_given_an_unusable_argument_names_it_and_writes_nothing(
    conn: Conn, call: Callable[[Conn, str], object], argument: str
) -> None:
    tenant = new_tenant()
    with pytest.raises(InvalidArgument) as raised:
        call(conn, tenant)
    assert argument in raised.value.fields
    assert table_rows(conn, tenant) == ([], [])


def test_close_sessions_leaves_ids_no_session_can_have_alone(conn: Conn) -> None:
    tenant = new_tenant()
    result = append(conn, tenant, [ev("a", 0)], now=NOW)
    assert close_sessions(conn, tenant, [2**70, -1, 0, *result.opened], now=NOW) == list(
        result.opened
    )
