"""Named SQL queries loaded from a package's ``queries.sql``.

A file holds blocks introduced by ``-- name: <query_name>`` lines; each block is one
statement with ``%(param)s`` placeholders. Loading happens once per package.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import LiteralString, cast

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def parse_queries(text: str) -> dict[str, LiteralString]:
    """Split a queries file into ``{name: statement}``; duplicate names are an error."""
    parts = _NAME.split(text)
    queries: dict[str, LiteralString] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        queries[name] = cast(LiteralString, body.strip().rstrip(";"))
    return queries


def load_queries(package: str, filename: str = "queries.sql") -> dict[str, LiteralString]:
    """Load the named queries shipped inside ``package``."""
    return parse_queries(resources.files(package).joinpath(filename).read_text("utf-8"))
