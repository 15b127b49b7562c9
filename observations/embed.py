"""Embedders behind one protocol, and the text that is actually embedded.

`make_embedder("local" | "openai" | "hash", **kwargs)` builds one from explicit arguments
(ops reads the settings); `contextualize` builds the embedded text, identically at write
time (an entry) and query time (a question), so both land in the same region of the space.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import Any

from observations.embed_base import (
    Embedder,
    EmbedderError,
    EmbeddingEndpointFailed,
    ModelFileInvalid,
    Vectors,
    l2_normalize,
)
from observations.embed_cache import QueryVectorCache, embed_query, with_query_cache
from observations.embed_hash import HashEmbedder
from observations.embed_local import (
    ROWS_MODEL_NAME,
    LocalEmbedder,
    ModelFiles,
    default_model_files,
)
from observations.embed_openai import OpenAIEmbedder

__all__ = [
    "Embedder",
    "EmbedderError",
    "EmbeddingEndpointFailed",
    "HashEmbedder",
    "LocalEmbedder",
    "ModelFileInvalid",
    "ModelFiles",
    "OpenAIEmbedder",
    "QueryVectorCache",
    "Vectors",
    "contextualize",
    "default_model_files",
    "embed_query",
    "entry_text",
    "l2_normalize",
    "make_embedder",
    "stored_entry_text",
    "with_query_cache",
]

_FACTORIES: dict[str, Callable[..., Embedder]] = {
    "local": LocalEmbedder,
    "openai": OpenAIEmbedder,
    "hash": HashEmbedder,
}


def make_embedder(name: str, **kwargs: Any) -> Embedder:
    """The embedder called `name`, built with `kwargs` (its constructor's arguments)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise EmbedderError("unknown embedder", name=name, known=sorted(_FACTORIES))
    return factory(**kwargs)


_SPACE = re.compile(r"\s+")
_BRACKETS = str.maketrans("", "", "[]")


def contextualize(
    statement: str,
    *,
    owner: str | None,
    when: datetime | date | None,
    kind: str | None,
    topic: str | None,
) -> str:
    """The text embedded for `statement`: its context as a fixed prefix, then the statement.

    Format (changing it means re-embedding every stored vector)::

        [owner: <owner>] [date: <YYYY-MM-DD>] [kind: <kind>] [topic: <topic>] <statement>

    Fields always appear in this order; an absent (None or blank) field is left out
    entirely, so a query that knows only the owner reads ``[owner: Alice] <question>``.
    Field values have runs of whitespace collapsed to one space and square brackets
    removed; `when` contributes its calendar date as given (a datetime is not converted
    to another timezone: pass the same timezone at write and query time). The statement
    is only stripped. A blank statement is a ValueError.
    """
    text = statement.strip()
    if not text:
        raise ValueError("cannot contextualize an empty statement")
    day = when.date() if isinstance(when, datetime) else when
    fields = (
        ("owner", owner),
        ("date", day.isoformat() if day is not None else None),
        ("kind", kind),
        ("topic", topic),
    )
    prefix = [f"[{name}: {clean}]" for name, value in fields if (clean := _clean(value))]
    return " ".join([*prefix, text])


# The models whose entries embed their owner and topic alone. The date and the kind took a
# fifth of an entry text's tokens, and so of a build's embedding time, for no recall on
# LoCoMo dev: the other models' entries embed them too, as they were stored before.
_OWNER_AND_TOPIC_ONLY = frozenset({ROWS_MODEL_NAME})


def entry_text(
    statement: str,
    *,
    model: str,
    owner_id: str,
    valid_from: datetime,
    kind: str,
    fields: Mapping[str, Any],
) -> str:
    """The text embedded for an entry into `model`'s vectors, the same at build, edit and
    re-embed: its owner by the name the builder recorded (``fields.owner_name``), else by
    id; its date in UTC, as every date is shown, and its kind, but for the models in
    :data:`_OWNER_AND_TOPIC_ONLY`; its topic. A record, which quotes what was said in
    the speaker's own words, is embedded as it reads with names for its pronouns and
    absolute dates (``fields.read_as``): it is shown as said, and found as meant."""
    dated = model not in _OWNER_AND_TOPIC_ONLY
    return contextualize(
        fields.get("read_as") or statement,
        owner=fields.get("owner_name") or owner_id,
        when=valid_from.astimezone(UTC).date() if dated else None,
        kind=kind if dated else None,
        topic=fields.get("topic"),
    )


def stored_entry_text(row: Mapping[str, Any], model: str, statement: str | None = None) -> str:
    """:func:`entry_text` of a stored entry (its row: ``canonical_statement``, ``owner_id``,
    ``valid_from``, ``kind``, ``fields``), with ``statement`` in place of its own if given."""
    fields = row["fields"]
    if statement is not None:  # an edited statement: no longer what ``read_as`` reads
        fields = {k: v for k, v in fields.items() if k != "read_as"}
    return entry_text(
        row["canonical_statement"] if statement is None else statement,
        model=model,
        owner_id=row["owner_id"],
        valid_from=row["valid_from"],
        kind=row["kind"],
        fields=fields,
    )


def _clean(value: str | None) -> str:
    if value is None:
        return ""
    return _SPACE.sub(" ", value.translate(_BRACKETS)).strip()
