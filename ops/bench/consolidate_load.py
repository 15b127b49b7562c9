"""Synthetic memories for the consolidation benchmark, bulk-loaded with binary COPY.

Users hold ``per_owner`` entries each, a few (1 in 100) fifteen times as many — beyond the
per-owner cap. Each user's entries are written in bursts interleaved with everyone else's,
as they arrive in a live tenant. Of the entries:

* ``dup_rate`` (default 10%) repeat one of the user's recent entries of the same kind: half
  exactly (the statement changed only in case and final punctuation), half nearly (another
  statement, the vector within cosine ≈ 0.99);
* ``conflict_rate`` (default 5%) restate one of the user's profile facts with a new value,
  later in event time;
* the rest are distinct: a pool statement (embedded once with the real embedder) with a
  unique detail, its vector the pool vector plus noise (cosine ≈ 0.93 to it, ≈ 0.87 between
  two entries from one pool statement — below the merge threshold).

Kinds: 20% profile facts (preference, identity, goal, each on a key of its own), 40%
episodic turns, 20% events (with an event time), 20% experiences. Event time 0–120 days
before ``now``, recorded up to six hours later; 70% never accessed, 20% once, 10% 2–9 times.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from pgvector import HalfVector
from psycopg.types.json import Jsonb

from ledger.db import Conn
from ops.bench.synthetic import Pool, copy_entries

TENANT = "bench"
_PROFILE = ("preference", "identity", "goal")
# 3 of 15 draws are profile facts (20%), 6 episodic (40%), 3 events, 3 experiences
_KINDS = (*_PROFILE, *("episodic",) * 6, *("event",) * 3, *("experience",) * 3)
_RECENT = 8  # dup/conflict sources kept per user
_COLUMNS = (
    "tenant_id, owner_type, owner_id, kind, key, canonical_statement, fields, embedding, "
    "embedding_model, confidence, importance, valid_from, recorded_at, source_event_ids, "
    "source_external_ids, access_count, last_accessed_at, updated_at"
)
_TYPES = [
    "text", "text", "text", "text", "text", "text", "jsonb", "halfvec", "text", "real", "real",
    "timestamptz", "timestamptz", "int8[]", "text[]", "int4", "timestamptz", "timestamptz",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Recent:
    kind: str
    key: str
    statement: str
    fields: dict[str, Any]
    vector: np.ndarray[Any, np.dtype[np.float16]]  # kept small: eight per user
    valid_from: datetime


@dataclass(frozen=True, slots=True)
class Shape:
    dup_rate: float = 0.10
    conflict_rate: float = 0.05
    burst: int = 8


def user_id(n: int) -> str:
    return f"user-{n:06d}"


def owner_counts(entries: int, per_owner: int) -> list[int]:
    """Entries per user: ``per_owner`` each, every hundredth user fifteen times as many."""
    counts: list[int] = []
    while sum(counts) < entries:
        counts.append(per_owner * (15 if len(counts) % 100 == 7 else 1))
    counts[-1] -= sum(counts) - entries
    return [c for c in counts if c > 0]


class Generator:
    """Entry rows for COPY, drawn from a seeded RNG."""

    def __init__(self, pool: Pool, *, now: datetime, seed: int, shape: Shape) -> None:
        self.pool, self.now, self.shape = pool, now, shape
        self.rng = random.Random(seed)
        self.gen = np.random.default_rng(seed)
        self.recent: dict[str, deque[Recent]] = {}
        self.n = 0
        self._noise = np.empty((0, pool.vectors.shape[1]), dtype=np.float32)

    def _jitter(self, scale: float) -> np.ndarray[Any, np.dtype[np.float32]]:
        if not len(self._noise):
            self._noise = self.gen.normal(0, 1, (4096, self.pool.vectors.shape[1])).astype(
                np.float32
            )
        out, self._noise = self._noise[0] * scale, self._noise[1:]
        return out

    def _unit(self, v: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.float32]]:
        return (v / np.linalg.norm(v)).astype(np.float32)

    def rows(self, owner: str, count: int) -> Iterator[tuple[Any, ...]]:
        recent = self.recent.setdefault(owner, deque(maxlen=_RECENT))
        for _ in range(count):
            self.n += 1
            item = self._item(owner, recent)
            recent.append(item)
            yield self._row(owner, item)

    def _item(self, owner: str, recent: deque[Recent]) -> Recent:
        r, s = self.rng.random(), self.shape
        if recent and r < s.dup_rate:
            return self._duplicate(self.rng.choice(recent))
        profile = [x for x in recent if x.kind in _PROFILE]
        if profile and r < s.dup_rate + s.conflict_rate:
            return self._conflict(self.rng.choice(profile))
        return self._fresh(owner)

    def _fresh(self, owner: str) -> Recent:
        i = self.rng.randrange(len(self.pool.statements))
        kind = _KINDS[self.rng.randrange(len(_KINDS))]
        when = self.now - timedelta(days=self.rng.uniform(0, 120))
        statement = f"{self.pool.statements[i]} (#{self.n})"
        fields: dict[str, Any] = {"topic": kind}
        key = f"{kind}:{self.n}"
        if kind in _PROFILE:
            fields["object"] = f"value {self.n}"
        elif kind == "event":
            fields["event_time"] = when.date().isoformat()
        vector = self._unit(self.pool.vectors[i] + self._jitter(0.02))
        return Recent(kind, key, statement, fields, vector.astype(np.float16), when)

    def _duplicate(self, src: Recent) -> Recent:
        vector = src.vector
        if self.rng.random() < 0.5:  # the same statement but for case and punctuation
            statement = src.statement.upper().rstrip(".") + "!"
        else:
            statement = f"{src.statement} again"
            near = self._unit(src.vector.astype(np.float32) + self._jitter(0.004))
            vector = near.astype(np.float16)
        when = min(self.now, src.valid_from + timedelta(hours=self.rng.uniform(0, 2)))
        return Recent(src.kind, src.key, statement, src.fields, vector, when)

    def _conflict(self, src: Recent) -> Recent:
        value = f"value {self.n}"
        i = self.rng.randrange(len(self.pool.statements))
        vector = self._unit(self.pool.vectors[i] + self._jitter(0.02)).astype(np.float16)
        when = min(self.now, src.valid_from + timedelta(days=self.rng.uniform(1, 30)))
        fields = {**src.fields, "object": value}
        return Recent(src.kind, src.key, f"Now {value} (#{self.n})", fields, vector, when)

    def _row(self, owner: str, item: Recent) -> tuple[Any, ...]:
        rng, n = self.rng, self.n
        recorded = min(self.now, item.valid_from + timedelta(hours=rng.uniform(0, 6)))
        u = rng.random()
        accesses = 0 if u < 0.7 else 1 if u < 0.9 else rng.randint(2, 9)
        last = recorded + (self.now - recorded) * rng.random() if accesses else None
        return (
            TENANT, "user", owner, item.kind, item.key, item.statement, Jsonb(item.fields),
            HalfVector(item.vector), self.pool.model, 0.6 + 0.4 * rng.random(),
            rng.random(), item.valid_from, recorded, [n], [f"syn-{n}"], accesses, last, recorded,
        )  # fmt: skip


def interleaved_rows(generator: Generator, counts: list[int]) -> Iterator[tuple[Any, ...]]:
    """Every user's entries, in bursts of ``shape.burst`` taken from the users in turn."""
    left = {user_id(i): c for i, c in enumerate(counts, 1)}
    burst = generator.shape.burst
    while left:
        for owner in list(left):
            take = min(burst, left[owner])
            yield from generator.rows(owner, take)
            left[owner] -= take
            if not left[owner]:
                del left[owner]


def copy_rows(conn: Conn, rows: Iterator[tuple[Any, ...]]) -> int:
    return copy_entries(conn, rows, _COLUMNS, _TYPES)
