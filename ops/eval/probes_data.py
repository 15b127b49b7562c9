"""Memory probe files read and validated into cases (the format is docs/probes.md).

Every rule the file breaks is an :class:`InvalidProbeFile` naming the case and the field
(``sessions.1.events.3.at``), so a hand-written file is fixed at the place it is wrong.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger.errors import InvalidScope
from ledger.scope import check_id
from ops.eval.probes_model import (
    CATEGORIES,
    KINDS,
    NEEDS_POSITIVE,
    ROLES,
    Case,
    Check,
    InvalidProbeFile,
    ProbeEvent,
    ProbeFile,
    ProbeSession,
)

_CASE_ID = re.compile(rf"({'|'.join(CATEGORIES)})-\d{{3}}")
_CASE_FIELDS = {"id", "category", "tenant", "channel", "users", "agent", "note", "sessions",
                "checks"}  # fmt: skip


def load(path: Path, only: set[str] | None = None) -> ProbeFile:
    """The cases of a probe file (``only`` those ids, when given), validated whole."""
    try:
        raw = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidProbeFile(f"cannot read {path} as JSON: {exc}") from exc
    probes = parse(raw)
    if only is None:
        return probes
    if missing := only - {c.id for c in probes.cases}:
        raise InvalidProbeFile(f"no such cases: {', '.join(sorted(missing))}", field="cases")
    return ProbeFile(probes.tenant, tuple(c for c in probes.cases if c.id in only))


def parse(raw: object) -> ProbeFile:
    """A probe file's JSON value as cases, or the first rule it breaks."""
    top = _object(raw, None, "", {"version", "cases"})
    if top.get("version") != 1:
        raise InvalidProbeFile("must be 1", field="version")
    cases_raw = top.get("cases")
    if not isinstance(cases_raw, list) or not cases_raw:
        raise InvalidProbeFile("a non-empty list of cases is required", field="cases")
    reader = _Reader()
    cases = tuple(reader.case(c, i) for i, c in enumerate(cases_raw))
    return ProbeFile(reader.tenant or "", cases)


