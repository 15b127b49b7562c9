"""Concurrent appenders on real commits. An append reads, plans and writes under the ledger
lock: id order is commit order, so a reader that advances its checkpoint to the largest id
seen never skips an event, and an append that waited for the lock sees what the holder
committed."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from ledger import (
    AppendResult,
    append,
    events_after,
    list_sessions,
    read_session,
    sweep_idle,
)
from ledger.db import LEDGER_LOCK, Conn, connect
from tests.events import message

TOTAL = 10_000
APPENDERS = 6
TENANTS = ("tenant-a", "tenant-b", "tenant-c")
CHANNELS = ("general", "dm-1", "dm-2", "support")
T0 = datetime(2024, 6, 1, tzinfo=UTC)
NOW = datetime(2024, 7, 1, tzinfo=UTC)
DEADLINE_S = 180.0

Key = tuple[str, str, str]


def _plan(worker: int, count: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """One worker's batches: (tenant, events), 25–100 events each, over several channels."""
    rng = random.Random(worker)
    batches: list[tuple[str, list[dict[str, Any]]]] = []
    k = 0
    while k < count:
        size = min(rng.randint(25, 100), count - k)
        tenant = rng.choice(TENANTS)
        events = []
        for _ in range(size):
            events.append(
                {
                    "external_id": f"w{worker}-{k}",
                    "channel_id": rng.choice(CHANNELS),
                    "role": rng.choice(["user", "assistant"]),
                    "actor_id": f"actor-{worker}",
                    "content": f"event {k} of worker {worker}",
                    # interleaved, sometimes late, sometimes past the gap
                    "occurred_at": T0 + timedelta(seconds=k * 20 + rng.randint(-600, 600)),
                }
            )
            k += 1
        batches.append((tenant, events))
    return batches


class Reader(threading.Thread):
    """Tails events_after(checkpoint) on its own connection until it saw ``total`` events,
    or a poll started after every writer finished comes back empty, or the deadline."""

    def __init__(self, url: str, total: int, deadline: float) -> None:
        super().__init__(name="tailing-reader", daemon=True)
        self.url, self.total, self.deadline = url, total, deadline
        self.ids: list[int] = []
        self.keys: list[Key] = []
        self.polls = 0
        self.error: BaseException | None = None
        self.writers_done = threading.Event()

    def run(self) -> None:
        try:
            with connect(self.url, autocommit=True) as conn:
                checkpoint = 0
                while len(self.ids) < self.total and time.monotonic() < self.deadline:
                    drained = self.writers_done.is_set()  # read before the poll
                    rows = events_after(conn, checkpoint, limit=97)
                    self.polls += 1
                    for row in rows:
                        self.ids.append(row["id"])
                        self.keys.append((row["tenant_id"], row["channel_id"], row["external_id"]))
                    if rows:
                        checkpoint = max(checkpoint, *(r["id"] for r in rows))
                    elif drained:  # every writer had committed before this empty poll
                        break
                    else:  # nothing new yet: poll again shortly
                        self.writers_done.wait(0.001)
        except BaseException as exc:  # reported by the test thread
            self.error = exc


def _appender(
    url: str,
    batches: list[tuple[str, list[dict[str, Any]]]],
    start: threading.Barrier,
    written: list[Key],
    errors: list[BaseException],
) -> None:
    try:
        with connect(url, autocommit=True) as conn:
            start.wait()
            for tenant, events in batches:
                result = append(conn, tenant, events, now=NOW)
                assert result.accepted == len(events), result
                written.extend((tenant, e["channel_id"], e["external_id"]) for e in events)
    except BaseException as exc:
        errors.append(exc)


