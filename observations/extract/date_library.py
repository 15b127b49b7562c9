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

Results are cached by (query, base day, preference, order): the answer is a function of
those alone.
"""

from __future__ import annotations

from datetime import date, datetime, time
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

_SETTINGS: dict[str, Any] = {
    "TIMEZONE": "UTC",
    "RETURN_AS_TIMEZONE_AWARE": False,
    "PREFER_DAY_OF_MONTH": "first",
    "PREFER_MONTH_OF_YEAR": "first",
    "PARSERS": ["relative-time", "absolute-time"],
}


@lru_cache(maxsize=8192)
def parse(
    query: str, base: date, prefer: Prefer | None = None, order: str | None = None
) -> Period | None:
    """The period dateparser reads in ``query`` from ``base``: with ``prefer``, a date
    missing its year or week is taken in the past or the future of ``base`` (else in
    its current period); ``order`` ("DMY", "MDY") fixes how numeric dates are read."""
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
