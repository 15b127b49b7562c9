"""The periods a query names ("in July", "on 3 July 2023", "last year"), resolved against
the time the query is asked, and whether an entry is dated within one of them.

An entry is dated by when it became valid (``valid_from``: when it was said) and, for a
statement about another day, by the day it is about (the ``valid_at`` field: "Maya ran a
half marathon on 14 May 2023", said on 20 May). Either one inside a named period counts.
Phrases are resolved as the extractor resolves them in chat (see
:mod:`observations.extract.dates`): "in July", asked in November, is the July before.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from datetime import date, datetime

from observations.extract.dates import find_dates
from retrieval.types import Candidate

Period = tuple[date, date]  # first and last day, inclusive


def query_periods(query: str, now: datetime) -> tuple[Period, ...]:
    """The periods ``query`` names, each as its first and last day."""
    return tuple((found.start, found.end) for found in find_dates(query, now))


def dated_within(candidate: Candidate, periods: Sequence[Period]) -> bool:
    """Whether the entry was said, or is about a day, within one of ``periods``."""
    if not periods:
        return False
    days = [candidate.valid_from.date()]
    about = candidate.fields.get("valid_at")
    if isinstance(about, str):
        with suppress(ValueError):  # a malformed field dates nothing
            days.append(date.fromisoformat(about[:10]))
    return any(first <= day <= last for first, last in periods for day in days)
