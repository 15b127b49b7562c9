"""Tenant scope: the id every query is filtered by."""

from __future__ import annotations

import re

from ledger.errors import InvalidScope

# 1-128 characters, no control characters, no surrounding whitespace (also published as
# the JSON-schema pattern of ids in the HTTP API).
MAX_ID_LENGTH = 128
ID_PATTERN = r"^[^\x00-\x1f\x7f\s](?:[^\x00-\x1f\x7f]{0,126}[^\x00-\x1f\x7f\s])?$"
ID = re.compile(ID_PATTERN)


def check_id(value: object, what: str) -> str:
    """Return ``value`` if it is a usable tenant/user/agent/channel id, else raise."""
    if not isinstance(value, str) or not ID.match(value) or value != value.strip():
        raise InvalidScope(what=what, value=value)
    return value
