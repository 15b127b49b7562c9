"""Relative dates, by table: each expression against a fixed event time at the speaker's
own offset, across month and year ends and leap days, in both tenses.

A row is (text, event time, label, ISO, precision). The text holds exactly one date
phrase; the anchor's local day (not its UTC day) is what "yesterday" counts from.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from types import FrameType
from typing import Any

import dateparser.conf
import dateparser.utils.strptime
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from observations.extract import date_library
from observations.extract.dates import ResolvedDate, find_dates
from tests.examples import examples


def _at(iso: str) -> datetime:
    return datetime.fromisoformat(iso)


# Local day, weekday, and the UTC day where it differs.
NYE = _at("2025-12-31T23:30:00-05:00")  # Wed 31 Dec 2025 (UTC: Thu 1 Jan 2026)
NEW_YEAR = _at("2026-01-01T00:15:00+05:30")  # Thu 1 Jan 2026 (UTC: Wed 31 Dec 2025)
LEAP = _at("2024-02-29T21:00:00-08:00")  # Thu 29 Feb 2024 (UTC: Fri 1 Mar)
TONGA = _at("2024-03-01T06:00:00+13:00")  # Fri 1 Mar 2024 (UTC: Thu 29 Feb)
JAN_END = _at("2025-01-31T10:00:00+00:00")  # Fri 31 Jan 2025
LEAP_2028 = _at("2028-03-01T08:00:00+13:00")  # Wed 1 Mar 2028 (UTC: Tue 29 Feb)
JUNE = _at("2025-06-15T12:00:00+05:30")  # Sun 15 Jun 2025
MONDAY = _at("2025-11-17T09:00:00-08:00")  # Mon 17 Nov 2025
NYE_2027 = _at("2027-12-31T22:00:00-08:00")  # Fri 31 Dec 2027 (UTC: Sat 1 Jan 2028)

TABLE = [
    # Wednesday 31 December 2025, 23:30 in New York: already 1 January in UTC.
    ("yesterday", NYE, "30 December 2025", "2025-12-30", "day"),
    ("today", NYE, "31 December 2025", "2025-12-31", "day"),
    ("tomorrow", NYE, "1 January 2026", "2026-01-01", "day"),
    ("tonight", NYE, "31 December 2025", "2025-12-31", "day"),
    ("the day before yesterday", NYE, "29 December 2025", "2025-12-29", "day"),
    ("the day after tomorrow", NYE, "2 January 2026", "2026-01-02", "day"),
    ("three days ago", NYE, "28 December 2025", "2025-12-28", "day"),
    ("3 days ago", NYE, "28 December 2025", "2025-12-28", "day"),
    ("ten days ago", NYE, "21 December 2025", "2025-12-21", "day"),
    ("a couple of days ago", NYE, "29 December 2025", "2025-12-29", "day"),
    ("two weeks ago", NYE, "17 December 2025", "2025-12-17", "day"),
    ("a week from today", NYE, "7 January 2026", "2026-01-07", "day"),
    ("in two weeks", NYE, "14 January 2026", "2026-01-14", "day"),
    ("next month", NYE, "January 2026", "2026-01", "month"),
    ("last month", NYE, "November 2025", "2025-11", "month"),
    ("next month on the 14th", NYE, "14 January 2026", "2026-01-14", "day"),
    ("we fly next month, on the 14th", NYE, "14 January 2026", "2026-01-14", "day"),
    ("the first of next month", NYE, "1 January 2026", "2026-01-01", "day"),
    ("next year", NYE, "2026", "2026", "year"),
    ("last year", NYE, "2024", "2024", "year"),
    ("next Friday", NYE, "2 January 2026", "2026-01-02", "day"),
    ("last Friday", NYE, "26 December 2025", "2025-12-26", "day"),
    ("next weekend", NYE, "the weekend of 10-11 January 2026", "2026-01-10/2026-01-11", "weekend"),
    ("this weekend", NYE, "the weekend of 3-4 January 2026", "2026-01-03/2026-01-04", "weekend"),
    ("last weekend", NYE, "the weekend of 27-28 December 2025", "2025-12-27/2025-12-28", "weekend"),
    ("two weekends ago", NYE, "the weekend of 20-21 December 2025", "2025-12-20/2025-12-21",
     "weekend"),
    ("two saturdays ago", MONDAY, "8 November 2025", "2025-11-08", "day"),
    ("three years ago this month", MONDAY, "November 2022", "2022-11", "month"),
    ("2 years ago today", MONDAY, "17 November 2023", "2023-11-17", "day"),
    ("3 mondays ago", MONDAY, "27 October 2025", "2025-10-27", "day"),
    ("a month ago", NYE, "November 2025", "2025-11", "month"),
    ("two years ago", NYE, "2023", "2023", "year"),
    ("in March 2026", NYE, "March 2026", "2026-03", "month"),
    ("in 2019", NYE, "2019", "2019", "year"),
    ("the day before 12 May", NYE, "11 May 2026", "2026-05-11", "day"),
    ("last March", NYE, "March 2025", "2025-03", "month"),
    ("next March", NYE, "March 2026", "2026-03", "month"),
    ("last winter", NYE, "winter 2024-2025", "2024-12-01/2025-02-28", "season"),
    ("the 3rd of March", NYE, "3 March 2026", "2026-03-03", "day"),
    ("two days after March 3rd", NYE, "5 March 2026", "2026-03-05", "day"),
    ("i moved here in march 2024", NYE, "March 2024", "2024-03", "month"),
    # Thursday 1 January 2026, 00:15 in Kolkata: still 31 December in UTC.
    ("yesterday", NEW_YEAR, "31 December 2025", "2025-12-31", "day"),
    ("today", NEW_YEAR, "1 January 2026", "2026-01-01", "day"),
    ("three days ago", NEW_YEAR, "29 December 2025", "2025-12-29", "day"),
    ("two weeks ago", NEW_YEAR, "18 December 2025", "2025-12-18", "day"),
    ("a week ago", NEW_YEAR, "25 December 2025", "2025-12-25", "day"),
    ("last month", NEW_YEAR, "December 2025", "2025-12", "month"),
    ("last year", NEW_YEAR, "2025", "2025", "year"),
    ("this year", NEW_YEAR, "2026", "2026", "year"),
    ("next month", NEW_YEAR, "February 2026", "2026-02", "month"),
    ("the first of next month", NEW_YEAR, "1 February 2026", "2026-02-01", "day"),
    ("next month on the 14th", NEW_YEAR, "14 February 2026", "2026-02-14", "day"),
    ("my flight is on the 30th", NEW_YEAR, "30 January 2026", "2026-01-30", "day"),  # set: ahead
    ("signing up for the marathon in september", JAN_END, "September 2025", "2025-09", "month"),
    ("loved the concert in september", JAN_END, "September 2024", "2024-09", "month"),
    ("the party was on the 30th", NEW_YEAR, "30 December 2025", "2025-12-30", "day"),
    ("a month ago", NEW_YEAR, "December 2025", "2025-12", "month"),
    ("in two months", NEW_YEAR, "March 2026", "2026-03", "month"),
    ("last Wednesday", NEW_YEAR, "31 December 2025", "2025-12-31", "day"),
    ("next Monday", NEW_YEAR, "5 January 2026", "2026-01-05", "day"),
    ("I saw her on Monday.", NEW_YEAR, "29 December 2025", "2025-12-29", "day"),
    ("We'll meet on Monday.", NEW_YEAR, "5 January 2026", "2026-01-05", "day"),
    ("I'm flying out on Monday.", NEW_YEAR, "5 January 2026", "2026-01-05", "day"),
    ("i went there in december", NEW_YEAR, "December 2025", "2025-12", "month"),
    ("i'll go there in december", NEW_YEAR, "December 2026", "2026-12", "month"),
    ("in December", NEW_YEAR, "December 2025", "2025-12", "month"),
    ("last December", NEW_YEAR, "December 2025", "2025-12", "month"),
    ("this weekend", NEW_YEAR, "the weekend of 3-4 January 2026", "2026-01-03/2026-01-04",
     "weekend"),
    ("the day before yesterday", NEW_YEAR, "30 December 2025", "2025-12-30", "day"),
    # Thursday 29 February 2024, 21:00 in Los Angeles: already 1 March in UTC.
    ("today", LEAP, "29 February 2024", "2024-02-29", "day"),
    ("yesterday", LEAP, "28 February 2024", "2024-02-28", "day"),
    ("tomorrow", LEAP, "1 March 2024", "2024-03-01", "day"),
    ("a year ago", LEAP, "2023", "2023", "year"),
    ("in a year", LEAP, "2025", "2025", "year"),
    ("a year from today", LEAP, "28 February 2025", "2025-02-28", "day"),
    ("a month from today", LEAP, "29 March 2024", "2024-03-29", "day"),
    ("a month ago", LEAP, "January 2024", "2024-01", "month"),
    ("next month", LEAP, "March 2024", "2024-03", "month"),
    ("last month", LEAP, "January 2024", "2024-01", "month"),
    ("the first of next month", LEAP, "1 March 2024", "2024-03-01", "day"),
    ("the day before 1 March 2024", LEAP, "29 February 2024", "2024-02-29", "day"),
    ("the day after 28 February 2024", LEAP, "29 February 2024", "2024-02-29", "day"),
    ("the day after 28 February 2025", LEAP, "1 March 2025", "2025-03-01", "day"),
    ("a week ago", LEAP, "22 February 2024", "2024-02-22", "day"),
    ("in two weeks", LEAP, "14 March 2024", "2024-03-14", "day"),
    ("four years ago", LEAP, "2020", "2020", "year"),
    ("this weekend", LEAP, "the weekend of 2-3 March 2024", "2024-03-02/2024-03-03", "weekend"),
    ("last weekend", LEAP, "the weekend of 24-25 February 2024", "2024-02-24/2024-02-25",
     "weekend"),
    ("next Friday", LEAP, "1 March 2024", "2024-03-01", "day"),
    ("last Thursday", LEAP, "22 February 2024", "2024-02-22", "day"),
    ("the 29th of February", LEAP, "29 February 2024", "2024-02-29", "day"),
    ("a year after 29 February 2024", LEAP, "28 February 2025", "2025-02-28", "day"),
    ("four years after 29 February 2024", LEAP, "29 February 2028", "2028-02-29", "day"),
    ("a day after 29 February 2024", LEAP, "1 March 2024", "2024-03-01", "day"),
    ("two days ago", LEAP, "27 February 2024", "2024-02-27", "day"),
    ("last winter", LEAP, "winter 2022-2023", "2022-12-01/2023-02-28", "season"),
    ("this winter", LEAP, "winter 2023-2024", "2023-12-01/2024-02-29", "season"),
    # Friday 1 March 2024, 06:00 in Tonga (+13:00): still 29 February in UTC.
    ("yesterday", TONGA, "29 February 2024", "2024-02-29", "day"),
    ("two days ago", TONGA, "28 February 2024", "2024-02-28", "day"),
    ("last month", TONGA, "February 2024", "2024-02", "month"),
    ("a month ago", TONGA, "February 2024", "2024-02", "month"),
    ("last year", TONGA, "2023", "2023", "year"),
    ("tomorrow", TONGA, "2 March 2024", "2024-03-02", "day"),
    ("I saw him on Thursday", TONGA, "29 February 2024", "2024-02-29", "day"),
    ("we'll see him on Thursday", TONGA, "7 March 2024", "2024-03-07", "day"),
    ("last Thursday", TONGA, "29 February 2024", "2024-02-29", "day"),
    ("this Thursday", TONGA, "7 March 2024", "2024-03-07", "day"),
    ("I was there this Thursday", TONGA, "29 February 2024", "2024-02-29", "day"),
    ("in a week", TONGA, "8 March 2024", "2024-03-08", "day"),
    ("a week from tomorrow", TONGA, "9 March 2024", "2024-03-09", "day"),
    ("the 29th of February", TONGA, "29 February 2024", "2024-02-29", "day"),
    ("we'll celebrate on 29 February", TONGA, "29 February 2028", "2028-02-29", "day"),
    # Friday 31 January 2025, UTC.
    ("a month from today", JAN_END, "28 February 2025", "2025-02-28", "day"),
    ("in a month", JAN_END, "February 2025", "2025-02", "month"),
    ("next month", JAN_END, "February 2025", "2025-02", "month"),
    ("last month", JAN_END, "December 2024", "2024-12", "month"),
    ("three weeks ago", JAN_END, "10 January 2025", "2025-01-10", "day"),
    ("the day after tomorrow", JAN_END, "2 February 2025", "2025-02-02", "day"),
    ("next Monday", JAN_END, "3 February 2025", "2025-02-03", "day"),
    ("last Sunday", JAN_END, "26 January 2025", "2025-01-26", "day"),
    ("a couple of weeks ago", JAN_END, "17 January 2025", "2025-01-17", "day"),
    ("in 2 days", JAN_END, "2 February 2025", "2025-02-02", "day"),
    ("March 3rd", JAN_END, "3 March 2025", "2025-03-03", "day"),
    ("in June 2024", JAN_END, "June 2024", "2024-06", "month"),
    ("the first of February", JAN_END, "1 February 2025", "2025-02-01", "day"),
    ("the first of next month", JAN_END, "1 February 2025", "2025-02-01", "day"),
    ("two months ago", JAN_END, "November 2024", "2024-11", "month"),
    ("in three months", JAN_END, "April 2025", "2025-04", "month"),
    # Wednesday 1 March 2028, 08:00 in Tonga: still 29 February in UTC.
    ("yesterday", LEAP_2028, "29 February 2028", "2028-02-29", "day"),
    ("the day before yesterday", LEAP_2028, "28 February 2028", "2028-02-28", "day"),
    ("a year ago", LEAP_2028, "2027", "2027", "year"),
    ("last month", LEAP_2028, "February 2028", "2028-02", "month"),
    ("a week ago", LEAP_2028, "23 February 2028", "2028-02-23", "day"),
    ("last Tuesday", LEAP_2028, "29 February 2028", "2028-02-29", "day"),
    ("the day before 1 March 2028", LEAP_2028, "29 February 2028", "2028-02-29", "day"),
    ("a year before 29 February 2028", LEAP_2028, "28 February 2027", "2027-02-28", "day"),
    ("a year after 28 February 2027", LEAP_2028, "28 February 2028", "2028-02-28", "day"),
    ("on 29 February", LEAP_2028, "29 February 2028", "2028-02-29", "day"),
    # Sunday 15 June 2025, noon in Kolkata.
    ("this weekend", JUNE, "the weekend of 14-15 June 2025", "2025-06-14/2025-06-15", "weekend"),
    ("last weekend", JUNE, "the weekend of 7-8 June 2025", "2025-06-07/2025-06-08", "weekend"),
    ("next weekend", JUNE, "the weekend of 21-22 June 2025", "2025-06-21/2025-06-22", "weekend"),
    ("next Sunday", JUNE, "22 June 2025", "2025-06-22", "day"),
    ("last Sunday", JUNE, "8 June 2025", "2025-06-08", "day"),
    ("this Sunday", JUNE, "15 June 2025", "2025-06-15", "day"),
    ("I saw her on Sunday", JUNE, "8 June 2025", "2025-06-08", "day"),
    ("We're going hiking on Saturday", JUNE, "21 June 2025", "2025-06-21", "day"),
    ("I went hiking on Saturday", JUNE, "14 June 2025", "2025-06-14", "day"),
    ("last summer", JUNE, "summer 2024", "2024-06-01/2024-08-31", "season"),
    ("this summer", JUNE, "summer 2025", "2025-06-01/2025-08-31", "season"),
    ("next summer", JUNE, "summer 2026", "2026-06-01/2026-08-31", "season"),
    ("in summer 2023", JUNE, "summer 2023", "2023-06-01/2023-08-31", "season"),
    ("in March", JUNE, "March 2025", "2025-03", "month"),
    ("i'll move in March", JUNE, "March 2026", "2026-03", "month"),
    ("in June", JUNE, "June 2025", "2025-06", "month"),
    ("we'll go in June", JUNE, "June 2025", "2025-06", "month"),
    ("i got here in July", JUNE, "July 2024", "2024-07", "month"),
    ("it was due on 14/6", JUNE, "14 June 2025", "2025-06-14", "day"),
    ("pay it by 6/30/2025", JUNE, "30 June 2025", "2025-06-30", "day"),
    ("two weeks from now", JUNE, "29 June 2025", "2025-06-29", "day"),
    # Monday 17 November 2025, 09:00 in San Francisco.
    ("last Monday", MONDAY, "10 November 2025", "2025-11-10", "day"),
    ("next Monday", MONDAY, "24 November 2025", "2025-11-24", "day"),
    ("this Monday", MONDAY, "17 November 2025", "2025-11-17", "day"),
    ("I saw her on Monday", MONDAY, "10 November 2025", "2025-11-10", "day"),
    ("we'll meet on Monday", MONDAY, "24 November 2025", "2025-11-24", "day"),
    ("this past Friday", MONDAY, "14 November 2025", "2025-11-14", "day"),
    ("this coming Friday", MONDAY, "21 November 2025", "2025-11-21", "day"),
    ("last week", MONDAY, "the week of 10 November 2025", "2025-11-10/2025-11-16", "week"),
    ("next week", MONDAY, "the week of 24 November 2025", "2025-11-24/2025-11-30", "week"),
    ("this week", MONDAY, "the week of 17 November 2025", "2025-11-17/2025-11-23", "week"),
    ("yesterday", MONDAY, "16 November 2025", "2025-11-16", "day"),
    ("the day before 12 May", MONDAY, "11 May 2026", "2026-05-11", "day"),
    ("we met the day before 12 May", MONDAY, "11 May 2025", "2025-05-11", "day"),
    ("in 2 weeks' time", MONDAY, "1 December 2025", "2025-12-01", "day"),
    ("a fortnight ago", MONDAY, "3 November 2025", "2025-11-03", "day"),
    ("twenty days ago", MONDAY, "28 October 2025", "2025-10-28", "day"),
    ("a decade ago", MONDAY, "2015", "2015", "year"),
    ("see you Thursday", MONDAY, "20 November 2025", "2025-11-20", "day"),
    ("i booked a table for Friday", MONDAY, "21 November 2025", "2025-11-21", "day"),
    ("my interview got moved to Friday", MONDAY, "21 November 2025", "2025-11-21", "day"),
    ("my interview is on Friday", MONDAY, "21 November 2025", "2025-11-21", "day"),
    ("my boss moved my review to Friday", MONDAY, "21 November 2025", "2025-11-21", "day"),
    ("my flight is a week from friday", MONDAY, "28 November 2025", "2025-11-28", "day"),
    ("she scheduled my surgery for january", MONDAY, "January 2026", "2026-01", "month"),
    ("the call was pushed back to Thursday", MONDAY, "20 November 2025", "2025-11-20", "day"),
    ("we got married on Saturday", MONDAY, "15 November 2025", "2025-11-15", "day"),
    # Friday 31 December 2027, 22:00 in San Francisco: already 1 January 2028 in UTC.
    ("yesterday", NYE_2027, "30 December 2027", "2027-12-30", "day"),
    ("tomorrow", NYE_2027, "1 January 2028", "2028-01-01", "day"),
    ("next year", NYE_2027, "2028", "2028", "year"),
    ("in two months", NYE_2027, "February 2028", "2028-02", "month"),
    ("two months from today", NYE_2027, "29 February 2028", "2028-02-29", "day"),
    ("a month ago", NYE_2027, "November 2027", "2027-11", "month"),
    ("next month on the 29th", NYE_2027, "29 January 2028", "2028-01-29", "day"),
    ("the 29th of next month", NYE_2027, "29 January 2028", "2028-01-29", "day"),
    ("we'll ski in February", NYE_2027, "February 2028", "2028-02", "month"),
    ("next February", NYE_2027, "February 2028", "2028-02", "month"),
    # a weekday beside a date without a year names the year, whatever the tense
    ("booked it on Friday 26 September", _at("2025-09-19T18:44:00+02:00"), "26 September 2025",
     "2025-09-26", "day"),
    ("we met on thursday, the 3rd of july", _at("2025-07-10T09:00:00+00:00"), "3 July 2025",
     "2025-07-03", "day"),
    ("see you on Tuesday 3 March", NYE, "3 March 2026", "2026-03-03", "day"),
    ("that was on Monday 29 December", NEW_YEAR, "29 December 2025", "2025-12-29", "day"),
    # the one after the next, said on a weekday (Monday 17 November 2025)
    ("camping is the weekend after next", MONDAY, "the weekend of 29-30 November 2025",
     "2025-11-29/2025-11-30", "weekend"),
    ("the week after next", MONDAY, "the week of 1 December 2025", "2025-12-01/2025-12-07",
     "week"),
    # a weekday of a month, by tense: a plan the next such day, the past the last
    ("my review is the second friday of june", MONDAY, "12 June 2026", "2026-06-12", "day"),
    ("it was the first monday of november", MONDAY, "3 November 2025", "2025-11-03", "day"),
    ("the parade is the last thursday in november", MONDAY, "27 November 2025", "2025-11-27",
     "day"),
    # what was booked or signed up for lies ahead of the booking
    ("booked a week in march", _at("2025-02-04T10:00:00+00:00"), "March 2025", "2025-03",
     "month"),
    ("signed up for the half in october", _at("2025-11-20T10:00:00+00:00"), "October 2026",
     "2026-10", "month"),
]  # fmt: skip


def _only(text: str, at: datetime) -> ResolvedDate:
    found = find_dates(text, at)
    assert len(found) == 1, (text, [f.text for f in found])
    return found[0]


def _start(iso: str) -> str:
    """The ISO day a period starts on: "2026-03" → "2026-03-01"."""
    first = iso.split("/")[0]
    return first + "-01" * (2 - first.count("-"))


def test_the_table_has_at_least_120_rows() -> None:
    assert len(TABLE) >= 120


@pytest.mark.parametrize(("text", "at", "label", "iso", "precision"), TABLE)
def test_resolves_against_the_speakers_local_day(
    text: str, at: datetime, label: str, iso: str, precision: str
) -> None:
    found = _only(text, at)
    assert (found.label, found.iso, found.precision) == (label, iso, precision)
    assert found.valid_at == _start(iso)


def test_the_same_instant_in_utc_is_another_day() -> None:
    """31 December 23:30 in New York is 1 January in UTC: "yesterday" is 30 December
    only at the offset the speaker wrote from."""
    assert _only("yesterday", NYE).iso == "2025-12-30"
    assert _only("yesterday", NYE.astimezone(UTC)).iso == "2025-12-31"


_CLOCKS = {datetime.now, datetime.today, datetime.utcnow, date.today, time.time, time.time_ns}
# The one read dateparser makes: strptime puts the current year in front of a day-only
# token ("29" read with "%d") so that it parses; only the day is kept.
_DISCARDED_READ = ("datetime.today", "dateparser.utils.strptime")


@contextmanager
def _clock_reads() -> Iterator[Counter[tuple[str, str]]]:
    """Every call to a clock while the block runs, by (function, calling module)."""
    reads: Counter[tuple[str, str]] = Counter()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and arg in _CLOCKS:
            reads[(arg.__qualname__, frame.f_globals.get("__name__", "?"))] += 1

    sys.setprofile(hook)
    try:
        yield reads
    finally:
        sys.setprofile(None)


def _resolve_table() -> list[tuple[str, str, str]]:
    date_library.clear_cache()  # every phrase through dateparser again
    found = [_only(text, at) for text, at, *_ in TABLE]
    return [(f.label, f.iso, f.precision) for f in found]


def test_resolution_reads_no_clock_but_a_year_dateparser_discards() -> None:
    with _clock_reads() as reads:
        _resolve_table()
    assert set(reads) <= {_DISCARDED_READ}, reads


def test_the_table_resolves_the_same_whatever_the_clock_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one clock read dateparser makes is pointed at 1901 (no leap year, a century
    before any anchor): every row resolves as before."""

    class Wrong(datetime):
        @classmethod
        def today(cls) -> Wrong:
            return cls(1901, 6, 15)

    monkeypatch.setattr(dateparser.utils.strptime, "datetime", Wrong)
    try:
        assert _resolve_table() == [(label, iso, p) for _, _, label, iso, p in TABLE]
    finally:
        date_library.clear_cache()  # nothing parsed under the wrong clock is kept


