"""The session ledger: append, close, sweep, replay, tail.

Appends are serialized by one transaction-level advisory lock, so event ids are assigned
in commit order and a reader tailing ``id > checkpoint`` never skips a late commit. Every
tenant-scoped call runs under row-level security (:func:`ledger.db.tenant_scope`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import psycopg

from ledger.db import LEDGER_LOCK, Conn, Encoded, encode, tenant_scope
from ledger.errors import InvalidArgument, SessionNotFound
from ledger.events import DEFAULT_LIMITS, EventIn, Limits, parse_events
from ledger.jsontext import dumps
from ledger.sessionize import OpenSession, Run, place
from ledger.sqlfile import load_queries

Q = load_queries("ledger")
DEFAULT_GAP = timedelta(minutes=30)


@dataclass(frozen=True, slots=True)
class EventOutcome:
    """What became of one input event."""

    index: int
    status: Literal["accepted", "duplicate"]
    session_id: int | None  # None for a duplicate
    event_id: int | None  # the stored event's id; None for a duplicate


@dataclass(frozen=True, slots=True)
class AppendResult:
    outcomes: tuple[EventOutcome, ...]
    opened: tuple[int, ...]  # sessions created by this append (open or closed)
    closed: tuple[int, ...]  # sessions this append closed: ready to build

    @property
    def accepted(self) -> int:
        return sum(o.status == "accepted" for o in self.outcomes)

    @property
    def duplicates(self) -> int:
        return sum(o.status == "duplicate" for o in self.outcomes)


def append(
    conn: Conn,
    tenant_id: str,
    events: Sequence[EventIn | Mapping[str, Any]],
    *,
    now: datetime,
    gap: timedelta = DEFAULT_GAP,
    limits: Limits = DEFAULT_LIMITS,
) -> AppendResult:
    """Validate and append a batch; idempotent on ``(channel_id, external_id)``.

    A bad event raises :class:`ledger.errors.InvalidEvent` and nothing is written. The
    ledger lock is held from the read round trip to the end of the transaction: when this
    call owns the transaction, its writes and the commit go in one more round trip.
    """
    return _store(conn, tenant_id, _Batch.of(events, _aware(now), limits), gap)


def append_batches(
    conn: Conn,
    tenant_id: str,
    batches: Iterable[Sequence[EventIn | Mapping[str, Any]]],
    *,
    clock: Callable[[], datetime],
    gap: timedelta = DEFAULT_GAP,
    limits: Limits = DEFAULT_LIMITS,
) -> Iterator[AppendResult]:
    """Append each batch as :func:`append` would, in order, each in a transaction of its
    own at the time ``clock`` gives when it is validated; yield each one's result once it
    is committed.

    The bulk path: each batch is validated while the database stores the one before it
    (on another core); it is taken from ``batches`` before that one's transaction, so a
    slow source never holds the ledger lock. A bad batch raises
    :class:`ledger.errors.InvalidEvent` at its turn, as does an error of ``batches``:
    the batches before it are stored, it and those after it are not.
    """
    source = iter(batches)
    events = next(source, None)
    ready = None if events is None else _Batch.of(events, _aware(clock()), limits)
    failure: Exception | None = None

    def validate_next() -> None:
        nonlocal ready, failure
        if events is not None:
            try:
                ready = _Batch.of(events, _aware(clock()), limits)
            except Exception as exc:  # raised at its turn, after the batch being stored
                failure = exc

    while ready is not None:
        batch, ready = ready, None
        try:
            events = next(source, None)
        except Exception as exc:
            events, failure = None, exc
        yield _store(conn, tenant_id, batch, gap, validate_next)
        if failure is not None:
            raise failure


@dataclass(frozen=True, slots=True)
class _Batch:
    """A validated batch, its fields as columns (also dumped for the statements, in
    batch order), and the time it is appended at."""

    events: list[EventIn]
    columns: dict[str, list[Any]]
    encoded: dict[str, Encoded]
    channels: Encoded  # the batch's channels, once each: whose open sessions to read
    now: datetime

    @classmethod
    def of(
        cls, events: Sequence[EventIn | Mapping[str, Any]], now: datetime, limits: Limits
    ) -> _Batch:
        parsed = parse_events(events, now=now, limits=limits)
        # the columns too, dumped, before the ledger lock: little is left to do under it
        columns = _columns(parsed)
        encoded = encode({**columns, "channels": list(dict.fromkeys(columns["channel_ids"]))})
        channels = encoded.pop("channels")
        return cls(parsed, columns, encoded, channels, now)


def _store(
    conn: Conn,
    tenant_id: str,
    batch: _Batch,
    gap: timedelta,
    meanwhile: Callable[[], None] = lambda: None,
) -> AppendResult:
    """Append a validated batch. ``meanwhile`` runs once the writes are on their way to
    the database, before their results are awaited."""
    parsed = batch.events
    with conn.pipeline(), tenant_scope(conn, tenant_id):
        stored, open_rows = _read_state(conn, tenant_id, batch)
        fresh, dup = _split_duplicates(parsed, stored)
        plan = _plan(parsed, fresh, {r["channel_id"]: r for r in open_rows}, gap)
        created = _write(conn, tenant_id, batch, plan)
        meanwhile()
        rows = created.fetchall()
        span = next(r for r in rows if r["channel_id"] is None)
        new_ids = {(r["channel_id"], r["started_at"]): r["id"] for r in rows if r is not span}
        event_ids = _event_ids(conn, tenant_id, parsed, plan, span)
    return plan.result(dup, new_ids, event_ids)


def _columns(events: list[EventIn]) -> dict[str, list[Any]]:
    """The events' stored fields as columns (batch order): the statements take them as
    arrays in binary, which the server reads with no parsing (JSON cost it four times
    the time)."""
    return {
        "channel_ids": [e.channel_id for e in events],
        "roles": [e.role for e in events],
        "actor_ids": [e.actor_id for e in events],
        "actor_names": [e.actor_name for e in events],
        "contents": [e.content for e in events],
        "occurred_ats": [e.occurred_at for e in events],
        "utc_offsets": [utc_offset_minutes(e.occurred_at) for e in events],
        "external_ids": [e.external_id for e in events],
        "metadata": [dumps(e.metadata) if e.metadata else "{}" for e in events],
    }


def _read_state(
    conn: Conn, tenant_id: str, batch: _Batch
) -> tuple[set[tuple[str, str]], list[dict[str, Any]]]:
    """Under the ledger lock, in one round trip: the batch's (channel, external id) pairs
    already stored, and the open sessions of its channels (locked for update)."""
    keys = {k: batch.encoded[k] for k in ("channel_ids", "external_ids")}
    conn.execute(Q["lock_ledger"], {"key": LEDGER_LOCK})
    existing = conn.execute(Q["existing_external_ids"], {"tenant_id": tenant_id, **keys})
    sessions = conn.execute(
        Q["open_sessions_for_update"],
        {"tenant_id": tenant_id, "channel_ids": batch.channels},
    )
    stored = {(r["channel_id"], r["external_id"]) for r in existing.fetchall()}
    return stored, sessions.fetchall()


def _event_ids(
    conn: Conn, tenant_id: str, events: list[EventIn], plan: _Plan, span: Mapping[str, Any]
) -> list[int | None]:
    """Each event's stored id (None for a duplicate), from the first and last ids the
    insert returned (``span``), or read by external id when they are not consecutive."""
    ids: list[int | None] = [None] * len(events)
    order = plan.order
    if not order:
        return ids
    first, last, n = span["id"], span["last_id"], span["n"]
    if last - first + 1 == n == len(order):
        for k, i in enumerate(order):
            ids[i] = first + k
        return ids
    keys = _key_arrays((events[i].channel_id, events[i].external_id) for i in order)
    rows = conn.execute(Q["event_ids"], {"tenant_id": tenant_id, **keys})
    found = {(r["channel_id"], r["external_id"]): r["id"] for r in rows.fetchall()}
    for i in order:
        ids[i] = found[(events[i].channel_id, events[i].external_id)]
    return ids


def _key_arrays(keys: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``(channel id, external id)`` pairs as the two arrays the statements take."""
    pairs = list(keys)
    return {"channel_ids": [c for c, _ in pairs], "external_ids": [x for _, x in pairs]}


