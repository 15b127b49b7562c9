"""The HTTP API over a real socket (uvicorn on loopback, real PostgreSQL and Redis)."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from ops.api.app import create_app
from ops.metrics import shared_metrics
from tests.events import sample_events
from tests.system.live_api import NOW, Server

SAMPLE = sample_events()


def client_for(server: Server, tenant: str, scheme: str = "Bearer") -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"{scheme} {server.key(tenant)}"}
    )


@pytest.fixture(scope="module")
def tenant_a(server: Server) -> Iterator[dict[str, Any]]:
    """Tenant A with the sample ingested and built; its ids for the isolation test."""
    with client_for(server, "tenant-a") as client:
        yield _ingest_sample(server, client)


def _ingest_sample(server: Server, client: httpx.Client) -> dict[str, Any]:
    out = client.post("/v1/events", json={"events": SAMPLE}).json()
    for session_id in {r["session_id"] for r in out["results"]}:
        client.post(f"/v1/sessions/{session_id}/close")
    server.build_queued()
    hits = client.post("/v1/search", json={"query": "peanut allergy", "user_id": "maya"}).json()
    skills = client.get("/v1/agents/atlas/skills").json()
    return {
        "client": client,
        "entry_id": hits["results"][0]["entry"]["id"],
        "session_id": out["results"][0]["session_id"],
        "skill_id": skills[0]["id"],
        "user_id": "maya",
        "agent_id": "atlas",
        "statements": [h["entry"]["statement"] for h in hits["results"]],
    }


def test_ingest_reports_each_event_and_a_redelivery_is_a_no_op(server: Server) -> None:
    with client_for(server, "tenant-i", "Token") as client:
        _ingest_twice(client)


def _ingest_twice(client: httpx.Client) -> None:
    """A batch with a bad event writes nothing and names it; fixed, the batch is written
    whole; sent again, every event is a duplicate."""
    batch = [dict(e, channel_id="dm-i") for e in SAMPLE[:3]]
    bad = dict(SAMPLE[3], role="robot", channel_id="dm-i")
    refused = client.post("/v1/events", json={"events": [batch[0], bad, *batch[1:]]})
    assert refused.status_code == 422
    body = refused.json()
    assert body["error"] == "BatchRejected"
    assert [(r["index"], r["field"]) for r in body["fields"]["rejected"]] == [(1, "role")]
    first = client.post("/v1/events", json={"events": batch}).json()
    assert [r["status"] for r in first["results"]] == ["accepted"] * 3
    again = client.post("/v1/events", json={"events": batch}).json()
    assert [r["status"] for r in again["results"]] == ["duplicate"] * 3
    assert again["accepted"] == 0


def test_requests_without_a_valid_key_are_refused(server: Server) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic x"}):
        r = httpx.post(f"{server.url}/v1/search", json={"query": "x"}, headers=headers)
        assert r.status_code == 401 and r.json()["error"] == "Unauthorized"


def test_bad_input_is_a_4xx_naming_the_field(server: Server) -> None:
    headers = {"Authorization": f"Bearer {server.key('tenant-v')}"}
    r = httpx.post(f"{server.url}/v1/search", json={"query": ""}, headers=headers)
    assert r.status_code == 422 and "query" in r.json()["message"]
    r = httpx.post(f"{server.url}/v1/search", json={"query": "x", "limit": 0}, headers=headers)
    assert r.status_code == 422 and "limit" in r.json()["message"]
    r = httpx.post(f"{server.url}/v1/events", content=b"{not json", headers=headers)
    assert r.status_code == 422
    for memory_id in ("²", "٣", "1" * 19, "-1"):  # not an id: not found, never a 500
        r = httpx.get(f"{server.url}/v1/memories/{memory_id}/", headers=headers)
        assert r.status_code == 404, memory_id
    # the framework's own refusals come in the same shape as every other error
    r = httpx.get(f"{server.url}/v1/no-such-route", headers=headers)
    assert r.status_code == 404 and r.json() == {
        "error": "NotFound",
        "message": "Not Found",
        "fields": {},
    }
    deep = b'{"query": "x", "user_id": "u", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    json_headers = {**headers, "content-type": "application/json"}
    r = httpx.post(f"{server.url}/v1/context", content=deep, headers=json_headers)
    assert r.status_code == 400 and r.json()["error"] == "BadRequest"
    big = b'{"events": [' + b" " * (9 * 1024 * 1024) + b"]}"
    r = httpx.post(f"{server.url}/v1/events", content=big, headers=headers)
    assert r.status_code == 413
    chunked = iter([big[i : i + 65536] for i in range(0, len(big), 65536)])  # no length
    r = httpx.post(f"{server.url}/v1/events", content=chunked, headers=headers)
    assert r.status_code == 413 and r.json()["error"] == "PayloadTooLarge"
    event = json.dumps(dict(SAMPLE[0], channel_id="chunked")).encode()
    small = iter([b'{"events": [', event, b"]}"])
    r = httpx.post(f"{server.url}/v1/events", content=small, headers=json_headers)
    assert r.status_code == 200 and r.json()["accepted"] == 1


def test_an_event_postgresql_could_not_store_is_named_and_nothing_is_written(
    server: Server,
) -> None:
    """A NUL in metadata (which PostgreSQL's json types refuse) is caught before the
    append: the event and field are named, and the batch's good event is not written."""
    good = {**SAMPLE[0], "external_id": "nul-ok", "channel_id": "nul"}
    bad = {**SAMPLE[1], "external_id": "nul-bad", "channel_id": "nul"}
    bad["metadata"] = {"note": "a\x00b"}
    with client_for(server, "tenant-z") as client:
        r = client.post("/v1/events", json={"events": [good, bad]})
        assert r.status_code == 422
        [rejected] = r.json()["fields"]["rejected"]
        assert (rejected["index"], rejected["field"]) == (1, "metadata")
        assert "NUL" in rejected["reason"]
        out = client.post("/v1/events", json={"events": [good]}).json()
    assert out["accepted"] == 1  # not a duplicate: the refused batch wrote nothing


def test_ingest_applies_the_limits_the_server_is_configured_with(server: Server) -> None:
    """Raised limits hold through the whole append, not only the per-event check."""
    settings = server.state.settings.model_copy(update={"max_content_bytes": 256 * 1024})
    app = create_app(dataclasses.replace(server.state, settings=settings))
    long = {**SAMPLE[0], "external_id": "long-1", "content": "word " * 20_000}  # 100 kB
    headers = {"Authorization": f"Bearer {server.key('tenant-l')}"}
    with TestClient(app) as client:
        r = client.post("/v1/events", json={"events": [long]}, headers=headers)
        assert r.status_code == 200 and r.json()["accepted"] == 1
        longer = {**long, "external_id": "long-2", "content": "word " * 60_000}  # 300 kB
        r = client.post("/v1/events", json={"events": [longer]}, headers=headers)
        assert r.status_code == 422 and "262144 limit" in r.json()["message"]


def test_search_context_profile_skills_entry_and_history(tenant_a: dict[str, Any]) -> None:
    client = tenant_a["client"]
    assert any("peanut" in s for s in tenant_a["statements"])
    bundle = client.post(
        "/v1/context", json={"query": "restaurant for dinner", "user_id": "maya"}
    ).json()
    assert "## User profile" in bundle["text"] and bundle["bundle"]["used_tokens"] <= 1000
    profile = client.get("/v1/users/maya/profile").json()
    assert any(r["key"] == "constraint:allergy:peanut" for r in profile)
    entry = client.get(f"/v1/entries/{tenant_a['entry_id']}").json()
    assert entry["provenance"]["external_ids"]
    hits = client.post(
        "/v1/search", json={"query": "seat on flights", "user_id": "maya", "history": True}
    ).json()["results"]
    assert hits and all(  # a hit shows the entry as it is stored
        h["entry"] == client.get(f"/v1/entries/{h['entry']['id']}").json() for h in hits
    )
    history = client.get(f"/v1/entries/{tenant_a['entry_id']}/history").json()
    assert history[0]["action"] == "ADD"
    review = client.post(
        f"/v1/skills/{tenant_a['skill_id']}/review",
        json={"decision": "publish", "reviewer": "ops", "reason": "works"},
    ).json()
    assert review["status"] == "published"


def test_edit_and_delete_go_through_history(server: Server) -> None:
    with client_for(server, "tenant-e") as client:
        _edit_and_delete(server, client)


def _edit_and_delete(server: Server, client: httpx.Client) -> None:
    client.post(
        "/v1/memories",
        json={
            "user_id": "zoe",
            "messages": [
                {"role": "user", "content": "I love sailing."},
                {"role": "user", "content": "My sister Ana lives in Lisbon."},
            ],
        },
    )
    server.build_queued()
    hits = client.post("/v1/search", json={"query": "sailing", "user_id": "zoe"}).json()
    entry_id = next(h["entry"]["id"] for h in hits["results"] if h["entry"]["kind"] == "preference")
    edited = client.put(f"/v1/entries/{entry_id}", json={"statement": "Zoe loves kitesurfing."})
    assert edited.json()["statement"] == "Zoe loves kitesurfing."
    assert client.delete(f"/v1/entries/{entry_id}").json() == {"deleted": 1}
    actions = [h["action"] for h in client.get(f"/v1/entries/{entry_id}/history").json()]
    assert actions == ["ADD", "UPDATE", "DELETE"]
    assert client.delete("/v1/users/zoe/entries").json()["deleted"] >= 1
    after = client.post("/v1/search", json={"query": "sailing", "user_id": "zoe"}).json()
    assert after["results"] == []


def _fill(path: str, ids: dict[str, Any]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(ids.get(m[1], ids.get("id", 1))), path)


def test_another_tenant_sees_nothing_through_any_route(
    server: Server, tenant_a: dict[str, Any]
) -> None:
    spec = tenant_a["client"].get("/openapi.json").json()
    before = {
        path: tenant_a["client"].get(path).json()
        for path in (f"/v1/entries/{tenant_a['entry_id']}", "/v1/users/maya/profile")
    }
    with client_for(server, "tenant-b") as other:
        assert _probe_every_route(other, spec, tenant_a) >= 15
    for path, body in before.items():  # B's writes (PUT, DELETE, review…) changed nothing of A
        assert tenant_a["client"].get(path).json() == body


def _probe_every_route(other: httpx.Client, spec: dict[str, Any], tenant_a: dict[str, Any]) -> int:
    ids = {k: tenant_a[k] for k in ("entry_id", "session_id", "skill_id", "user_id", "agent_id")}
    ids["memory_id"] = tenant_a["entry_id"]
    scope = {"query": "peanut allergy restaurant", "user_id": "maya", "agent_id": "atlas"}
    checked = 0
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            body = _body_for(op, spec, scope)
            r = other.request(method.upper(), _fill(path, ids), json=body)
            text = r.text
            assert r.status_code in (200, 404, 422), (method, path, r.status_code, text)
            assert not any(s in text for s in tenant_a["statements"]), (method, path)
            assert "peanut" not in text.lower(), (method, path)
            checked += 1
    return checked


def _body_for(op: dict[str, Any], spec: dict[str, Any], default: Any) -> Any:
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return None
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    props = spec["components"]["schemas"].get(name, {}).get("properties", {})
    sample = {
        "decision": "publish",
        "reviewer": "b",
        "statement": "hijacked",
        "events": [dict(SAMPLE[0], channel_id="b-channel")],
        "messages": [{"role": "user", "content": "hello"}],
        "text": "hijacked",
        **(default or {}),
    }
    return {k: v for k, v in sample.items() if k in props}


def test_the_unmodified_mem0_client_works_against_memledger(
    server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEM0_TELEMETRY", "False")  # read when mem0 is first imported
    monkeypatch.setenv("MEM0_DIR", str(tmp_path))
    from mem0 import MemoryClient
    from mem0.exceptions import MemoryNotFoundError

    client = MemoryClient(host=server.url, api_key=server.key("tenant-m"))
    added = client.add(
        [{"role": "user", "content": "I am allergic to shellfish."},
         {"role": "user", "content": "My brother Leo lives in Madrid."}],
        user_id="ines",
        metadata={"source": "onboarding"},
    )  # fmt: skip
    assert added["status"] == "PENDING"
    assert server.build_queued() >= 1
    found = client.search("shellfish allergy", filters={"user_id": "ines"})
    memory = found["results"][0]
    assert "shellfish" in memory["memory"] and memory["user_id"] == "ines"
    assert memory["metadata"]["source"] == "onboarding"  # given to the memories of the add
    everything = client.get_all(filters={"user_id": "ines"})
    assert everything["count"] >= 2 and memory["id"] in {m["id"] for m in everything["results"]}
    assert client.get(memory["id"])["memory"] == memory["memory"]
    client.update(memory["id"], text="Ines is allergic to shellfish and to peanuts.")
    assert "peanuts" in client.get(memory["id"])["memory"]
    client.update(memory["id"], metadata={"source": "crm"})
    assert client.get(memory["id"])["metadata"]["source"] == "crm"
    assert "peanuts" in client.get(memory["id"])["memory"]
    assert [h["event"] for h in client.history(memory["id"])] == ["ADD", "UPDATE", "UPDATE"]
    assert {"type": "user", "name": "ines"}.items() <= client.users()["results"][0].items()
    client.delete(memory["id"])
    assert [h["event"] for h in client.history(memory["id"])][-1] == "DELETE"
    with pytest.raises(MemoryNotFoundError):
        client.get(memory["id"])  # deleted: gone for Mem0, its history kept
    client.delete_all(user_id="ines")
    assert client.get_all(filters={"user_id": "ines"})["count"] == 0
    client.add([{"role": "user", "content": "My sister Ana lives in Porto."}], user_id="ines")
    server.build_queued()
    assert client.get_all(filters={"user_id": "ines"})["count"] >= 1
    client.delete_users(user_id="ines")
    assert client.get_all(filters={"user_id": "ines"})["count"] == 0
    with pytest.raises(MemoryNotFoundError):
        client.get("999999999")
    other = MemoryClient(host=server.url, api_key=server.key("tenant-n"))
    with pytest.raises(MemoryNotFoundError):
        other.get(memory["id"])
    client.client.close()
    other.client.close()


def test_mem0_filters_are_applied_or_refused_never_ignored(server: Server) -> None:
    with client_for(server, "tenant-f") as client:
        for user, text in (("alice", "I am allergic to shellfish."), ("bob", "I love shellfish.")):
            added = client.post(
                "/v3/memories/add/",
                json={
                    "messages": [{"role": "user", "content": text}],
                    "filters": {"user_id": user},
                },
            )  # mem0ai 2.x sends the ids in filters
            assert added.status_code == 200, added.text
        server.build_queued()

        def people(route: str, filters: dict[str, Any]) -> set[str]:
            """Who the memories found speak of (a session summary has no user_id)."""
            body = {"query": "shellfish", "filters": filters}
            out = client.post(route, json=body)
            assert out.status_code == 200, out.text
            texts = [m["memory"].casefold() for m in out.json()["results"]]
            return {name for name in ("alice", "bob") if any(name in t for t in texts)}

        for route in ("/v3/memories/search/", "/v3/memories/"):
            assert people(route, {"user_id": "alice"}) == {"alice"}
            assert people(route, {"AND": [{"user_id": "alice"}, {"run_id": "x"}]}) == {"alice"}
            for filters, field in (
                ({"OR": [{"user_id": "alice"}, {"user_id": "bob"}]}, "filters.OR"),
                ({}, "filters"),
                ({"user_id": "alice", "created_at": {"gte": "2025-01-01"}}, "filters.created_at"),
                ({"AND": [{"user_id": "alice"}, {"user_id": "bob"}]}, "filters.user_id"),
                ({"user_id": "*"}, "filters.user_id"),
            ):
                out = client.post(route, json={"query": "shellfish", "filters": filters})
                assert out.status_code == 422, (route, filters, out.text)
                assert field in str(out.json()["fields"]), out.json()


def test_mem0_delete_all_deletes_one_owners_memories_or_nothing(server: Server) -> None:
    """Mem0 deletes what matches every id given; a delete read wider is refused instead."""
    with client_for(server, "tenant-da") as client:
        _ingest_sample(server, client)

        def count(**ids: str) -> int:
            out = client.post("/v3/memories/", json={"filters": ids})
            assert out.status_code == 200, out.text
            return int(out.json()["count"])

        before = {"maya": count(user_id="maya"), "atlas": count(agent_id="atlas")}
        assert min(before.values()) > 0
        for params, field in (
            ({"user_id": "maya", "agent_id": "atlas"}, "agent_id"),
            ({"user_id": "maya", "run_id": "another-chat"}, "run_id"),
            ({"user_id": "maya", "app_id": "x"}, "app_id"),
            ({}, "user_id"),
        ):
            out = client.delete("/v1/memories/", params=params)
            assert out.status_code == 422 and field in out.json()["fields"].values(), out.text
        assert {"maya": count(user_id="maya"), "atlas": count(agent_id="atlas")} == before
        ping = client.get("/v1/ping/").json()  # clients send back the org and project
        params = {"user_id": "maya", "org_id": ping["org_id"], "project_id": ping["project_id"]}
        assert client.delete("/v1/memories/", params=params).status_code == 200
        # the agent keeps what it learnt from others (what came of maya's requests goes)
        assert count(user_id="maya") == 0 and count(agent_id="atlas") > 0


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def test_mem0_update_refuses_what_it_cannot_store_or_apply(server: Server) -> None:
    """What the ledger would refuse as event metadata is a 422 naming it, and the memory
    stays readable: deep nesting stored once made every later read of it a 500. Options
    it cannot apply are refused, not ignored."""
    with client_for(server, "tenant-um") as client:
        entry_id = _ingest_sample(server, client)["entry_id"]
        memory = f"/v1/memories/{entry_id}/"
        for metadata in (_nested(300), _nested(64), {"k": "a\x00b"}, {"k": "x" * 17_000}):
            out = client.put(
                memory, json={"text": "Maya is allergic to peanuts.", "metadata": metadata}
            )
            assert out.status_code == 422 and out.json()["fields"] == {"field": "metadata"}, (
                out.text
            )
        for option, value in (("timestamp", 1700000000), ("expiration_date", "2020-01-01")):
            out = client.put(memory, json={option: value})  # refused, not ignored
            assert out.status_code == 422 and out.json()["fields"] == {"field": option}
        assert client.put(memory, json={"expiration_date": None}).status_code == 200
        ok = client.put(memory, json={"metadata": _nested(62)})
        assert ok.status_code == 200, ok.text
        assert client.get(memory).json()["metadata"]["a"] == _nested(61)
        assert client.get(f"/v1/entries/{entry_id}").status_code == 200


def test_edits_and_deletes_reach_the_read_models(server: Server) -> None:
    with client_for(server, "tenant-p") as client:
        ids = _ingest_sample(server, client)
        server.project_queued()  # what other tests queued
        profile = client.get("/v1/users/maya/profile").json()
        assert profile, "the sample gives maya a profile"
        edited = client.put(f"/v1/entries/{ids['entry_id']}", json={"statement": "Maya is fine."})
        assert edited.status_code == 200 and server.project_queued() == ["tenant-p"]
        profile = client.get("/v1/users/maya/profile").json()
        assert "Maya is fine." in {row["statement"] for row in profile}
        assert client.delete("/v1/entries/999999999").status_code == 404
        assert server.project_queued() == []  # a failed request queues nothing
        assert client.delete("/v1/users/maya/entries").json()["deleted"] > 0
        assert client.get("/v1/users/maya/profile").json() == profile  # until projected
        assert server.project_queued() == ["tenant-p"]
        assert client.get("/v1/users/maya/profile").json() == []
        context = client.post("/v1/context", json={"query": "allergies?", "user_id": "maya"})
        assert "## User profile" not in context.json()["text"]


def test_remembered_messages_form_a_session_of_their_own_or_nothing_is_written(
    server: Server,
) -> None:
    with client_for(server, "tenant-r") as client:

        def remember(route: str, body: dict[str, Any]) -> httpx.Response:
            return client.post(route, json=body)

        def sessions() -> list[tuple[int, str, int]]:
            """Each session, and how many events it holds (by its count and by its rows)."""
            rows = server.rows(
                "SELECT s.id, s.status, s.event_count, (SELECT count(*) FROM"
                " memory_session_events e WHERE e.tenant_id = s.tenant_id"
                " AND e.session_id = s.id) AS stored"
                " FROM memory_sessions s WHERE s.tenant_id = 'tenant-r' ORDER BY s.id"
            )
            assert all(r["event_count"] == r["stored"] for r in rows)
            return [(r["id"], r["status"], r["stored"]) for r in rows]

        live = client.post("/v1/events", json={"events": [dict(SAMPLE[-1], channel_id="dm")]})
        [(chat, status, held)] = sessions()
        assert (status, held) == ("open", 1)
        refused = [
            ("/v1/memories", {"user_id": "zoe", "messages": [
                {"role": "user", "content": "I love sailing."},
                {"role": "user", "content": "   "}]}, "messages.1.content"),
            ("/v1/memories", {"user_id": "zoe", "channel_id": "dm", "messages": [
                {"role": "user", "content": "I love sailing."}]}, "channel_id"),
            ("/v3/memories/add/", {"user_id": "zoe", "messages": [
                {"role": "tool", "content": "42"}]}, "messages.0.role"),
            ("/v3/memories/add/", {"user_id": "zoe", "messages": [
                {"role": "user", "content": None}]}, "messages.0.content"),
            ("/v3/memories/add/", {"agent_id": "atlas", "messages": [
                {"role": "user", "content": "I love sailing."}]}, "user_id"),
        ]  # fmt: skip
        for route, body, field in refused:
            out = remember(route, body)
            assert out.status_code == 422 and field in str(out.json()["fields"]), out.text
        assert live.status_code == 200 and sessions() == [(chat, "open", 1)]  # nothing written

        out = remember("/v1/memories", {"user_id": "zoe", "messages": [
            {"role": "user", "content": "I love sailing."}]}).json()  # fmt: skip
        assert out["sessions_closed"] == [out["results"][0]["session_id"]]
        parts = [{"type": "text", "text": "I live in"}, {"type": "text", "text": "Lisbon."}]
        added = remember("/v3/memories/add/", {
            "messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": parts}],
            "filters": {"user_id": "zoe"}})  # fmt: skip
        assert added.status_code == 200, added.text
        stored = server.rows(
            "SELECT role, content FROM memory_session_events"
            " WHERE tenant_id = 'tenant-r' AND channel_id = 'mem0-zoe' ORDER BY id"
        )
        assert [(r["role"], r["content"]) for r in stored] == [
            ("system", "Be brief."),
            ("user", "I live in\nLisbon."),
        ]


