"""Tenant scope: the id every query is filtered by."""

from __future__ import annotations

import re

from ledger.errors import InvalidScope

_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")


def check_id(value: object, what: str) -> str:
    """Return ``value`` if it is a usable tenant/user/agent/channel id, else raise."""
    if not isinstance(value, str) or not _ID.match(value) or value != value.strip():
        raise InvalidScope(what=what, value=value)
    return value
