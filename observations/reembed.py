"""Re-embedding every stored entry into another model while searches keep reading the old.

A re-embed walks the entries in id order, a batch per transaction: it embeds each entry's
text (:func:`observations.embed.entry_text`, as a build would) with the target model and
keeps the vector in ``memory_entry_vectors`` beside the entry's own, together with its
cursor, so a killed run resumes after the last batch it committed. Searches meanwhile rank
by the read model's vectors, untouched.

The switch happens once the walk has reached the last entry: under the embedding switch
lock (writers hold it shared, so it waits for the builds and edits in flight and the next
ones wait for it) it embeds what is still missing (entries added or rewritten during the
walk), then moves every vector into its entry and records the new read model in one
transaction. A search reads the pointer and the vectors in one snapshot, so it sees the
old model throughout, or the new one throughout.

Run as the owner role: a re-embed covers every tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ledger.db import Conn
from ledger.errors import Conflict, NotFound
from ledger.sqlfile import load_queries
from observations.embed import Embedder, stored_entry_text
from observations.embed_models import EMBEDDING_SWITCH_LOCK

Q = load_queries("observations")


class ReembedInProgress(Conflict):
    """Another re-embed (into another model, or with other options) is under way."""


class NoReembed(NotFound):
    """There is no re-embed to cancel."""


@dataclass(frozen=True, slots=True)
class Job:
    model: str
    missing_only: bool
    after_id: int
    done: int
    started_at: datetime

    @property
    def params(self) -> dict[str, Any]:
        return {"model": self.model, "missing_only": self.missing_only, "after_id": self.after_id}


def begin(conn: Conn, model: str, *, missing_only: bool, now: datetime) -> tuple[Job, bool]:
    """The re-embed into ``model``: the one under way (resumed), or a new one; and whether
    it was resumed."""
    with conn.transaction():
        row = conn.execute(Q["reembed_job"]).fetchone()
        if row is None:
            conn.execute(
                Q["reembed_start"], {"model": model, "missing_only": missing_only, "now": now}
            )
            return Job(model, missing_only, 0, 0, now), False
    job = _job(row)
    if (job.model, job.missing_only) != (model, missing_only):
        raise ReembedInProgress(
            "a re-embed with other options is under way: resume it, or cancel it first",
            model=job.model,
            missing_only=job.missing_only,
            done=job.done,
        )
    return job, True


def under_way(conn: Conn) -> Job | None:
    """The re-embed under way, if any (read only)."""
    row = conn.execute(
        "SELECT model, missing_only, after_id, done, started_at FROM memledger_reembed"
    ).fetchone()
    return _job(row) if row else None


def remaining(conn: Conn, job: Job) -> int:
    """How many entries the walk has still to read."""
    row = conn.execute(Q["reembed_remaining"], job.params).fetchone()
    return int(row["n"]) if row else 0


def step(conn: Conn, embedder: Embedder, *, batch: int, now: datetime) -> int:
    """Embed the next ``batch`` entries and advance the cursor, in one transaction; how many
    (0: the walk is done)."""
    with conn.transaction():
        job = _current(conn, embedder)
        rows = conn.execute(Q["reembed_next"], {**job.params, "limit": batch}).fetchall()
        if rows:
            _store(conn, embedder, rows)
            conn.execute(
                Q["reembed_advance"], {"after_id": rows[-1]["id"], "n": len(rows), "now": now}
            )
        return len(rows)


def switch(conn: Conn, embedder: Embedder, *, now: datetime) -> int:
    """Embed what the walk left (added or rewritten since it passed), move every vector
    into its entry and make ``embedder``'s model the read model, in one transaction; how
    many entries it moved. What the walk left is embedded once before the writers are
    held off, so that under the lock only what changed meanwhile is."""
    with conn.transaction():
        _catch_up(conn, embedder)
    with conn.transaction():
        job = _catch_up(conn, embedder, locked=True)
        row = conn.execute(Q["reembed_switch"], {"model": job.model, "now": now}).fetchone()
        conn.execute(Q["reembed_finish"], {"model": job.model})
        return int(row["n"]) if row else 0


def cancel(conn: Conn) -> str:
    """Drop the re-embed under way and the vectors it computed; the model it was for."""
    row = conn.execute(Q["reembed_cancel"]).fetchone()
    if row is None:
        raise NoReembed("no re-embed is under way")
    return str(row["model"])


def _catch_up(conn: Conn, embedder: Embedder, *, locked: bool = False) -> Job:
    """Embed the entries with no vector in the target model yet, or rewritten since theirs
    was computed (with ``locked``, once the switch lock is held)."""
    job = _current(conn, embedder)
    if locked:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [EMBEDDING_SWITCH_LOCK])
    stale = conn.execute(Q["reembed_stale"], job.params).fetchall()
    if stale:
        _store(conn, embedder, stale)
    return job


def _current(conn: Conn, embedder: Embedder) -> Job:
    row = conn.execute(Q["reembed_job"]).fetchone()
    if row is None:
        raise NoReembed("no re-embed is under way")
    job = _job(row)
    if job.model != embedder.model:
        raise ReembedInProgress(
            "the re-embed under way is into another model", model=job.model, given=embedder.model
        )
    return job


def _store(conn: Conn, embedder: Embedder, rows: Sequence[dict[str, Any]]) -> None:
    vectors = embedder.embed([stored_entry_text(r, embedder.model) for r in rows])
    conn.execute(
        Q["reembed_store"],
        {
            "model": embedder.model,
            "tenant_id": [r["tenant_id"] for r in rows],
            "id": [r["id"] for r in rows],
            "embedding": list(vectors),
            "digest": [r["digest"] for r in rows],
        },
    )


def _job(row: dict[str, Any]) -> Job:
    return Job(row["model"], row["missing_only"], row["after_id"], row["done"], row["started_at"])
