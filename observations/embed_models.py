"""Which embedding model the store reads, and the embedder of each model a process can run.

Every stored vector that searches rank by is in one model, the *read model*, recorded in
``memledger_embedding``. A process is configured with one embedder; when the database
reads another model (one a re-embed has switched to, or one an older installation was
built with), searches and writers use the embedder of the read model instead, which
:class:`Embedders` builds by name on first use. Until a model is recorded (a new
database), the configured one is used, and :func:`record_read_model` records it.

Writers hold :data:`EMBEDDING_SWITCH_LOCK` shared for their transaction
(:func:`writing_embedder`); a re-embed's switch takes it exclusively, so it waits for the
writers in flight and the next ones embed with the model it switched to. Readers take no
lock: a search reads the pointer and the vectors in one snapshot (see
``retrieval.search``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from ledger.db import Conn
from ledger.errors import Unavailable
from observations.embed_base import Embedder, EmbedderError, Vectors

EMBEDDING_SWITCH_LOCK = 0x6D6C_0004  # advisory lock: writers shared, a switch exclusive


class EmbeddingModelUnavailable(EmbedderError, Unavailable):
    """The database reads a model this process has no embedder for."""


class Embedders:
    """The configured embedder (as an :class:`Embedder` itself), and the embedder of any
    other model ``make`` can build (``None``: it cannot), built on first use and kept."""

    def __init__(self, configured: Embedder, make: Callable[[str], Embedder | None]) -> None:
        self.configured = configured
        self.model, self.dim = configured.model, configured.dim
        self._make = make
        self._built: dict[str, Embedder] = {configured.model: configured}

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.configured.embed(texts)

    def for_model(self, model: str) -> Embedder:
        embedder = self._built.get(model)
        if embedder is None:
            made = self._make(model)
            if made is None or made.model != model:
                raise EmbeddingModelUnavailable(
                    "this process cannot compute vectors of that model: configure its "
                    "embedder (MEMLEDGER_EMBEDDER, _EMBED_LOCAL_MODEL, _EMBED_MODEL), or "
                    "re-embed the database into the configured one",
                    model=model,
                    configured=self.configured.model,
                )
            embedder = self._built.setdefault(model, made)
        return embedder


def embedder_for(embedder: Embedder, model: str) -> Embedder:
    """The embedder of ``model``: ``embedder`` itself, or one it knows how to build."""
    if embedder.model == model:
        return embedder
    find = getattr(embedder, "for_model", None)
    if find is None:
        raise EmbeddingModelUnavailable(
            "this embedder cannot compute vectors of another model",
            model=model,
            configured=embedder.model,
        )
    found: Embedder = find(model)
    return found


def read_model(conn: Conn) -> str | None:
    """The model searches rank by (``None`` until one is recorded)."""
    row = conn.execute("SELECT read_model FROM memledger_embedding").fetchone()
    return row["read_model"] if row else None


def reading_embedder(conn: Conn, embedder: Embedder) -> Embedder:
    """The embedder of the read model (``embedder`` while none is recorded)."""
    model = read_model(conn)
    return embedder if model is None else embedder_for(embedder, model)


def writing_embedder(conn: Conn, embedder: Embedder) -> Embedder:
    """:func:`reading_embedder` for a transaction that stores vectors: no switch happens
    until it ends."""
    conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", [EMBEDDING_SWITCH_LOCK])
    return reading_embedder(conn, embedder)


def record_read_model(conn: Conn, model: str, *, now: datetime) -> str:
    """Record ``model`` as the read model of a database that reads none yet or stores no
    vector at all; the read model either way (run as the owner role, at start-up)."""
    row = conn.execute(
        "UPDATE memledger_embedding SET read_model = %(model)s, changed_at = %(now)s "
        " WHERE read_model IS DISTINCT FROM %(model)s AND (read_model IS NULL OR NOT EXISTS "
        "       (SELECT 1 FROM memory_entries WHERE embedding IS NOT NULL)) "
        "RETURNING read_model",
        {"model": model, "now": now},
    ).fetchone()
    return row["read_model"] if row else read_model(conn) or model