def test_ids_with_a_slash_reach_every_route_that_names_them_in_its_path(server: Server) -> None:
    """An id may hold "/" (sent as %2F): the routes naming a user or agent in the path,
    erasure among them, reach it, and the published paths stay as they were."""
    user = "acme/maya"
    with client_for(server, "tenant-slash") as client:
        message = {"role": "user", "content": "I am allergic to peanuts."}

        def remember() -> None:
            out = client.post("/v1/memories", json={"user_id": user, "messages": [message]})
            assert out.status_code == 200, out.text
            server.build_queued()

        def memories() -> int:
            found = client.post("/v3/memories/", json={"filters": {"user_id": user}})
            return int(found.json()["count"])

        remember()
        assert memories() > 0
        profile = client.get("/v1/users/acme%2Fmaya/profile")
        assert [r["key"] for r in profile.json()] == ["constraint:allergy:peanut"], profile.text
        assert client.get("/v1/agents/ops%2Fatlas/skills").json() == []
        assert client.delete("/v1/users/acme%2Fmaya/entries").status_code == 200
        assert memories() == 0
        remember()
        assert memories() > 0
        assert client.delete("/v2/entities/user/acme%2Fmaya/").status_code == 200
        assert memories() == 0
        paths = client.get("/openapi.json").json()["paths"]
        assert "/v1/users/{user_id}/profile" in paths
        assert "/v2/entities/{entity_type}/{entity_id}/" in paths