def test_a_tailing_reader_sees_every_event_of_concurrent_appenders_exactly_once_in_id_order(
    fresh_db_url: str,
) -> None:
    per_worker = [TOTAL // APPENDERS + (w < TOTAL % APPENDERS) for w in range(APPENDERS)]
    plans = [_plan(w, n) for w, n in enumerate(per_worker)]
    assert sum(len(e) for plan in plans for _, e in plan) == TOTAL
    start = threading.Barrier(APPENDERS)
    written: list[list[Key]] = [[] for _ in range(APPENDERS)]
    errors: list[BaseException] = []
    reader = Reader(fresh_db_url, TOTAL, time.monotonic() + DEADLINE_S)
    appenders = [
        threading.Thread(
            target=_appender, args=(fresh_db_url, plans[w], start, written[w], errors), daemon=True
        )
        for w in range(APPENDERS)
    ]

    reader.start()
    for t in appenders:
        t.start()
    for t in appenders:
        t.join(timeout=DEADLINE_S)
    reader.writers_done.set()
    reader.join(timeout=DEADLINE_S)

    assert not errors, errors
    assert not any(t.is_alive() for t in appenders), "an appender did not finish in time"
    assert not reader.is_alive(), "the reader did not finish in time"
    assert reader.error is None, reader.error
    all_written = [k for w in written for k in w]
    assert len(all_written) == TOTAL == len(set(all_written))
    assert len(reader.ids) == TOTAL, f"reader saw {len(reader.ids)} of {TOTAL} events"
    assert all(a < b for a, b in pairwise(reader.ids)), "ids not strictly increasing"
    repeated = [k for k, n in Counter(reader.keys).items() if n > 1]
    assert not repeated, f"seen more than once: {repeated[:5]}"
    assert set(reader.keys) == set(all_written)
    # the reader really tailed (it did not just read everything at the end)
    assert reader.polls > TOTAL // 97

    with connect(fresh_db_url, autocommit=True) as conn:
        assert events_after(conn, max(reader.ids)) == []
        row = conn.execute(
            "SELECT count(*) AS n, count(DISTINCT (tenant_id, session_id, seq)) AS seqs"
            " FROM memory_session_events"
        ).fetchone()
        assert row == {"n": TOTAL, "seqs": TOTAL}
        open_per_channel = conn.execute(
            "SELECT tenant_id, channel_id, count(*) AS n FROM memory_sessions"
            " WHERE status = 'open' GROUP BY 1, 2 HAVING count(*) > 1"
        ).fetchall()
        assert open_per_channel == []


# ------------------------------------------------------- an append waiting for the lock


def _event(external_id: str, minutes: int) -> dict[str, Any]:
    return message(external_id, T0 + timedelta(minutes=minutes))


class BlockedAppend(threading.Thread):
    """An append on its own connection, started while another transaction holds the ledger
    lock."""

    def __init__(self, url: str, tenant: str, events: list[dict[str, Any]]) -> None:
        super().__init__(name="blocked-append", daemon=True)
        self.url, self.tenant, self.events = url, tenant, events
        self.result: AppendResult | None = None
        self.error: BaseException | None = None
        self.connected = threading.Event()
        self.backend_pid = 0

    def run(self) -> None:
        try:
            with connect(self.url, autocommit=True) as conn:
                self.backend_pid = conn.info.backend_pid
                self.connected.set()
                self.result = append(conn, self.tenant, self.events, now=NOW)
        except BaseException as exc:  # reported by the test thread
            self.error = exc
            self.connected.set()

    def wait_until_blocked(self, watch: Conn) -> None:
        """Until its backend waits on the ledger (advisory) lock."""
        assert self.connected.wait(10)
        _wait_for_a_waiter(
            watch,
            "pid = %s AND wait_event = 'advisory'",
            [self.backend_pid],
            "the append never waited for the ledger lock",
        )

    def finish(self) -> AppendResult:
        self.join(timeout=30)
        assert not self.is_alive(), "the append did not finish"
        assert self.error is None, self.error
        assert self.result is not None
        return self.result


def _race(
    url: str,
    tenant: str,
    first: Callable[[Conn], object],
    late: list[dict[str, Any]],
    *,
    stored: list[dict[str, Any]] | None = None,
) -> AppendResult:
    """After ``stored`` is appended and committed, ``first`` runs in a transaction that
    holds the ledger lock; an append of ``late`` starts meanwhile and goes on once it
    commits."""
    with connect(url) as holder, connect(url, autocommit=True) as watch:
        if stored:
            append(watch, tenant, stored, now=NOW)
        holder.execute("SELECT pg_advisory_xact_lock(%s)", [LEDGER_LOCK])  # held to commit
        first(holder)  # inside that transaction
        blocked = BlockedAppend(url, tenant, late)
        blocked.start()
        blocked.wait_until_blocked(watch)
        holder.commit()
    return blocked.finish()


def _ledger(url: str, tenant: str) -> list[tuple[str, str | None, list[tuple[int, str]]]]:
    """Each session as (status, close reason, [(seq, external id)])."""
    with connect(url, autocommit=True) as conn:
        return [
            (
                s["status"],
                s["close_reason"],
                [(e["seq"], e["external_id"]) for e in read_session(conn, tenant, s["id"])],
            )
            for s in list_sessions(conn, tenant)
        ]


def test_an_append_waiting_while_its_open_session_grows_extends_it_after(
    fresh_db_url: str,
) -> None:
    result = _race(
        fresh_db_url,
        "t",
        lambda holder: append(holder, "t", [_event("b", 5), _event("c", 10)], now=NOW),
        [_event("d", 15), _event("e", 20)],
        stored=[_event("a", 0)],
    )

    assert result.accepted == 2 and result.opened == ()
    assert _ledger(fresh_db_url, "t") == [
        ("open", None, [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")])
    ]


def test_an_append_waiting_while_its_open_session_is_closed_opens_a_new_one(
    fresh_db_url: str,
) -> None:
    result = _race(
        fresh_db_url,
        "t",
        lambda holder: sweep_idle(holder, now=NOW + timedelta(days=1), tenant_id="t"),
        [_event("b", 5)],
        stored=[_event("a", 0)],
    )

    assert result.accepted == 1 and len(result.opened) == 1
    assert _ledger(fresh_db_url, "t") == [
        ("closed", "idle", [(1, "a")]),
        ("open", None, [(1, "b")]),
    ]


def test_a_sweep_waiting_for_an_append_to_a_replay_leaves_its_session_open(
    fresh_db_url: str,
) -> None:
    """A replay's next part (old events, arriving now) commits while a sweep waits for its
    session's row: the sweep sees the new append and does not cut the replay."""
    later = NOW + timedelta(hours=2)
    swept: list[list[tuple[str, int]]] = []
    with connect(fresh_db_url, autocommit=True) as watch, connect(fresh_db_url) as holder:
        append(watch, "t", [_event("a", 0)], now=NOW)  # idle since NOW
        holder.execute("SELECT 1")  # a transaction the append joins: not committed yet
        append(holder, "t", [_event("b", 5)], now=later)
        sweeper = threading.Thread(
            target=lambda: swept.append(_sweep(fresh_db_url, later + timedelta(seconds=1)))
        )
        sweeper.start()
        _wait_for_a_waiter(
            watch,
            "wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')",
            [],
            "the sweep never waited for the session's row",
        )
        holder.commit()
        sweeper.join(timeout=30)
    assert swept == [[]]
    assert _ledger(fresh_db_url, "t") == [("open", None, [(1, "a"), (2, "b")])]


def _sweep(url: str, now: datetime) -> list[tuple[str, int]]:
    with connect(url, autocommit=True) as conn:
        return sweep_idle(conn, now=now, tenant_id="t")


def _wait_for_a_waiter(watch: Conn, where: str, params: list[Any], failure: str) -> None:
    """Until a backend matching ``where`` (over pg_stat_activity) waits; else ``failure``."""
    query = f"SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE {where}) AS waiting"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = watch.execute(query, params).fetchone()
        if row and row["waiting"]:
            return
        time.sleep(0.005)
    raise AssertionError(failure)


def test_a_delivery_waiting_while_its_retry_commits_is_all_duplicates(fresh_db_url: str) -> None:
    batch = [_event("a", 0), _event("b", 5)]

    result = _race(fresh_db_url, "t", lambda holder: append(holder, "t", batch, now=NOW), batch)

    assert result.duplicates == 2 and result.accepted == 0
    assert _ledger(fresh_db_url, "t") == [("open", None, [(1, "a"), (2, "b")])]
