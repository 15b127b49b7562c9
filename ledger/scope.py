"""Tenant scope: the id every query is filtered by."""

from __future__ import annotations

import re

from ledger.errors import InvalidScope

# 1-128 characters, no control characters, no surrounding whitespace (also published as
# the JSON-schema pattern of ids in the HTTP API). Whitespace is spelt out as the characters
# str.strip() removes (beyond the controls): `\s` means other sets in JSON Schema's
# (ECMA-262) and pydantic's (Rust) regular expressions than in Python's.
MAX_ID_LENGTH = 128
_CONTROL = r"\x00-\x1f\x7f"
_SPACE = r" \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
ID_PATTERN = rf"^[^{_CONTROL}{_SPACE}](?:[^{_CONTROL}]{{0,126}}[^{_CONTROL}{_SPACE}])?$"
# Python's `$` also matches before a last "\n": its own copy ends at the end itself (\Z,
# which ECMA-262 lacks)
ID = re.compile(ID_PATTERN.removesuffix("$") + r"\Z")


def usable_id(value: str) -> bool:
    """Whether ``value`` matches :data:`ID`; an ASCII id is checked without the regular
    expression, five times faster (printable ASCII is everything but the controls, and its
    only space is " ")."""
    if value.isascii():
        return (
            0 < len(value) <= MAX_ID_LENGTH
            and value.isprintable()
            and not value.startswith(" ")
            and not value.endswith(" ")
        )
    return ID.match(value) is not None


def check_id(value: object, what: str) -> str:
    """Return ``value`` if it is a usable tenant/user/agent/channel id, else raise."""
    if not isinstance(value, str) or not usable_id(value) or value != value.strip():
        raise InvalidScope(what=what, value=value)
    return value
