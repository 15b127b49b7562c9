"""What the use cases need from the process that runs them (the API's state satisfies it),
and how they leave work for after the caller's transaction commits."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from observations.embed import Embedder
from ops.metrics import SharedMetrics
from ops.settings import Settings
from retrieval.recent import RecentWindow

# Runs a function with its arguments once the caller's transaction has committed (the
# API's background tasks: after the response); a request that fails runs none of them.
Defer = Callable[..., Any]


class Deps(Protocol):
    settings: Settings
    embedder: Embedder
    metrics: SharedMetrics
    window: RecentWindow | None
    appending: threading.Lock  # one batch at a time validates and appends, per process

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def enqueue_projection(self) -> Callable[[str], object]: ...

    def queue_builds(self, tenant_id: str, session_ids: Sequence[int]) -> int: ...
