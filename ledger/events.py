"""Event input: what a chat backend sends, validated at the boundary.

Every event of a batch is checked before anything is written; the first bad one raises
:class:`InvalidEvent` naming its position, its external id and the field at fault.

A plain event — a ``dict`` of exactly-typed, plainly valid fields, as a bulk caller sends
it — is checked by :func:`_quick` in a few microseconds instead of by the model's
validators; anything else, and anything ``_quick`` is unsure of, goes through the model,
which names what is wrong. ``_quick`` accepts nothing the model would refuse, and builds
the same event (a property test holds the two together).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ledger.errors import InvalidEvent
from ledger.scope import usable_id

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
    if not value.isascii():  # ASCII holds no surrogate
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
        if not usable_id(value):
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
        problem = _time_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value  # with its own offset: the speaker's local day dates what they say


def _time_problem(value: datetime) -> str | None:
    """Why PostgreSQL cannot store ``value`` as the time of an event, or None."""
    offset = value.utcoffset()
    if offset is None:
        return "has no timezone offset"
    if offset.microseconds or abs(offset) >= _MAX_OFFSET:
        # Python takes offsets up to ±23:59:59.999999; PostgreSQL whole seconds under 16 h
        return f"has a UTC offset PostgreSQL cannot store: {value.isoformat()}"
    try:
        value.astimezone(UTC)
    except OverflowError:  # a time at the edge of year 1 or 9999
        return "is out of range"
    return None


_FIELDS = frozenset(EventIn.model_fields)
# each text field's max_length, as the model declares it (None: unbounded)
_MAX = {
    name: next((m.max_length for m in field.metadata if hasattr(m, "max_length")), None)
    for name, field in EventIn.model_fields.items()
}
_REQUIRED = frozenset(n for n, f in EventIn.model_fields.items() if f.is_required())
_ROLES = frozenset(ROLES)


def _quick(item: Mapping[str, Any]) -> EventIn | None:
    """``item`` as an event when it is plainly valid, else None (the model decides)."""
    if type(item) is not dict or not _REQUIRED <= item.keys() <= _FIELDS:
        return None
    name, metadata = item.get("actor_name"), item.get("metadata", {})
    channel, actor, at = item["channel_id"], item["actor_id"], item["occurred_at"]
    if not (
        _plain(item["external_id"], _MAX["external_id"])
        and _plain(channel, _MAX["channel_id"])
        and _plain(actor, _MAX["actor_id"])
        and _plain(item["content"], _MAX["content"])
        and (name is None or _plain(name, _MAX["actor_name"]))
        and usable_id(channel)
        and usable_id(actor)
        and type(item["role"]) is str
        and item["role"] in _ROLES
        and type(metadata) is dict
        and all(type(k) is str for k in metadata)
    ):
        return None
    if type(at) is str:
        try:
            at = datetime.fromisoformat(at)
        except ValueError:
            return None
    if type(at) is not datetime or _time_problem(at) is not None:
        return None
    if metadata:
        try:
            check_strings(metadata)
        except ValueError:
            return None
    values = {
        "external_id": item["external_id"],
        "channel_id": channel,
        "role": item["role"],
        "actor_id": actor,
        "actor_name": name,
        "content": item["content"],
        "occurred_at": at,
        "metadata": dict(metadata),
    }
    # What EventIn.model_construct does, less its handling of defaults and aliases (every
    # field is given): a fifth of its time. The property test compares the result with
    # model_validate's, so a pydantic that stores models otherwise fails it.
    event = _new_event(EventIn)
    _set(event, "__dict__", values)
    _set(event, "__pydantic_fields_set__", set(_FIELDS))
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


_new_event = EventIn.__new__
_set = object.__setattr__


def _plain(value: Any, max_length: int | None) -> bool:
    """A ``str`` the model's text fields take as it is (:func:`_clean_text`, not empty or
    blank, within ``max_length`` characters)."""
    if type(value) is not str or not value or value.isspace():
        return False
    if max_length is not None and len(value) > max_length:
        return False
    try:
        _clean_text(value)
    except ValueError:
        return False
    return True


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
    event = _quick(item)
    if event is not None:
        return event
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
