"""The session ledger and the shared kernel (connections, SQL files, scope, errors)."""

from ledger.db import apply_schema, connect, make_pool, tenant_scope
from ledger.errors import (
    InvalidArgument,
    InvalidEvent,
    InvalidScope,
    MemledgerError,
    SessionNotFound,
)
from ledger.events import EventIn, Limits
from ledger.migrations import DatabasePredatesMigrations
from ledger.store import (
    AppendResult,
    EventOutcome,
    append,
    append_batches,
    close_session,
    close_sessions,
    events_after,
    get_session,
    list_sessions,
    read_session,
    sweep_idle,
)

__all__ = [
    "AppendResult",
    "DatabasePredatesMigrations",
    "EventIn",
    "EventOutcome",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidScope",
    "Limits",
    "MemledgerError",
    "SessionNotFound",
    "append",
    "append_batches",
    "apply_schema",
    "close_session",
    "close_sessions",
    "connect",
    "events_after",
    "get_session",
    "list_sessions",
    "make_pool",
    "read_session",
    "sweep_idle",
    "tenant_scope",
]
