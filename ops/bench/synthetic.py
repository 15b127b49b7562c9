"""Synthetic memory entries bulk-loaded with COPY (not the builder), for benchmarks and the
large-scope tests: statements from a pool of distinct sentences, their vectors from the
real embedder (embedded once per pool sentence) with a small perturbation per entry, sent
as halfvec (the column's type: binary COPY takes the column's own format)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from pgvector import HalfVector
from psycopg.types.json import Jsonb

from ledger.db import Conn

# Words that make each entry's statement distinct from the pool sentence it varies.
_DETAILS = (
    "morning", "evening", "weekend", "holiday", "office", "garden", "kitchen", "station",
    "market", "library", "river", "coffee", "lunch", "dinner", "train", "bike", "concert",
    "museum", "beach", "mountain", "city", "village", "winter", "summer", "spring", "autumn",
    "friend", "sister", "brother", "colleague", "neighbour", "teacher", "doctor",
)  # fmt: skip
KINDS = ("preference", "event", "experience", "relationship", "goal", "episodic", "skill")
SUMMARY = "session_summary"
EXPERIENCE = "agent_experience"
_COLUMNS = (
    "tenant_id, owner_type, owner_id, kind, key, canonical_statement, fields, embedding, "
    "embedding_model, confidence, importance, valid_from, recorded_at, source_event_ids, "
    "source_external_ids, updated_at"
)
_TYPES = [
    "text", "text", "text", "text", "text", "text", "jsonb", "halfvec", "text", "real", "real",
    "timestamptz", "timestamptz", "int8[]", "text[]", "timestamptz",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Pool:
    """Distinct statements with their unit vectors (one row each) and the model's name."""

    statements: Sequence[str]
    vectors: np.ndarray[Any, np.dtype[np.float32]]
    model: str


def entry_rows(
    tenant_id: str,
    owners: Iterable[tuple[str, int]],
    pool: Pool,
    *,
    start: datetime,
    seed: int,
    noise: float = 0.02,
    summaries: bool = False,
    agent: str | None = None,
) -> Iterator[tuple[Any, ...]]:
    """COPY rows: ``count`` entries for each ``(user_id, count)``, a pool statement each
    (an owner may come back: :func:`interleaved` spreads each user's entries in time).
    With ``summaries``, each is a session summary instead: owned by a channel of its own
    and naming the user as its participant, as a build writes the summary of a session;
    with ``agent``, an experience of that agent learnt from the user."""
    rng = random.Random(seed)
    vectors = _perturbed(pool, np.random.default_rng(seed), noise)
    n = 0
    for user_id, count in owners:
        for _ in range(count):
            n += 1
            i = rng.randrange(len(pool.statements))
            when = start + timedelta(minutes=rng.randrange(0, 60 * 24 * 365))
            detail = " ".join(rng.sample(_DETAILS, 3))
            statement = f"{pool.statements[i]} ({detail}, #{n})"
            kind, owner, fields, ref = KINDS[i % len(KINDS)], ("user", user_id), {}, str(n)
            if summaries:
                kind, owner, ref = SUMMARY, ("channel", f"session-{n}"), f"summary-{n}"
                fields = {"participant_ids": [user_id]}
            elif agent is not None:
                kind, owner, ref = EXPERIENCE, ("agent", agent), f"experience-{n}"
                fields = {"source_actor_ids": [user_id]}
            yield (
                tenant_id, *owner, kind, f"{kind}:{i}:{n}", statement,
                Jsonb({"topic": kind, **fields}), HalfVector(vectors(i)), pool.model,
                0.7 + 0.3 * rng.random(), rng.random(), when, when, [n], [f"syn-{ref}"], when,
            )  # fmt: skip


def _perturbed(
    pool: Pool, gen: np.random.Generator, noise: float, block: int = 4096
) -> Callable[[int], np.ndarray[Any, np.dtype[np.float32]]]:
    """A function giving pool vector ``i`` plus Gaussian noise, renormalized (the noise is
    drawn a block of rows at a time: per-row draws would dominate a million-row load)."""
    dim = pool.vectors.shape[1]
    buffer = np.empty((0, dim), dtype=np.float32)
    used = 0

    def vector(i: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        nonlocal buffer, used
        if used == len(buffer):
            buffer, used = gen.normal(0, noise, (block, dim)).astype(np.float32), 0
        v = pool.vectors[i] + buffer[used]
        used += 1
        out: np.ndarray[Any, np.dtype[np.float32]] = v / np.linalg.norm(v)
        return out

    return vector


def skewed_counts(entries: int, users: int, *, exponent: float = 1.0) -> list[int]:
    """Entries per user, largest first, summing to ``entries``: Zipf-like (the user of rank
    r holds ∝ 1/r^exponent), every user at least one, as in real tenants where a few users
    hold most of the memory."""
    if not 1 <= users <= entries:
        raise ValueError("need at least one user and one entry per user")
    weights = [1 / r**exponent for r in range(1, users + 1)]
    total = sum(weights)
    counts = [max(1, int(entries * w / total)) for w in weights]
    counts[0] += entries - sum(counts)
    if counts[0] < counts[1]:
        raise ValueError("too few entries for this many users")
    return counts


def interleaved(
    owners: Sequence[tuple[str, int]], *, seed: int, burst: int = 8
) -> Iterator[tuple[str, int]]:
    """``(user_id, count)`` pairs that cover ``owners`` in bursts of at most ``burst``
    entries, in a random order: a user's entries are spread through the table, as when
    sessions of many users are built as they close."""
    bursts = [
        (user_id, min(burst, count - k))
        for user_id, count in owners
        for k in range(0, count, burst)
    ]
    random.Random(seed).shuffle(bursts)
    return iter(bursts)


def copy_entries(
    conn: Conn,
    rows: Iterable[tuple[Any, ...]],
    columns: str = _COLUMNS,
    types: Sequence[str] = tuple(_TYPES),
) -> int:
    """Bulk-load entry rows of ``columns`` (binary COPY, as the owner role: no row-level
    security on COPY)."""
    n = 0
    with (
        conn.cursor() as cur,
        cur.copy(f"COPY memory_entries ({columns}) FROM STDIN (FORMAT BINARY)") as copy,
    ):
        copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)
            n += 1
    return n
