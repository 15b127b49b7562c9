"""A ``memledger`` command running as a child process, its stdout and stderr in files."""

from __future__ import annotations

import json
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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
