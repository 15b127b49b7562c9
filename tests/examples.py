"""How many examples a property test draws: its own number under ``make test``, a tenth of
it (at least 10) under ``make test-fast`` (``TEST_EXAMPLES_SCALE=0.1``), the quick
loop while editing; CI runs the full number."""

from __future__ import annotations

import os

SCALE = float(os.environ.get("TEST_EXAMPLES_SCALE", "1"))


def examples(n: int) -> int:
    return max(10, round(n * SCALE)) if SCALE != 1 else n
