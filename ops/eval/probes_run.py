"""Running probe cases against a served memledger: feed the events through the HTTP API,
close each session, wait for the builds, run the maintenance jobs, and read what every
check needs back through the API."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

from consolidation.jobs import JOBS
from ledger.db import connect
from ledger.errors import MemledgerError
from observations.extract.base import FACT_KINDS
from ops.eval.probes_checks import Answer, Skill
from ops.eval.probes_model import Case, Check, ProbeSession

_PAGE = 1000
_POLL = 0.5  # seconds between looks at the builds


class ProbeRunError(MemledgerError):
    """The probe run could not go on: the server refused a request or a build failed."""


class Api:
    """A JSON client of a memledger server: a connection per request, since the run idles
    (waiting for builds) longer than the server keeps an idle connection open."""

    def __init__(self, base: str, key: str) -> None:
        url = urlsplit(base)
        self._host, self._port = url.hostname or "127.0.0.1", url.port
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any, str | None]:
        """(status, parsed JSON, Retry-After) of one request."""
        data = None if body is None else json.dumps(body).encode()
        conn = http.client.HTTPConnection(self._host, self._port, timeout=120)
        try:
            conn.request(method, path, body=data, headers=self._headers)
            response = conn.getresponse()
            text = response.read()
        finally:
            conn.close()
        value = json.loads(text) if text else None
        return response.status, value, response.getheader("Retry-After")

    def json(self, method: str, path: str, body: object = None) -> Any:
        status, value, _ = self.call(method, path, body)
        if status != 200:
            raise ProbeRunError(f"{method} {path} answered {status}: {str(value)[:300]}")
        return value


def ledger_events(case: Case, session: ProbeSession) -> list[dict[str, Any]]:
    """A session's events as a chat backend sends them: tool events with the metadata the
    ingest format asks for (a result names its call's tool and its status)."""
    calls: list[str] = []  # tools called and not answered yet, oldest first
    events = []
    for e in session.events:
        metadata: dict[str, Any] = {}
        if e.role == "tool_call":
            content = json.loads(e.content)
            metadata = {"tool": content["tool"], "args": content.get("args", {})}
            calls.append(content["tool"])
        elif e.role == "tool_result":
            ok = json.loads(e.content)["ok"]
            metadata = {"status": "ok" if ok else "error"}
            if calls:
                metadata["tool"] = calls.pop(0)
        event = {
            "external_id": e.id, "channel_id": session.channel, "role": e.role,
            "actor_id": e.actor, "content": e.content, "occurred_at": e.at.isoformat(),
            "metadata": metadata,
        }  # fmt: skip
        if e.actor in case.users:
            event["actor_name"] = case.users[e.actor]
        events.append(event)
    return events


def feed(api: Api, case: Case) -> int:
    """Append the case's sessions in order, closing each once sent; sessions closed."""
    closed = 0
    for session in case.sessions:
        status, out, _ = api.call("POST", "/v1/events", {"events": ledger_events(case, session)})
        if status == 422 and out.get("error") == "BatchRejected":  # the case's own mistake
            bad = out["fields"]["rejected"][0]
            event = session.events[bad["index"]].id
            raise ProbeRunError(f"event {event} rejected: {bad['field']}: {bad['reason']}",
                                case=case.id)  # fmt: skip
        if status != 200:
            raise ProbeRunError(f"POST /v1/events answered {status}: {str(out)[:300]}")
        for session_id in sorted({r["session_id"] for r in out["results"]}):
            closed += 1
            api.json("POST", f"/v1/sessions/{session_id}/close", {})
    return closed


def wait_for_builds(
    db_url: str, tenant: str, *, attempts: int, timeout: float, on_poll: Callable[[int], None]
) -> None:
    """Until every session of the tenant is built (``on_poll`` gets how many are); a
    session whose build failed ``attempts`` times, or the deadline, ends the run."""
    deadline = time.monotonic() + timeout
    with connect(db_url, autocommit=True) as conn:
        while True:
            rows = conn.execute(
                "SELECT id, status, build_attempts, last_error FROM memory_sessions"
                " WHERE tenant_id = %s",
                [tenant],
            ).fetchall()
            built = sum(r["status"] == "built" for r in rows)
            on_poll(built)
            if built == len(rows):
                return
            if given_up := [
                r for r in rows if r["status"] == "failed" and r["build_attempts"] >= attempts
            ]:
                r = given_up[0]
                raise ProbeRunError(f"session {r['id']} failed to build: {r['last_error']}")
            if time.monotonic() > deadline:
                raise ProbeRunError(
                    f"{len(rows) - built} sessions still unbuilt after {timeout:g} s"
                )
            time.sleep(_POLL)


def maintain(api: Api, *, timeout: float = 120) -> dict[str, dict[str, Any]]:
    """Every consolidation job once for the tenant, in the order a full run takes them
    (waiting out a run elsewhere or the tenant's interval); each job's stats."""
    stats = {}
    for job in JOBS:
        deadline = time.monotonic() + timeout
        while True:
            status, out, retry_after = api.call("POST", f"/v1/maintenance/{job}")
            if status == 200 and out["status"] != "busy":
                stats[job] = out["stats"]
                break
            if status not in (200, 429) or time.monotonic() > deadline:
                raise ProbeRunError(f"maintenance {job} answered {status}: {str(out)[:300]}")
            time.sleep(float(retry_after or 1))
    return stats


class Reader:
    """Reads what checks need through the API, each user's listing and profile once."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._entries: dict[str, list[dict[str, Any]]] = {}
        self._profiles: dict[str, list[dict[str, Any]]] = {}

    def answer(self, check: Check) -> Answer:
        if check.kind == "skill":
            assert check.agent is not None
            return Answer(skills=self.skills(check.agent))
        users = {*check.not_for, *([check.user] if check.kind == "no_duplicates" else [])}
        facts = {u: self.facts(u) for u in sorted(u for u in users if u)}
        if check.query is None:
            return Answer(facts=facts)
        assert check.user is not None
        bundle = self.api.json("POST", "/v1/context", {"query": check.query, "user_id": check.user})
        profile = [r["statement"] for r in self.profile(check.user)]
        shown = [p["statement"] for p in bundle["bundle"]["profile"]]
        memories = bundle["bundle"]["memories"]
        shown += [m["statement"] for m in memories if m["kind"] in FACT_KINDS]
        scope: tuple[str, ...] = ()
        if check.kind == "isolation":
            values = [r["value"] for r in self.profile(check.user)]
            scope = (*profile, *values, *(e["memory"] for e in self.entries(check.user)))
        return Answer(bundle["text"], (*profile, *shown), facts, scope)

    def facts(self, user: str) -> tuple[str, ...]:
        entries = self.entries(user)
        return tuple(e["memory"] for e in entries if e["metadata"]["kind"] in FACT_KINDS)

    def entries(self, user: str) -> list[dict[str, Any]]:
        if user not in self._entries:
            self._entries[user] = list(self._pages(user))
        return self._entries[user]

    def _pages(self, user: str) -> Iterator[dict[str, Any]]:
        page = 1
        while True:
            path = f"/v3/memories/?page={page}&page_size={_PAGE}"
            out = self.api.json("POST", path, {"filters": {"user_id": user}})
            yield from out["results"]
            if out["next"] is None:
                return
            page += 1

    def profile(self, user: str) -> list[dict[str, Any]]:
        if user not in self._profiles:
            path = f"/v1/users/{quote(user, safe='')}/profile"
            self._profiles[user] = self.api.json("GET", path)
        return self._profiles[user]

    def skills(self, agent: str) -> tuple[Skill, ...]:
        rows = self.api.json("GET", f"/v1/agents/{quote(agent, safe='')}/skills")
        return tuple(
            Skill(
                id=r["id"],
                key=r["skill_key"],
                goal=r["goal"],
                steps=tuple(s if isinstance(s, str) else json.dumps(s) for s in r["steps"]),
                applies_to=tuple(r["applies_to"]),
                evidence_count=r["evidence_count"],
            )
            for r in rows
        )