def test_memories_of_the_longest_user_ids_go_to_channels_of_their_own(server: Server) -> None:
    """A user id may take 128 characters; the default channel (prefix + id) must still be
    one the ledger takes, and two such users must not share it."""
    users = ["u" * 127 + "1", "u" * 127 + "2"]
    with client_for(server, "tenant-long") as client:
        for user in users:
            message = {"role": "user", "content": f"I love sailing, says {user[-1]}."}
            out = client.post("/v1/memories", json={"user_id": user, "messages": [message]})
            assert out.status_code == 200, out.text
            out = client.post(
                "/v3/memories/add/", json={"messages": [message], "filters": {"user_id": user}}
            )
            assert out.status_code == 200, out.text
        rows = server.rows(
            "SELECT DISTINCT channel_id FROM memory_session_events WHERE tenant_id = %s",
            "tenant-long",
        )
        assert len({r["channel_id"] for r in rows}) == 4


def test_maintenance_runs_a_job_once_per_interval_for_the_keys_tenant(server: Server) -> None:
    with client_for(server, "tenant-o") as client:
        first = client.post("/v1/maintenance/supersede")
        assert first.status_code == 200 and first.json()["status"] == "done"
        again = client.post("/v1/maintenance/supersede")  # the server's clock stands still
        assert again.status_code == 429 and again.json()["error"] == "TooManyRequests"
        assert 1 <= int(again.headers["retry-after"]) <= 10
        with server.at(NOW + timedelta(seconds=10)):  # the next interval
            assert client.post("/v1/maintenance/supersede").json()["status"] == "done"
        assert client.post("/v1/maintenance/everything").status_code == 422
        server.build_queued()
        out = client.post("/v1/events", json={"events": SAMPLE[-2:]}).json()
        open_session = out["results"][-1]["session_id"]
        server.settle()
        assert open_session not in out["sessions_closed"] and server.queued == []
        with server.at(NOW + timedelta(hours=1)):  # idle on both clocks an hour later
            swept = client.post("/v1/maintenance/sweep").json()
        assert swept["status"] == "done" and swept["stats"]["closed_idle"] >= 1
        server.settle()
        assert ("tenant-o", open_session) in server.queued  # the sweep queued its build