def _object(raw: object, case: str | None, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InvalidProbeFile("must be a JSON object", case=case, field=where)
    if unknown := sorted(set(raw) - allowed):
        name = f"{where}.{unknown[0]}" if where else unknown[0]
        raise InvalidProbeFile("not a field of the format", case=case, field=name)
    return raw


class _Reader:
    """Reads cases in file order, keeping what must be unique across the file."""

    def __init__(self) -> None:
        self.tenant: str | None = None
        self.case_ids: set[str] = set()
        self.user_ids: set[str] = set()
        self.event_ids: set[str] = set()
        self.channels: dict[str, str] = {}  # channel -> the case using it

    def case(self, raw: object, index: int) -> Case:
        where = f"cases.{index}"
        case_id = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(case_id, str) or not _CASE_ID.fullmatch(case_id):
            prefixes = " ".join(CATEGORIES)
            raise InvalidProbeFile(f"must be <prefix>-NNN (prefixes: {prefixes})",
                                   field=f"{where}.id")  # fmt: skip
        if case_id in self.case_ids:
            raise InvalidProbeFile("a second case with this id", case=case_id, field="id")
        self.case_ids.add(case_id)
        return _CaseReader(self, case_id).read(_object(raw, case_id, "", _CASE_FIELDS))


class _CaseReader:
    def __init__(self, file: _Reader, case_id: str) -> None:
        self.file = file
        self.id = case_id
        self.users: dict[str, str] = {}
        self.agent = ""
        self.events: set[str] = set()

    def fail(self, message: str, where: str) -> InvalidProbeFile:
        return InvalidProbeFile(message, case=self.id, field=where)

    def read(self, raw: dict[str, Any]) -> Case:
        category = raw.get("category")
        if category != CATEGORIES[self.id.split("-")[0]]:
            prefix = self.id.split("-")[0]
            raise self.fail(f"must be {CATEGORIES[prefix]} for an id {prefix}-NNN", "category")
        tenant = self.ident(raw.get("tenant"), "tenant")
        if self.file.tenant is not None and tenant != self.file.tenant:
            raise self.fail(f"every case of a file has one tenant ({self.file.tenant})", "tenant")
        self.file.tenant = tenant
        self.users = self.read_users(raw.get("users"))
        self.agent = self.ident(raw.get("agent"), "agent")
        if self.agent in self.users:
            raise self.fail("the agent's id is also a user's", "agent")
        note = raw.get("note", "")
        if not isinstance(note, str):
            raise self.fail("must be a string", "note")
        channel = self.ident(raw.get("channel"), "channel")
        sessions_raw = raw.get("sessions")
        if not isinstance(sessions_raw, list) or not 2 <= len(sessions_raw) <= 6:
            raise self.fail("a list of 2-6 sessions is required", "sessions")
        sessions = tuple(self.session(s, i, channel) for i, s in enumerate(sessions_raw))
        self.in_time_order(sessions)
        checks_raw = raw.get("checks")
        if not isinstance(checks_raw, list) or not checks_raw:
            raise self.fail("a non-empty list of checks is required", "checks")
        checks = tuple(self.check(c, i) for i, c in enumerate(checks_raw))
        kinds = {c.kind for c in checks}
        for kind in NEEDS_POSITIVE:
            if kind in kinds and "current_fact" not in kinds:
                raise self.fail(f"a case with an {kind} check needs a current_fact check too",
                                "checks")  # fmt: skip
        return Case(self.id, category, channel, self.users, self.agent, note, sessions, checks)

    def ident(self, value: object, where: str) -> str:
        try:
            return check_id(value, where)
        except InvalidScope:
            raise self.fail("an id of 1-128 characters, no control characters or outer "
                            "spaces, is required", where) from None  # fmt: skip

    def text(self, value: object, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail("a non-blank string is required", where)
        return value

    def read_users(self, raw: object) -> dict[str, str]:
        if not isinstance(raw, dict) or not raw:
            raise self.fail("an object of user id -> display name is required", "users")
        users = {}
        for user_id, name in raw.items():
            self.ident(user_id, f"users.{user_id}")
            if user_id in self.file.user_ids:
                raise self.fail("user ids are unique across the file", f"users.{user_id}")
            self.file.user_ids.add(user_id)
            users[user_id] = self.text(name, f"users.{user_id}")
        return users

    def session(self, raw: object, index: int, channel: str) -> ProbeSession:
        where = f"sessions.{index}"
        body = _object(raw, self.id, where, {"events", "channel"})
        if "channel" in body:
            channel = self.ident(body["channel"], f"{where}.channel")
        if self.file.channels.setdefault(channel, self.id) != self.id:
            used = self.file.channels[channel]
            raise self.fail(f"channel {channel!r} is case {used}'s", f"{where}.channel")
        events = body.get("events")
        if not isinstance(events, list) or not events:
            raise self.fail("a non-empty list of events is required", f"{where}.events")
        return ProbeSession(
            channel, tuple(self.event(e, f"{where}.events.{i}") for i, e in enumerate(events))
        )

    def event(self, raw: object, where: str) -> ProbeEvent:
        body = _object(raw, self.id, where, {"id", "role", "actor", "at", "content"})
        event_id = self.text(body.get("id"), f"{where}.id")
        if event_id in self.file.event_ids:
            raise self.fail("event ids are unique across the file", f"{where}.id")
        self.file.event_ids.add(event_id)
        self.events.add(event_id)
        role = body.get("role")
        if role not in ROLES:
            raise self.fail(f"must be one of {', '.join(ROLES)}", f"{where}.role")
        actor = body.get("actor")
        expected = set(self.users) if role == "user" else {self.agent}
        if actor not in expected:
            who = "one of the case's users" if role == "user" else "the case's agent"
            raise self.fail(f"a {role} event's actor must be {who}", f"{where}.actor")
        content = self.text(body.get("content"), f"{where}.content")
        if role in ("tool_call", "tool_result"):
            self.tool_content(content, role, f"{where}.content")
        return ProbeEvent(event_id, role, actor, self.time(body.get("at"), f"{where}.at"), content)

    def time(self, value: object, where: str) -> datetime:
        try:
            at = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            at = None
        if at is None or at.utcoffset() is None:
            raise self.fail("an ISO-8601 time with a UTC offset is required", where)
        return at

    def tool_content(self, content: str, role: str, where: str) -> None:
        try:
            value = json.loads(content)
        except ValueError:
            value = None
        if role == "tool_call":
            ok = isinstance(value, dict) and isinstance(value.get("tool"), str)
            ok = ok and isinstance(value.get("args", {}), dict)
            shape = '{"tool": name, "args": {...}}'
        else:
            ok = isinstance(value, dict) and isinstance(value.get("ok"), bool)
            shape = '{"ok": true, "result": ...} or {"ok": false, "error": "..."}'
        if not ok:
            raise self.fail(f"a {role}'s content is JSON text {shape}", where)

    def in_time_order(self, sessions: tuple[ProbeSession, ...]) -> None:
        last: datetime | None = None
        for i, session in enumerate(sessions):
            for j, event in enumerate(session.events):
                if last is not None and event.at < last:
                    raise self.fail(
                        "earlier than the event before it", f"sessions.{i}.events.{j}.at"
                    )
                last = event.at

    def check(self, raw: object, index: int) -> Check:
        where = f"checks.{index}"
        kind = raw.get("kind") if isinstance(raw, dict) else None
        if not isinstance(kind, str) or kind not in KINDS:
            raise self.fail(f"kind must be one of {', '.join(KINDS)}", f"{where}.kind")
        required, optional = KINDS[kind]
        body = _object(raw, self.id, where, {"kind", *required, *optional})
        if missing := sorted(required - set(body)):
            raise self.fail("required for this kind", f"{where}.{missing[0]}")
        values: dict[str, Any] = {}
        for name, value in body.items():
            if name != "kind":
                values[name] = self.check_field(name, value, f"{where}.{name}")
        if "leak_from" in values and values["leak_from"] == values.get("user"):
            raise self.fail("must be another user than the check's", f"{where}.leak_from")
        return Check(kind=kind, index=index, **values)

    def check_field(self, name: str, value: object, where: str) -> Any:
        if name in ("user", "leak_from"):
            if value not in self.users:
                raise self.fail("must be one of the case's users", where)
            return value
        if name == "agent":
            if value != self.agent:
                raise self.fail("must be the case's agent", where)
            return value
        if name == "query":
            return self.text(value, where)
        if name == "max_current":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise self.fail("an integer of at least 1 is required", where)
            return value
        if name == "evidence":
            ids = self.strings(value, where)
            if unknown := [e for e in ids if e not in self.events]:
                raise self.fail(f"no event {unknown[0]!r} in this case", where)
            return ids
        if name == "not_for":
            if not isinstance(value, dict) or not value:
                raise self.fail("an object of user id -> strings is required", where)
            for user in value:
                if user not in self.users:
                    raise self.fail("must name the case's users", f"{where}.{user}")
            return {u: self.strings(s, f"{where}.{u}") for u, s in value.items()}
        return self.strings(value, where)

    def strings(self, value: object, where: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail("a non-empty list of strings is required", where)
        return tuple(self.text(s, f"{where}.{i}") for i, s in enumerate(value))
