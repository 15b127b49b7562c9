"""Reading tool_call / tool_result events, with fallbacks when metadata is missing.

Expected shapes (the chat backend's adapter should write these):

* ``tool_call``: ``metadata = {"tool": "search_flights", "args": {...}, "call_id": "c1"}``;
  ``content`` is free text, e.g. ``search_flights({"to": "Paris"})``.
* ``tool_result``: ``metadata = {"tool": "search_flights", "status": "ok" | "error",
  "call_id": "c1"}``; ``content`` is the tool's output (or error message).

Accepted aliases: tool name ``tool`` / ``tool_name`` / ``name`` / ``function``; arguments
``args`` / ``arguments`` / ``input`` / ``parameters`` (a dict, or a JSON string); call id
``call_id`` / ``tool_call_id`` / ``id``. A result is an error when its status is error /
failed / failure / timeout, ``ok`` or ``success`` is false, ``is_error`` is true or
``error`` is set; without any of these, when its content starts with "error" or mentions
"failed", "exception", "timeout" or "traceback". Without a tool name in metadata the name
is read from content (``name(...)`` or JSON ``{"name": ...}``), else ``"unknown_tool"``.
A result is paired with its call by call id, else with the earliest unanswered call of the
same tool, else with the earliest unanswered call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from observations.extract.base import SessionEvent
from observations.extract.procedures import error_text

_NAME_KEYS = ("tool", "tool_name", "name", "function")
_ARGS_KEYS = ("args", "arguments", "input", "parameters")
_ID_KEYS = ("call_id", "tool_call_id", "id")
_ERROR_STATUS = frozenset({"error", "failed", "failure", "fail", "timeout", "exception"})
_OK_STATUS = frozenset({"ok", "success", "succeeded", "done", "completed"})
_CALL_SYNTAX = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*\(")
_ERROR_TEXT = re.compile(r"^\s*error\b|failed|exception|timeout|timed out|traceback", re.I)


@dataclass(frozen=True, slots=True)
class ToolCall:
    event: SessionEvent
    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A call and its result (``result`` is None when none came back)."""

    call: ToolCall
    result: SessionEvent | None
    ok: bool

    @property
    def error(self) -> str:
        """What went wrong, as text: the message of a JSON error body, else the result."""
        return error_text(self.result.content)[:200] if self.result is not None else "no result"


def _first(metadata: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for key in keys:
        if metadata.get(key) not in (None, ""):
            return metadata[key]
    return None


def _json(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return None


def tool_name(event: SessionEvent) -> str:
    name = _first(event.metadata, _NAME_KEYS)
    if isinstance(name, str):
        return name
    parsed = _json(event.content)
    if isinstance(parsed, dict) and isinstance(parsed.get("name"), str):
        return str(parsed["name"])
    match = _CALL_SYNTAX.match(event.content)
    return match.group(1) if match else "unknown_tool"


def _args(event: SessionEvent) -> Mapping[str, Any]:
    args = _first(event.metadata, _ARGS_KEYS)
    if isinstance(args, str):
        args = _json(args)
    if args is None:
        parsed = _json(event.content)
        args = parsed.get("arguments") if isinstance(parsed, dict) else None
    return dict(args) if isinstance(args, Mapping) else {}


def _call_id(event: SessionEvent) -> str | None:
    value = _first(event.metadata, _ID_KEYS)
    return str(value) if value is not None else None


def parse_call(event: SessionEvent) -> ToolCall:
    return ToolCall(event, tool_name(event), _args(event), _call_id(event))


def result_ok(event: SessionEvent) -> bool:
    """Whether a tool_result reports success (see the module docstring for the rules)."""
    meta = event.metadata
    status = meta.get("status")
    if isinstance(status, str) and status.lower() in _ERROR_STATUS | _OK_STATUS:
        return status.lower() in _OK_STATUS
    for flag in ("ok", "success"):
        if isinstance(meta.get(flag), bool):
            return bool(meta[flag])
    if meta.get("is_error") is True or meta.get("error"):
        return False
    return _ERROR_TEXT.search(event.content) is None


def _pick(pending: list[ToolCall], result: SessionEvent) -> ToolCall | None:
    call_id, name = _call_id(result), _first(result.metadata, _NAME_KEYS)
    for condition in (
        lambda c: call_id is not None and c.call_id == call_id,
        lambda c: call_id is None and name is not None and c.tool == name,
        lambda c: call_id is None,
    ):
        for call in pending:
            if condition(call):
                return call
    return None


def pair_calls(events: Sequence[SessionEvent]) -> list[ToolOutcome]:
    """Tool calls in order, each with its result and whether it succeeded."""
    pending: list[ToolCall] = []
    results: dict[int, SessionEvent] = {}
    calls: list[ToolCall] = []
    for event in events:
        if event.role == "tool_call":
            call = parse_call(event)
            calls.append(call)
            pending.append(call)
        elif event.role == "tool_result":
            matched = _pick(pending, event)
            if matched is not None:
                pending.remove(matched)
                results[matched.event.id] = event
    return [
        ToolOutcome(
            c, results.get(c.event.id), c.event.id in results and result_ok(results[c.event.id])
        )
        for c in calls
    ]
