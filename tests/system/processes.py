"""A ``memledger`` command running as a child process, its stdout and stderr in files; and
what such processes counted in the deployment's metrics."""

from __future__ import annotations

import json
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from ops.metrics import SharedMetrics


@dataclass
class CliProcess:
    proc: subprocess.Popen[bytes]
    out: Path
    err: Path

    def logs(self) -> list[dict[str, Any]]:
        """The JSON log lines it wrote to stderr so far."""
        found = []
        for line in self.err.read_text("utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                found.append(record)
        return found

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM, wait, and SIGKILL only if it does not exit; its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def counted(redis_url: str, name: str) -> dict[tuple[str, ...], float]:
    """The samples of ``name`` in the deployment's metrics (in Redis), by label values."""
    client = redis.Redis.from_url(redis_url)
    try:
        return {
            tuple(s.labels.values()): s.value
            for family in SharedMetrics(client).registry.collect()
            for s in family.samples
            if s.name == name
        }
    finally:
        client.close()
