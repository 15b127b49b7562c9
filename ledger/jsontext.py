"""Compact JSON text for PostgreSQL's json parameters and Redis payloads.

orjson writes it several times faster than the standard library; the standard library
writes what orjson refuses (integers past 64 bits, nesting past 255 levels, non-string
keys), so any value the standard library can encode still goes through. Both keep
non-ASCII characters as they are and write NaN nowhere a caller lets one in (event
metadata is checked for NaN at validation).
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: Any) -> str:
    """``value`` as compact JSON text."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