def _split_duplicates(
    events: list[EventIn], stored: set[tuple[str, str]]
) -> tuple[list[int], set[int]]:
    """Positions of new events, and of events already stored (or repeated in the batch)."""
    seen = set(stored)
    fresh: list[int] = []
    dup: set[int] = set()
    for i, e in enumerate(events):
        k = (e.channel_id, e.external_id)
        if k in seen:
            dup.add(i)
        else:
            seen.add(k)
            fresh.append(i)
    return fresh, dup


@dataclass(frozen=True, slots=True)
class _Placed:
    """A session's share of a batch: its members (batch positions, in time order)."""

    channel_id: str
    run: Run
    members: list[int]
    stored: Mapping[str, Any] | None  # the open session it extends; None: a new session

    @property
    def key(self) -> tuple[str, datetime]:
        """Names a new session within its batch (its runs on a channel are disjoint)."""
        return self.channel_id, self.run.started_at


@dataclass(frozen=True, slots=True)
class _Plan:
    placed: list[_Placed]
    order: list[int]  # the new events' batch positions, in batch order: as inserted

    def result(
        self,
        dup: set[int],
        new_ids: Mapping[tuple[str, datetime], int],
        event_ids: Sequence[int | None],
    ) -> AppendResult:
        opened: list[int] = []
        closed: list[int] = []
        session_of: dict[int, int] = {}
        for p in self.placed:
            sid = int(p.stored["id"]) if p.stored else new_ids[p.key]
            if p.stored is None:
                opened.append(sid)
            if p.run.close_reason:
                closed.append(sid)
            session_of.update(dict.fromkeys(p.members, sid))
        outcomes = tuple(
            EventOutcome(i, "duplicate", None, None)
            if i in dup
            else EventOutcome(i, "accepted", session_of[i], event_ids[i])
            for i in range(len(event_ids))
        )
        return AppendResult(outcomes, tuple(opened), tuple(closed))


