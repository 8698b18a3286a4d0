"""Retention: Kylin 5 calendar retention (reference §1.5; SegmentsTest, RetentionTest) and the Kylin 3 duration
retention of seed 001 §4.5."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precube.metadata.dataflow import Segment, SegmentStatus, TimeRange
from precube.metadata.project import AutoMergeTimeRange, RetentionRange
from precube.modeling.retention import (
    retention_end,
    retention_range,
    segments_to_remove_by_retention,
    segments_to_remove_by_retention_ms,
    shift_calendar,
)
from precube.modeling.segments import new_segment
from tests.modeling.times import DAY, seg, ts

NEW, READY, WARNING = SegmentStatus.NEW, SegmentStatus.READY, SegmentStatus.WARNING
L = AutoMergeTimeRange


def weeks(first: str, count: int, status: SegmentStatus = NEW) -> list[Segment]:
    start = ts(first)
    return [seg(start + i * 7 * DAY, start + (i + 1) * 7 * DAY, status) for i in range(count)]


def retention(number: int, unit: AutoMergeTimeRange, enabled: bool = True) -> RetentionRange:
    return RetentionRange(retention_range_number=number, retention_range_type=unit, retention_range_enabled=enabled)


@pytest.mark.parametrize(
    ("last_end", "number", "unit", "expected"),
    [
        ("2012-02-10 02:03", 1, L.HOUR, "2012-02-10 01:03"),
        ("2012-02-10 03:00", 1, L.HOUR, "2012-02-10 02:00"),
        ("2012-02-10 02:03", 1, L.DAY, "2012-02-09 02:03"),
        ("2012-02-01 11:00", 2, L.DAY, "2012-01-30 11:00"),
        ("2012-02-05 09:00", 1, L.WEEK, "2012-01-29 09:00"),
        ("2012-03-31", 1, L.MONTH, "2012-02-29"),
        ("2012-02-28", 1, L.YEAR, "2011-02-28"),
        ("2012-02-29 10:00", 1, L.YEAR, "2011-02-28 10:00"),
        ("2012-01-31", 1, L.MONTH, "2011-12-31"),
        ("2012-05-31", 3, L.MONTH, "2012-02-29"),
        ("2012-02-28", 1, L.QUARTER, "2012-02-28"),  # no case in Kylin's switch: unchanged
        ("2012-02-28", 1, L.HALF_DAY, "2012-02-28"),
    ],
)
def test_retention_end_unit_values(last_end: str, number: int, unit: AutoMergeTimeRange, expected: str) -> None:
    """SegmentsTest.testGetRetentionStart_* (reference §1.5): a plain calendar shift, not aligned."""
    assert retention_end(ts(last_end), retention(number, unit)) == ts(expected)


@given(
    st.dates(min_value=dt.date(1970, 1, 1), max_value=dt.date(3000, 12, 28)).filter(lambda d: d.day <= 28),
    st.integers(-240, 240),
    st.integers(0, 86_399_999),
)
def test_month_shifts_keep_day_and_time_and_round_trip(day: dt.date, months: int, time_of_day: int) -> None:
    ms = ts(day.isoformat()) + time_of_day
    shifted = shift_calendar(ms, L.MONTH, months)
    assert shifted % DAY == time_of_day
    assert shift_calendar(shifted, L.MONTH, -months) == ms
    assert shift_calendar(ms, L.YEAR, months) == shift_calendar(ms, L.MONTH, 12 * months)


def test_retention_2_weeks_of_2_days_removes_nothing() -> None:
    """RetentionTest.testRetention_2Week."""
    segments = [seg("2010-01-01", "2010-01-02", NEW), seg("2010-01-02", "2010-01-03", NEW)]
    assert segments_to_remove_by_retention(segments, retention(2, L.WEEK)) == []


def test_retention_2_weeks_of_3_weeks() -> None:
    """RetentionTest.testRetention_2Week_3WeekDataCornerCase: segments of any status are removed."""
    segments = weeks("2010-01-04", 3)
    assert segments_to_remove_by_retention(segments, retention(2, L.WEEK)) == segments[:1]


def test_retention_2_weeks_of_3_weeks_and_a_day() -> None:
    """RetentionTest.testRetention_2Week_3WeekAndOneDayData."""
    segments = [*weeks("2010-01-04", 3), seg("2010-01-25", "2010-01-26", NEW)]
    assert segments_to_remove_by_retention(segments, retention(2, L.WEEK)) == segments[:1]


def test_retention_1_month_of_9_weeks() -> None:
    """RetentionTest.testRetention_1Month_9WeekData: 2010-01-04 … 03-08 keeps 02-08 … 03-08."""
    segments = weeks("2010-01-04", 9)
    removed = segments_to_remove_by_retention(segments, retention(1, L.MONTH))
    assert removed == segments[:5]
    assert segments[5].seg_range.start == ts("2010-02-08")


def test_retention_1_month_of_5_weeks_removes_nothing() -> None:
    """RetentionTest.testRetention_1Month_5WeekData: the retention end 01-08 cuts the first week."""
    assert segments_to_remove_by_retention(weeks("2010-01-04", 5), retention(1, L.MONTH)) == []


def test_retention_off_or_empty() -> None:
    segments = weeks("2010-01-04", 9)
    assert segments_to_remove_by_retention(segments, retention(1, L.MONTH, enabled=False)) == []
    assert segments_to_remove_by_retention(segments, retention(0, L.MONTH)) == []
    assert segments_to_remove_by_retention([], retention(1, L.MONTH)) == []
    assert retention_range(segments, RetentionRange()) is None  # Kylin 5 default: off


def test_retention_quarter_quirk_removes_everything() -> None:
    """Kylin's retention end is not shifted for QUARTER, so every segment lies before it."""
    segments = weeks("2010-01-04", 3, READY)
    assert segments_to_remove_by_retention(segments, retention(1, L.QUARTER)) == segments


def test_retention_ignores_a_full_build() -> None:
    full = new_segment(TimeRange.full(), READY)
    assert segments_to_remove_by_retention([full], retention(1, L.DAY)) == []


def test_retention_range() -> None:
    segments = list(reversed(weeks("2010-01-04", 9)))
    assert retention_range(segments, retention(1, L.MONTH)) == TimeRange.of(ts("2010-01-04"), ts("2010-02-08"))


# --- Kylin 3 / seed 001 §4.5 ----------------------------------------------------------------------------------


def test_seed_retention_threshold_365_days() -> None:
    """A segment whose end is more than 365 days before the latest end is dropped."""
    old = seg("2022-01-01", "2022-06-01")
    edge = seg("2022-06-01", "2023-01-01")  # ends exactly 365 days before 2024-01-01: end <= head, dropped
    young = seg("2023-01-01", "2023-07-01", WARNING)
    last = seg("2023-07-01", "2024-01-01")
    building = seg("2024-01-01", "2024-02-01", NEW)  # not READY: neither removed nor the tail
    segments = [building, last, young, edge, old]
    assert segments_to_remove_by_retention_ms(segments, 365 * DAY) == [old, edge]
    assert segments_to_remove_by_retention_ms(segments, 366 * DAY) == [old]
    assert segments_to_remove_by_retention_ms(segments, 0) == []
    assert segments_to_remove_by_retention_ms([building], 365 * DAY) == []
