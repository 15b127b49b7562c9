"""examples/chat_loop.py against a served memledger and llama.cpp's server with the tiny
model (skipped, saying why, without them): what one conversation said is recalled in the
next."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.llama import llama_server
from tests.system.live_api import Server

EXAMPLE = Path(__file__).parents[2] / "examples" / "chat_loop.py"


def chat(server: Server, llm: str, key: str, *args: str) -> str:
    command = [sys.executable, str(EXAMPLE), "--memledger", server.url, "--key", key]
    command += ["--llm", llm, "--model", "tiny", "--user", "maya", "--agent", "atlas", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_chat_loop_recalls_what_an_earlier_conversation_said(
    server: Server, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with llama_server(tmp_path_factory.mktemp("llama")) as llm:
        key = server.key("chat-example")
        said = "I moved to Porto last week and I love sardines."
        first = chat(
            server, llm, key, "--say", said, "--close", "--at", "2025-10-01T18:00:00+00:00"
        )
        assert "atlas> " in first
        stored = server.rows(
            "SELECT role FROM memory_session_events WHERE tenant_id = 'chat-example' ORDER BY id"
        )
        assert [r["role"] for r in stored] == ["user", "assistant"]
        assert server.build_queued() == 1
        second = chat(server, llm, key, "--say", "What food do I like?", "--show-context",
                      "--at", "2025-10-06T18:00:00+00:00")  # fmt: skip
        recalled = second.split("--- recalled for", 1)[1].split("\n---", 1)[0]
        assert "sardines" in recalled and "Porto" in recalled
        assert "atlas> " in second