def _plan(
    events: list[EventIn],
    fresh: list[int],
    open_by_channel: Mapping[str, Mapping[str, Any]],
    gap: timedelta,
) -> _Plan:
    """The gap rule applied to each channel's new events against its open session."""
    by_channel: dict[str, list[int]] = defaultdict(list)
    for i in fresh:
        by_channel[events[i].channel_id].append(i)
    placed: list[_Placed] = []
    for channel, positions in by_channel.items():
        existing = open_by_channel.get(channel)
        times = [events[i].occurred_at for i in positions]
        for run in place(times, _open_session(existing), gap):
            members = [positions[m] for m in run.members]
            stored = existing if run.session_id is not None else None
            placed.append(_Placed(channel, run, members, stored))
    return _Plan(placed, fresh)


def _write(
    conn: Conn, tenant_id: str, batch: _Batch, plan: _Plan
) -> psycopg.Cursor[dict[str, Any]]:
    """Queue the batch's writes; the cursor will hold the new sessions' ids. The new
    events go in batch order, each with its session's id (None for a new session, named
    by its channel and start), its seq and its session's start."""
    events, now, n = batch.events, batch.now, len(batch.events)
    updates: list[dict[str, Any]] = []
    inserts: list[dict[str, Any]] = []
    session_ids: list[int | None] = [None] * n
    seqs: list[int] = [0] * n
    starts: list[datetime | None] = [None] * n
    for p in plan.placed:
        row = _session_row(p, events, now)
        if p.stored is None:
            inserts.append(row)
        else:
            updates.append({**row, "id": p.stored["id"]})
        sid, seq = (p.stored["id"], p.stored["event_count"]) if p.stored else (None, 0)
        for i in p.members:
            seq += 1
            session_ids[i], seqs[i], starts[i] = sid, seq, p.run.started_at
    params = {"tenant_id": tenant_id, "now": now}
    # Close (or extend) existing open sessions before new ones open on the same channel.
    if updates:
        conn.execute(Q["update_sessions"], {**params, "sessions": dumps(updates)})
    order = plan.order
    per_event: dict[str, list[Any]] = {
        "session_ids": session_ids,
        "seqs": seqs,
        "session_starts": starts,
    }
    if len(order) == n:
        columns: Mapping[str, Any] = batch.encoded
    else:  # duplicates left out
        columns = {name: [values[i] for i in order] for name, values in batch.columns.items()}
        per_event = {name: [values[i] for i in order] for name, values in per_event.items()}
    return conn.execute(
        Q["insert_sessions_and_events"],
        {**params, **columns, **per_event, "sessions": dumps(inserts)},
    )