def test_dateparser_settings_do_not_leak_between_calls() -> None:
    """Each call has its own settings: an earlier base or preference never shows in a
    later call, and dateparser's module-wide defaults stay as they were."""
    defaults = dateparser.conf.settings
    before = (defaults.RELATIVE_BASE, defaults.PREFER_DATES_FROM, defaults.TIMEZONE)
    parse = date_library.read  # past the cache
    first, second = date(2024, 7, 1), date(2031, 1, 15)
    assert parse("march", first, "future")[0] == date(2025, 3, 1)
    assert parse("march", first)[0] == date(2024, 3, 1)  # no preference: its own year
    assert parse("yesterday", second)[0] == date(2031, 1, 14)
    assert parse("march", second, "past")[0] == date(2030, 3, 1)
    assert parse("yesterday", first)[0] == date(2024, 6, 30)
    assert parse("march", second)[0] == date(2031, 3, 1)
    after = (defaults.RELATIVE_BASE, defaults.PREFER_DATES_FROM, defaults.TIMEZONE)
    assert after == before


_MOVING = [
    *(("day", q) for q in ("yesterday", "tonight", "3 day ago", "in 2 week", "1 fortnight ago")),
    *(("day", q) for q in ("last week", "next week", "this week", "last friday", "next sunday")),
    *(("day", q) for q in ("this monday", "last night", "this morning", "in 10 day")),
    *(("month", q) for q in ("1 month ago", "in 11 month", "last month", "next month")),
    *(("year", q) for q in ("1 year ago", "in 3 year", "last year", "1 decade ago")),
    *(("nothing", q) for q in ("3 march 2021", "29 february 2024", "march 2024", "2023-01-02")),
]


@settings(max_examples=examples(150), deadline=None)
@given(
    st.sampled_from(_MOVING),
    st.dates(date(1950, 1, 1), date(2080, 12, 31)),
    st.sampled_from([None, "past", "future"]),
)
def test_a_reading_made_once_for_a_weekday_month_or_year_serves_every_base(
    moving: tuple[str, str], base: date, prefer: Any
) -> None:
    """What a phrase reads from one base of a weekday (a month, a year; any base, for a
    date with its year) is what dateparser reads from any other, moved by the whole
    weeks between them."""
    moves_with, query = moving
    direct = date_library.read(query, base, prefer)
    assert direct is not None
    assert date_library.parse(query, base, prefer, moves_with=moves_with) == direct
