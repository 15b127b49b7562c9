"""The one base error of memledger, its families, and the ledger's own errors.

Each error's docstring is its default message; keyword fields name the ids involved, so a
message says what failed, with which ids, and what to do next.

Every error a caller can act on belongs to one family, and each interface maps the family
once (the HTTP API: :class:`NotFound` 404, :class:`InvalidInput` 422, :class:`Conflict`
409, :class:`Unavailable` 503 with ``Retry-After``); an error outside the families is the
server's own (500).
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


class NotFound(MemledgerError):
    """Nothing of that kind with that id for this tenant."""


class InvalidInput(MemledgerError):
    """The input cannot be used as given: the message names what was wrong."""


class Conflict(MemledgerError):
    """The input is valid, but the state it acts on does not allow it now."""


class Unavailable(MemledgerError):
    """A service memledger depends on cannot answer now: retry later."""


class InvalidEvent(InvalidInput):
    """An event was rejected: fix the named field and resend the batch; nothing was written."""

    def __init__(self, message: str | None = None, *, index: int, field: str, **fields: Any):
        self.index = index
        self.field = field
        self.reason = message or (self.__doc__ or "").strip()
        super().__init__(message, index=index, field=field, **fields)


class SessionNotFound(NotFound):
    """No such session for this tenant."""


class InvalidScope(InvalidInput):
    """A tenant/user/agent scope is malformed: ids must be non-empty printable strings."""


class InvalidArgument(InvalidInput):
    """A library call was given an argument it cannot use: the message names it."""


class ServiceError(Unavailable):
    """An embedded service (PostgreSQL or Redis) could not be started or reached."""


class EntryNotFound(NotFound):
    """No such memory entry for this tenant (or, for an edit, it is no longer current):
    check the id and the tenant."""
