"""``ledger.jsontext.dumps``: orjson's speed, the standard library's reach."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ledger.jsontext import dumps


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": [value]}
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"text": "naïve café 東京 🙂", "n": 1, "f": 0.1, "none": None, "ok": True},
        {"past 64 bits": 2**70, "negative": -(2**64)},  # orjson refuses these
        _nested(300),  # past orjson's 255 levels
        {1: "a non-string key"},  # orjson refuses it without an option
    ],
    ids=["plain", "big_ints", "deep", "int_key"],
)
def test_dumps_writes_compact_json_that_reads_back_as_the_standard_library_writes_it(
    value: Any,
) -> None:
    text = dumps(value)
    assert json.loads(text) == json.loads(json.dumps(value))
    assert ": " not in text and ", " not in text  # compact


def test_dumps_keeps_non_ascii_characters_as_they_are() -> None:
    assert dumps({"k": "café 🙂"}) == '{"k":"café 🙂"}'