def test_metrics_count_what_the_requests_did(server: Server) -> None:
    def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = httpx.get(f"{server.url}/metrics").text
        return {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def grew(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    before = scrape()
    with client_for(server, "tenant-m") as client:
        _ingest_twice(client)  # 1 rejected (its batch refused), 3 accepted, then 3 duplicates
        client.post("/v1/context", json={"query": "allergies?", "user_id": "maya"})
        client.post("/v1/search", json={"query": "allergies?", "user_id": "maya"})
        client.post("/v1/search", json={"query": "allergies?", "user_id": "maya"})
        client.post("/v1/maintenance/merge")
        client.post("/v1/maintenance/merge")
        tea = {"role": "user", "content": "I like green tea."}
        added = {"messages": [tea, tea], "user_id": "maya"}
        assert client.post("/v3/memories/add/", json=added).status_code == 200
        # rolled back whole: its good message is not counted as accepted
        failed = {"messages": [tea, {"role": "user", "content": ""}], "user_id": "maya"}
        assert client.post("/v3/memories/add/", json=failed).status_code == 422
    after = scrape()

    assert grew("memledger_events_ingested_total", status="accepted") == 3 + 2
    # the bad event of the refused batch, and the empty message of the refused add
    assert grew("memledger_events_ingested_total", status="rejected") == 2
    assert grew("memledger_events_ingested_total", status="duplicate") == 3
    assert grew("memledger_retrieval_seconds_count", route="context") == 1
    assert grew("memledger_retrieval_seconds_count", route="search") == 2
    assert grew("memledger_retrieval_seconds_bucket", route="search", le="+Inf") == 2
    assert grew("memledger_job_runs_total", job="merge", status="done") == 1
    assert grew("memledger_job_runs_total", job="merge", status="taken") == 1


def test_metrics_answer_503_while_redis_is_unreachable(server: Server, tmp_path: Any) -> None:
    with shared_metrics(f"unix://{tmp_path}/no-redis.sock") as metrics:
        app = create_app(dataclasses.replace(server.state, metrics=metrics))
        with TestClient(app) as client:
            r = client.get("/metrics")
    assert r.status_code == 503 and "metrics store unreachable" in r.text
