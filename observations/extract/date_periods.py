"""Calendar periods: what a date phrase resolves to, as (start, end, granularity).

Weeks start on Monday; a weekend is its week's Saturday and Sunday; seasons are
northern-hemisphere (winter = December–February, named by the year it starts in).
Adding months or years to a day that the target month lacks (31 March + 1 month,
29 February 2024 + 1 year) lands on that month's last day (30 April, 28 February 2025).
"""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from typing import Literal

Granularity = Literal["day", "weekend", "week", "month", "season", "year"]
Period = tuple[date, date, Granularity]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
SEASON_START = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def day_range(day: date) -> Period:
    return day, day, "day"


def week_range(day: date) -> Period:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6), "week"


def weekend_range(day: date) -> Period:
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
    return saturday, saturday + timedelta(days=1), "weekend"


def month_range(year: int, month: int) -> Period:
    last = calendar.monthrange(year, month)[1]
    return date(year, month, 1), date(year, month, last), "month"


def year_range(year: int) -> Period:
    return date(year, 1, 1), date(year, 12, 31), "year"


def season_range(name: str, year: int) -> Period:
    first = date(year, SEASON_START[name], 1)
    last = add_months(first, 2)
    return first, month_range(last.year, last.month)[1], "season"


def add_months(day: date, months: int) -> date:
    """``day`` moved by whole months, kept inside the target month (see the module note)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


DAYS_IN = {"week": 7, "fortnight": 14}  # units of several whole days


def shift(period: Period, amount: int, unit: str) -> Period | None:
    """``period`` moved by ``amount`` units (day, week, fortnight, month, year): a day stays a day,
    a month moved by months or years stays a month, a year moved by years stays a year;
    a shift finer than the period ("two days after March 2026") is ``None``."""
    start, _, granularity = period
    if granularity == "day":
        if unit == "day" or unit in DAYS_IN:
            return day_range(start + timedelta(days=amount * DAYS_IN.get(unit, 1)))
        return day_range(add_months(start, amount * (12 if unit == "year" else 1)))
    if granularity == "month" and unit in ("month", "year"):
        moved = add_months(start, amount * (12 if unit == "year" else 1))
        return month_range(moved.year, moved.month)
    if granularity == "year" and unit == "year":
        return year_range(start.year + amount)
    return None


def distance(period: Period, anchor: date) -> int:
    """Days between ``anchor`` and the nearest day of ``period`` (0 when inside it)."""
    start, end, _ = period
    if anchor < start:
        return (start - anchor).days
    return max(0, (anchor - end).days)