def _open_session(row: Mapping[str, Any] | None) -> OpenSession | None:
    if row is None:
        return None
    return OpenSession(row["id"], row["started_at"], row["last_event_at"])


def utc_offset_minutes(at: datetime) -> int:
    offset = at.utcoffset()
    return 0 if offset is None else int(offset.total_seconds() // 60)


def _session_row(placed: _Placed, events: list[EventIn], now: datetime) -> dict[str, Any]:
    """The session's row as JSON-ready values."""
    stored, run = placed.stored, placed.run
    participants = list(stored["participants"]) if stored else []
    for i in placed.members:
        if events[i].actor_id not in participants:
            participants.append(events[i].actor_id)
    is_closed = run.close_reason is not None
    return {
        "channel_id": placed.channel_id,
        "status": "closed" if is_closed else "open",
        "started_at": run.started_at.isoformat(),
        "last_event_at": run.last_event_at.isoformat(),
        "ended_at": run.last_event_at.isoformat() if is_closed else None,
        "closed_at": now.isoformat() if is_closed else None,
        "close_reason": run.close_reason,
        "event_count": (stored["event_count"] if stored else 0) + len(placed.members),
        "participants": participants,
    }


def close_session(conn: Conn, tenant_id: str, session_id: int, *, now: datetime) -> bool:
    """Close an open session explicitly; False if it was already closed."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "id": _session_id(session_id)}
        if conn.execute(Q["get_session"], params).fetchone() is None:
            raise SessionNotFound(tenant_id=tenant_id, session_id=session_id)
        return bool(_close(conn, tenant_id, [session_id], now))


def close_sessions(
    conn: Conn, tenant_id: str, session_ids: Sequence[int], *, now: datetime
) -> list[int]:
    """Close explicitly those of the sessions still open (the end of a transcript, say);
    their ids, in id order. Ids of other tenants, or of no session, are left alone."""
    with tenant_scope(conn, tenant_id):
        return _close(conn, tenant_id, session_ids, now)


def _close(conn: Conn, tenant_id: str, session_ids: Sequence[int], now: datetime) -> list[int]:
    ids = [i for i in session_ids if isinstance(i, int) and 0 < i < 2**63]  # others: none
    params = {"tenant_id": tenant_id, "ids": ids, "now": _aware(now)}
    return sorted(r["id"] for r in conn.execute(Q["close_sessions"], params))


def sessions_holding(conn: Conn, tenant_id: str, events: Sequence[tuple[str, str]]) -> list[int]:
    """The sessions holding the stored events named by ``(channel id, external id)``, in
    id order (events not stored are skipped)."""
    params = {"tenant_id": tenant_id, **_key_arrays(events)}
    with tenant_scope(conn, tenant_id):
        return sorted({r["session_id"] for r in conn.execute(Q["existing_external_ids"], params)})


def sweep_idle(
    conn: Conn, *, now: datetime, gap: timedelta = DEFAULT_GAP, tenant_id: str | None = None
) -> list[tuple[str, int]]:
    """Close open sessions idle for longer than ``gap`` (all tenants unless one is named):
    no event within ``gap`` of ``now`` by the events' own times, and no append within it
    by the server's clock. A transcript replayed from the past in several requests so
    stays open between them."""
    params = {"now": _aware(now), "cutoff": now - gap, "tenant_id": tenant_id}
    if tenant_id is None:
        with conn.transaction():
            rows = conn.execute(Q["sweep_idle"], params).fetchall()
    else:
        with tenant_scope(conn, tenant_id):
            rows = conn.execute(Q["sweep_idle"], params).fetchall()
    return [(r["tenant_id"], r["id"]) for r in rows]


def get_session(conn: Conn, tenant_id: str, session_id: int) -> dict[str, Any]:
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "id": _session_id(session_id)}
        row = conn.execute(Q["get_session"], params).fetchone()
    if row is None:
        raise SessionNotFound(tenant_id=tenant_id, session_id=session_id)
    return row


def list_sessions(
    conn: Conn, tenant_id: str, *, channel_id: str | None = None, limit: int = 1000
) -> list[dict[str, Any]]:
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "channel_id": channel_id, "limit": _limit(limit)}
        return conn.execute(Q["list_sessions"], params).fetchall()


def read_session(conn: Conn, tenant_id: str, session_id: int) -> list[dict[str, Any]]:
    """Replay a session's events in conversation order (occurred_at, then arrival)."""
    get_session(conn, tenant_id, session_id)
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "session_id": session_id}
        return conn.execute(Q["session_events"], params).fetchall()


