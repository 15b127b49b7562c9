"""One ingest policy on every interface: the same batch of three chat turns, whose second
has a role memledger does not know, is refused whole — the bad item is named by its
position and field, and nothing of the batch is written — through ``POST /v1/events``,
the Mem0 ``add``, and ``memledger ingest``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from click.testing import CliRunner

from ledger.db import connect
from ops.cli import cli
from tests.system.live_api import NOW, Server
from tests.system.test_keys_cli import cli_env

TURNS = [
    ("user", "i'm vegetarian these days"),
    ("robot", "beep"),  # not a role: the batch's one bad item
    ("user", "and i moved to lyon last month"),
]
BAD_INDEX = 1


def events(channel: str) -> list[dict[str, object]]:
    return [
        {
            "external_id": f"{channel}-{i}",
            "channel_id": channel,
            "role": role,
            "actor_id": "maya" if role == "user" else "atlas",
            "content": content,
            "occurred_at": (NOW.replace(minute=i)).isoformat(),
        }
        for i, (role, content) in enumerate(TURNS)
    ]


def stored_events(db_url: str, tenant: str) -> int:
    with connect(db_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM memory_session_events WHERE tenant_id = %s", [tenant]
        ).fetchone()
    assert row is not None
    return int(row["n"])


def client_for(server: Server, tenant: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {server.key(tenant)}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def test_http_events_refuse_the_whole_batch_naming_the_bad_event(server: Server) -> None:
    with client_for(server, "policy-http") as client:
        r = client.post("/v1/events", json={"events": events("policy")})
    assert r.status_code == 422
    body = r.json()
    assert body["error"] == "BatchRejected"
    assert [(x["index"], x["field"]) for x in body["fields"]["rejected"]] == [(BAD_INDEX, "role")]
    assert stored_events(server.db_url, "policy-http") == 0


def test_mem0_add_refuses_the_whole_batch_naming_the_bad_message(server: Server) -> None:
    messages = [{"role": role, "content": content} for role, content in TURNS]
    with client_for(server, "policy-mem0") as client:
        r = client.post("/v3/memories/add/", json={"messages": messages, "user_id": "maya"})
    assert r.status_code == 422
    body = r.json()
    assert body["fields"]["field"] == f"messages.{BAD_INDEX}.role"
    assert body["detail"] == body["message"]  # where Mem0's clients read the reason
    assert stored_events(server.db_url, "policy-mem0") == 0


def test_cli_ingest_refuses_the_whole_batch_naming_the_bad_line(
    fresh_db_url: str, redis_url: str, tmp_path: Path
) -> None:
    transcript = tmp_path / "turns.jsonl"
    transcript.write_text("".join(json.dumps(e) + "\n" for e in events("policy")))
    runner = CliRunner(env=cli_env(fresh_db_url, redis_url, tmp_path, EMBEDDER="hash"))
    out = runner.invoke(cli, ["--tenant", "policy-cli", "ingest", str(transcript)])
    assert out.exit_code == 1, out.output
    assert f"line {BAD_INDEX + 1}: " in out.output and "[field role]" in out.output
    assert stored_events(fresh_db_url, "policy-cli") == 0
