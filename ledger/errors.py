"""The one base error of memledger and the ledger's own errors.

Each error's docstring is its default message; keyword fields name the ids involved, so a
message says what failed, with which ids, and what to do next.
"""

from __future__ import annotations

from typing import Any


class MemledgerError(Exception):
    """memledger failed."""

    def __init__(self, message: str | None = None, **fields: Any) -> None:
        self.fields = fields
        base = message or (self.__doc__ or "").strip()
        detail = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        super().__init__(f"{base} ({detail})" if detail else base)


class InvalidEvent(MemledgerError):
    """An event was rejected: fix the named field and resend the batch; nothing was written."""

    def __init__(self, message: str | None = None, *, index: int, field: str, **fields: Any):
        self.index = index
        self.field = field
        self.reason = message or (self.__doc__ or "").strip()
        super().__init__(message, index=index, field=field, **fields)


class SessionNotFound(MemledgerError):
    """No such session for this tenant."""


class InvalidScope(MemledgerError):
    """A tenant/user/agent scope is malformed: ids must be non-empty printable strings."""


class InvalidArgument(MemledgerError):
    """A library call was given an argument it cannot use: the message names it."""


class ServiceError(MemledgerError):
    """An embedded service (PostgreSQL or Redis) could not be started or reached."""