def events_after(
    conn: Conn, after: int, limit: int = 1000, *, tenant_id: str | None = None
) -> list[dict[str, Any]]:
    """Events with id > ``after`` in id (= commit) order; one tenant's when named."""
    if not isinstance(after, int):
        raise InvalidArgument("after must be an event id (an integer)", after=after)
    params = {"after": after, "limit": _limit(limit)}
    if tenant_id is None:
        return conn.execute(Q["events_after"], params).fetchall()
    with tenant_scope(conn, tenant_id):
        return conn.execute(Q["events_after"], params).fetchall()


def open_session_tail(
    conn: Conn, tenant_id: str, channel_id: str, *, limit: int
) -> list[dict[str, Any]]:
    """The channel's open session's newest ``limit`` events, oldest first ([] if none open)."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "channel_id": channel_id, "limit": _limit(limit)}
        return conn.execute(Q["open_session_tail"], params).fetchall()[::-1]


def open_session(
    conn: Conn, tenant_id: str, channel_id: str, *, participant: str | None = None
) -> dict[str, Any] | None:
    """The channel's open session (id, event_count); with ``participant``, only one they
    took part in."""
    with tenant_scope(conn, tenant_id):
        params = {"tenant_id": tenant_id, "channel_id": channel_id, "participant": participant}
        return conn.execute(Q["open_session"], params).fetchone()


def _aware(now: datetime) -> datetime:
    """``now`` if it has a UTC offset: a naive time would be read in the database
    session's zone, or fail to compare with the events' times."""
    if not isinstance(now, datetime) or now.utcoffset() is None:
        raise InvalidArgument("now must be a datetime with a UTC offset", now=now)
    return now


def _session_id(session_id: int) -> int:
    if not isinstance(session_id, int):
        raise InvalidArgument("session_id must be an integer", session_id=session_id)
    return session_id


def _limit(limit: int) -> int:
    if not isinstance(limit, int) or limit < 0:
        raise InvalidArgument("limit must be an integer of 0 or more", limit=limit)
    return limit
