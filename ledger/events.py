"""Event input: what a chat backend sends, validated at the boundary.

Every event of a batch is checked before anything is written; the first bad one raises
:class:`InvalidEvent` naming its position, its external id and the field at fault.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ledger.errors import InvalidEvent
from ledger.scope import ID

Role = Literal["user", "assistant", "tool_call", "tool_result", "file", "system"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool_call", "tool_result", "file", "system")
_EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_OFFSET = timedelta(hours=16)
MAX_METADATA_DEPTH = 64  # JSON levels, the outermost object included


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on event input (from settings)."""

    max_content_bytes: int = 64 * 1024
    max_metadata_bytes: int = 16 * 1024
    max_future_skew: timedelta = timedelta(minutes=10)


DEFAULT_LIMITS = Limits()


def _clean_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("is not valid UTF-8 (unpaired surrogate)") from exc
    return value


def check_strings(value: Any) -> None:
    """Every string in a JSON value, keys too, as :func:`_clean_text` wants it (PostgreSQL's
    json types refuse NUL at any depth), nested at most ``MAX_METADATA_DEPTH`` levels.
    Iterative: nesting depth costs no stack."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _clean_text(item)
        elif isinstance(item, Mapping | list | tuple):
            if depth == MAX_METADATA_DEPTH:
                raise ValueError(f"nests deeper than {MAX_METADATA_DEPTH} levels")
            children = [*item.keys(), *item.values()] if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)


def check_metadata(metadata: Mapping[str, Any], limits: Limits) -> None:
    """Raise ValueError saying why ``metadata`` cannot be stored: a string PostgreSQL
    refuses, nesting past ``MAX_METADATA_DEPTH``, a value JSON cannot hold (NaN, a date),
    or more than ``limits.max_metadata_bytes`` of JSON."""
    check_strings(metadata)
    _check_size(metadata, limits)


def _check_size(metadata: Mapping[str, Any], limits: Limits) -> None:
    size = _metadata_bytes(metadata)
    if size is None:
        raise ValueError("is not JSON-serializable")
    if size > limits.max_metadata_bytes:
        raise ValueError(f"is {size} bytes, over the {limits.max_metadata_bytes} limit")


class EventIn(BaseModel):
    """One conversation event as a chat backend sends it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    external_id: str = Field(min_length=1, max_length=256)
    channel_id: str = Field(min_length=1, max_length=128)
    role: Role
    actor_id: str = Field(min_length=1, max_length=128)
    actor_name: str | None = Field(default=None, max_length=256)
    content: str = Field(min_length=1)
    occurred_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("external_id", "channel_id", "actor_id", "actor_name", "content")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("is blank")
        return _clean_text(value)

    @field_validator("channel_id", "actor_id")
    @classmethod
    def _id(cls, value: str) -> str:
        # the ids memory is read and deleted by: what a scope accepts, an event must too
        if not ID.match(value):
            raise ValueError("is not a usable id (no control characters or surrounding spaces)")
        return value

    @field_validator("metadata")
    @classmethod
    def _metadata_text(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_strings(value)
        return value

    @field_validator("occurred_at", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> Any:
        # JSON carries times as ISO 8601 strings; strict mode would refuse them.
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value)
            except ValueError as exc:
                raise ValueError(f"is not an ISO 8601 time: {value!r}") from exc
        return value

    @field_validator("occurred_at")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        offset = value.utcoffset()
        if offset is None:
            raise ValueError("has no timezone offset")
        if offset.microseconds or abs(offset) >= _MAX_OFFSET:
            # Python takes offsets up to ±23:59:59.999999; PostgreSQL whole seconds under 16 h
            raise ValueError(f"has a UTC offset PostgreSQL cannot store: {value.isoformat()}")
        try:
            value.astimezone(UTC)
        except OverflowError as exc:  # a time at the edge of year 1 or 9999
            raise ValueError("is out of range") from exc
        return value  # with its own offset: the speaker's local day dates what they say


def parse_events(
    raw: Sequence[EventIn | Mapping[str, Any]], *, now: datetime, limits: Limits
) -> list[EventIn]:
    """Validate a batch; raise :class:`InvalidEvent` for the first bad event."""
    events = [_parse_one(i, item) for i, item in enumerate(raw)]
    latest = now + limits.max_future_skew
    for i, event in enumerate(events):
        _check_bounds(i, event, latest, limits)
    return events


def _parse_one(index: int, item: EventIn | Mapping[str, Any]) -> EventIn:
    if isinstance(item, EventIn):
        return item
    if not isinstance(item, Mapping):
        raise InvalidEvent(
            f"event is a {type(item).__name__}, not an object", index=index, field="(event)"
        )
    try:
        return EventIn.model_validate(item)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(event)"
        raise InvalidEvent(
            f"invalid {field}: {first['msg']}",
            index=index,
            field=field,
            external_id=item.get("external_id"),
        ) from exc


def _check_bounds(index: int, event: EventIn, latest: datetime, limits: Limits) -> None:
    def bad(field: str, message: str) -> InvalidEvent:
        return InvalidEvent(message, index=index, field=field, external_id=event.external_id)

    # A character is at most 4 bytes in UTF-8: short content needs no encoding to measure.
    if 4 * len(event.content) > limits.max_content_bytes:
        size = len(event.content.encode("utf-8"))
        if size > limits.max_content_bytes:
            message = f"content is {size} bytes, over the {limits.max_content_bytes} limit"
            raise bad("content", message)
    if event.metadata:
        try:
            _check_size(event.metadata, limits)  # its strings were checked as it was read
        except ValueError as exc:
            raise bad("metadata", f"metadata {exc}") from exc
    if event.occurred_at > latest:
        raise bad("occurred_at", f"occurred_at {event.occurred_at.isoformat()} is in the future")
    if event.occurred_at < _EARLIEST:
        raise bad("occurred_at", f"occurred_at {event.occurred_at.isoformat()} is before 1970")


def _metadata_bytes(metadata: Mapping[str, Any]) -> int | None:
    try:
        return len(json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError):
        return None


def iter_chunks(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    """Yield lists of at most ``size`` items."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
