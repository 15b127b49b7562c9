"""The sample transcript shipped with memledger (``memledger run`` ingests it by default)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def sample_path() -> Path:
    return Path(str(resources.files("ops.samples").joinpath("sample.jsonl")))
