"""The composition root: settings → services → schema → a connection."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

from ledger.db import Conn, apply_schema, connect
from ops.services import ServiceUrls, running_services
from ops.settings import Settings


@dataclass(frozen=True, slots=True)
class Runtime:
    settings: Settings
    urls: ServiceUrls
    conn: Conn  # autocommit: each library call's transaction commits on its own


@contextmanager
def open_runtime(settings: Settings, *, init_schema: bool = True) -> Iterator[Runtime]:
    """Start or reach the services, apply the schema, and hold one connection."""
    services = running_services(settings.home, settings.database_url, settings.redis_url)
    with services as urls, connect(urls.database_url, autocommit=True) as conn:
        if init_schema:
            apply_schema(conn)
        yield Runtime(settings, urls, conn)


def wall_clock() -> datetime:
    """The current time: read only by entrypoints, passed to the library as ``now``."""
    return datetime.now(UTC)
