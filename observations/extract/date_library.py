"""Date phrases read by dateparser, against a base day that is always passed in.

Each call builds its own ``DateDataParser`` with its own settings (nothing is shared
between calls, and dateparser's module-wide defaults are never changed), with:

* ``RELATIVE_BASE``: the base day at midnight, as a naive local wall time, so
  "yesterday", "next Friday" and a year-less "3 March" are counted from it;
* ``TIMEZONE = "UTC"`` and naive results: the base already is the speaker's local time,
  so dateparser never asks the machine for its zone;
* ``PREFER_DAY_OF_MONTH`` and ``PREFER_MONTH_OF_YEAR`` = ``"first"``: a month or a year
  is read as its first day (its precision comes from dateparser's ``period``), never with
  the day or month of the clock;
* only the ``relative-time`` and ``absolute-time`` parsers (no timestamps).

dateparser takes about a millisecond a phrase, so answers are cached, and a caller that
knows what a phrase's answer depends on says so with ``moves_with``:

* ``"day"``: whole days and weeks from the base ("yesterday", "three weeks ago", "last
  Friday"): the answer depends on the base's weekday only, and moves with the base by
  whole weeks; it is read from the base's weekday in one fixed week and moved back;
* ``"month"``: whole months ("next month", "two months ago"): read from the base's
  month's first day;
* ``"year"``: whole years ("last year", "a decade ago"): read from the base's 1 January;
* ``"nothing"``: a date with its year ("3 March 2021", "March 2024"): read from one fixed
  day.

So one reading serves every base of a weekday, a month, a year, or every base at all.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import Any, Literal

from dateparser.date import DateDataParser

from observations.extract.date_periods import (
    Period,
    day_range,
    month_range,
    week_range,
    year_range,
)

Prefer = Literal["past", "future"]
MovesWith = Literal["day", "month", "year", "nothing"]

_SETTINGS: dict[str, Any] = {
    "TIMEZONE": "UTC",
    "RETURN_AS_TIMEZONE_AWARE": False,
    "PREFER_DAY_OF_MONTH": "first",
    "PREFER_MONTH_OF_YEAR": "first",
    "PARSERS": ["relative-time", "absolute-time"],
}
_REFERENCE_MONDAY = date(2001, 1, 1)  # the fixed week "day" readings are made in


def parse(
    query: str,
    base: date,
    prefer: Prefer | None = None,
    order: str | None = None,
    *,
    moves_with: MovesWith | None = None,
) -> Period | None:
    """The period dateparser reads in ``query`` from ``base``: with ``prefer``, a date
    missing its year or week is taken in the past or the future of ``base`` (else in
    its current period); ``order`` ("DMY", "MDY") fixes how numeric dates are read;
    ``moves_with`` lets one reading serve many bases (see the module note)."""
    if moves_with == "month":
        return _cached(query, base.replace(day=1), prefer, order)
    if moves_with == "year":
        return _cached(query, date(base.year, 1, 1), prefer, order)
    if moves_with == "nothing":
        return _cached(query, _REFERENCE_MONDAY, prefer, order)
    if moves_with != "day":
        return _cached(query, base, prefer, order)
    reference = _REFERENCE_MONDAY + timedelta(days=base.weekday())
    found = _cached(query, reference, prefer, order)
    if found is None or found[2] not in ("day", "week"):
        return _cached(query, base, prefer, order)
    moved = base - reference
    return found[0] + moved, found[1] + moved, found[2]


def clear_cache() -> None:
    _cached.cache_clear()


def read(
    query: str, base: date, prefer: Prefer | None = None, order: str | None = None
) -> Period | None:
    """One reading by dateparser, uncached: what :func:`parse` is made of."""
    settings = {
        **_SETTINGS,
        "RELATIVE_BASE": datetime.combine(base, time()),
        "PREFER_DATES_FROM": prefer or "current_period",
    }
    if order is not None:
        settings["DATE_ORDER"] = order
    parser = DateDataParser(languages=["en"], settings=settings, try_previous_locales=False)
    data = parser.get_date_data(query)
    if data.date_obj is None:
        return None
    day = data.date_obj.date()
    if data.period == "week":
        return week_range(day)
    if data.period == "month":
        return month_range(day.year, day.month)
    if data.period == "year":
        return year_range(day.year)
    return day_range(day)


_cached = lru_cache(maxsize=8192)(read)
