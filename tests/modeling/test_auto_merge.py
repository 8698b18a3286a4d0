"""Auto-merge: Kylin 5 calendar levels (reference §1.3, §1.4, §1.6; SegmentsTest, AutoMergeTest, segment_merge.md)
and the Kylin 3/4 duration thresholds of seed 001 §4.4 (CubeManagerTest)."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precube.metadata.dataflow import Segment, SegmentStatus, TimeRange
from precube.metadata.project import AutoMergeTimeRange, RetentionRange, SegmentConfig, VolatileRange
from precube.modeling.auto_merge import (
    find_merge_range,
    merge_end,
    plan_auto_merge,
    plan_threshold_merge,
    remove_volatile,
    simulate_threshold_merges,
)
from precube.modeling.errors import SegmentRuleError
from precube.modeling.partition_format import utc_fields
from precube.modeling.segments import check_invariants, new_segment, promote
from tests.modeling.times import DAY, rng, seg, ts

NEW, READY, WARNING = SegmentStatus.NEW, SegmentStatus.READY, SegmentStatus.WARNING
L = AutoMergeTimeRange
HOUR = 3_600_000


def daily(first: str, count: int, step_days: int = 1) -> list[Segment]:
    start = ts(first)
    return [seg(start + i * step_days * DAY, start + (i + 1) * step_days * DAY) for i in range(count)]


def config(
    levels: Sequence[AutoMergeTimeRange] | None = None,
    volatile: VolatileRange | None = None,
    retention: RetentionRange | None = None,
) -> SegmentConfig:
    cfg = SegmentConfig(auto_merge_enabled=True)
    if levels is not None:
        cfg.auto_merge_time_ranges = list(levels)
    if volatile is not None:
        cfg.volatile_range = volatile
    if retention is not None:
        cfg.retention_range = retention
    return cfg


def merged(segments: list[Segment], r: TimeRange) -> list[Segment]:
    """The segments after a successful merge job over `r`."""
    m = new_segment(r)
    after, _ = promote([*segments, m], m.id)
    return after


# --- getMergeEnd ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "t", "expected"),
    [
        (L.HOUR, "2012-02-10 02:03", "2012-02-10 03:00"),
        (L.HOUR, "2012-02-10 03:00", "2012-02-10 04:00"),
        (L.DAY, "2012-02-10 09:00", "2012-02-11"),
        (L.DAY, "2012-02-29 09:00", "2012-03-01"),
        (L.WEEK, "2012-02-05 01:00", "2012-02-06"),  # Sunday → next day
        (L.WEEK, "2012-02-06", "2012-02-13"),  # Monday → next Monday
        (L.WEEK, "2012-02-08", "2012-02-13"),
        (L.WEEK, "2012-02-28", "2012-03-01"),  # a week never crosses a month end
        (L.MONTH, "2012-02-28", "2012-03-01"),
        (L.MONTH, "2012-03-01", "2012-04-01"),
        (L.MONTH, "2012-12-15", "2013-01-01"),
        (L.QUARTER, "2012-02-28", "2012-04-01"),
        (L.QUARTER, "2012-03-01", "2012-04-01"),
        (L.QUARTER, "2012-04-28", "2012-07-01"),
        (L.QUARTER, "2012-05-01", "2012-07-01"),
        (L.QUARTER, "2012-11-30", "2013-01-01"),
        (L.YEAR, "2012-02-28", "2013-01-01"),
        (L.YEAR, "2013-01-01", "2014-01-01"),
    ],
)
def test_merge_end_unit_values(level: AutoMergeTimeRange, t: str, expected: str) -> None:
    """SegmentsTest.testGetMergeEnd_* (reference §1.3 table), first day of week Monday."""
    assert merge_end(ts(t), level) == ts(expected)


@pytest.mark.parametrize(
    ("t", "expected"),
    [("2012-02-05 01:00", "2012-02-12"), ("2012-02-06", "2012-02-12"), ("2012-02-11 04:00", "2012-02-12")],
)
def test_merge_end_week_starting_sunday(t: str, expected: str) -> None:
    assert merge_end(ts(t), L.WEEK, "sunday") == ts(expected)
    assert merge_end(ts(t), L.WEEK, " Sunday ") == ts(expected)


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        ("2021-12-27", "2022-01-01"),  # Kylin's code: 2022-01-03 (no clamp when the month number wraps)
        ("2021-12-31 23:00", "2022-01-01"),
        ("2022-12-26", "2023-01-01"),
        ("2022-12-31", "2023-01-01"),  # a Saturday: the Monday is 01-02, the clamp gives 01-01
    ],
)
def test_merge_end_week_is_clamped_at_the_year_end_too(t: str, expected: str) -> None:
    """Our deliberate deviation: a week spanning December → January is split, as Kylin's documentation says."""
    assert merge_end(ts(t), L.WEEK) == ts(expected)
    assert merge_end(ts(t), L.WEEK, "sunday") == ts(expected)


def test_merge_end_quirks() -> None:
    t = ts("2012-02-10 02:03")
    assert merge_end(t, L.SIX_HOUR) == t and merge_end(t, L.HALF_DAY) == t  # no window at these levels
    assert merge_end(t + 123, L.DAY) == ts("2012-02-11") + 123  # Java keeps the milliseconds
    with pytest.raises(SegmentRuleError, match="tuesday"):
        merge_end(t, L.WEEK, "tuesday")


def _brute_force_week_end(t: int, monday: bool) -> int:
    f = utc_fields(t)
    day = dt.date(f.year, f.month, f.day)
    while True:
        day += dt.timedelta(days=1)
        if day.day == 1 or day.weekday() == (0 if monday else 6):
            return ts(day.isoformat()) + f.millisecond


@given(st.integers(min_value=0, max_value=ts("2100-01-01")), st.booleans())
def test_week_end_is_the_next_week_or_month_start(t: int, monday: bool) -> None:
    assert merge_end(t, L.WEEK, "monday" if monday else "sunday") == _brute_force_week_end(t, monday)


@given(
    st.integers(min_value=0, max_value=ts("2100-01-01")),
    st.sampled_from([L.HOUR, L.DAY, L.WEEK, L.MONTH, L.QUARTER, L.YEAR]),
)
def test_merge_end_is_the_first_boundary_after(t: int, level: AutoMergeTimeRange) -> None:
    end = merge_end(t, level)
    longest = {L.HOUR: HOUR, L.DAY: DAY, L.WEEK: 7 * DAY, L.MONTH: 31 * DAY, L.QUARTER: 92 * DAY, L.YEAR: 366 * DAY}
    assert t < end <= t + longest[level]
    f, e = utc_fields(t), utc_fields(end)
    assert e.millisecond == f.millisecond and e.second == 0 and e.minute == 0
    if level is not L.HOUR:
        assert e.hour == 0
    if level in (L.MONTH, L.QUARTER, L.YEAR):
        assert e.day == 1 and (e.year, e.month) != (f.year, f.month)
    if level is L.QUARTER:
        assert e.month in (1, 4, 7, 10)
    if level is L.YEAR:
        assert e.month == 1 and e.year == f.year + 1


# --- findMergeSegmentsRange -----------------------------------------------------------------------------------


def _segs(*pairs: tuple[str, str]) -> list[Segment]:
    return [seg(a, b) for a, b in pairs]


@pytest.mark.parametrize(
    ("level", "pairs", "expected"),
    [
        (  # testMergeWeek
            L.WEEK,
            [
                ("1995-01-07", "1995-01-08"),
                ("1995-01-09", "1995-01-12"),
                ("1995-01-12", "1995-01-13"),
                ("1995-01-13", "1995-01-16"),
                ("1995-01-16", "1995-01-17"),
            ],
            ("1995-01-09", "1995-01-16"),
        ),
        (  # testMergeHour
            L.HOUR,
            [
                ("1995-01-07 00:03", "1995-01-07 00:56"),
                ("1995-01-07 01:00", "1995-01-07 01:04"),
                ("1995-01-07 01:04", "1995-01-07 01:13"),
                ("1995-01-07 01:13", "1995-01-07 02:00"),
                ("1995-01-07 02:00", "1995-01-07 02:24"),
            ],
            ("1995-01-07 01:00", "1995-01-07 02:00"),
        ),
        (  # testMergeDay
            L.DAY,
            [
                ("1995-01-07 00:03", "1995-01-08 00:00"),
                ("1995-01-08 00:00", "1995-01-08 01:04"),
                ("1995-01-08 01:04", "1995-01-08 09:13"),
                ("1995-01-08 09:13", "1995-01-09 00:00"),
                ("1995-01-09 00:00", "1995-01-09 02:24"),
            ],
            ("1995-01-08", "1995-01-09"),
        ),
        (  # testMergeDayStartCase
            L.DAY,
            [
                ("1995-01-07 00:03", "1995-01-07 23:00"),
                ("1995-01-08 01:00", "1995-01-08 01:04"),
                ("1995-01-08 01:04", "1995-01-08 09:13"),
                ("1995-01-08 09:13", "1995-01-09 00:00"),
                ("1995-01-09 00:00", "1995-01-09 02:24"),
            ],
            ("1995-01-08 01:00", "1995-01-09"),
        ),
        (  # testNotMergeDayMiddleError (overlapping input, as in Kylin's test)
            L.DAY,
            [
                ("1995-01-07 00:03", "1995-01-08 01:00"),
                ("1995-01-08 00:01", "1995-01-08 03:04"),
                ("1995-01-08 10:13", "1995-01-09 00:00"),
                ("1995-01-09 00:00", "1995-01-09 02:24"),
            ],
            None,
        ),
        (  # testMergeMonth (Kylin's test runs the DAY level)
            L.DAY,
            [
                ("1995-01-07 00:03", "1995-01-07 00:56"),
                ("1995-01-08 00:00", "1995-01-08 01:04"),
                ("1995-01-08 01:04", "1995-01-08 09:13"),
                ("1995-01-08 09:13", "1995-01-09 00:00"),
                ("1995-01-09 00:00", "1995-01-09 02:24"),
            ],
            ("1995-01-08", "1995-01-09"),
        ),
        (  # testMergeYear
            L.YEAR,
            [
                ("1994-01-07 00:03", "1995-02-07 00:56"),
                ("1995-01-01 00:00", "1995-05-06 01:04"),
                ("1995-05-06 01:04", "1995-06-08 09:13"),
                ("1995-06-08 09:13", "1996-01-01 00:00"),
                ("1996-07-09 00:00", "1996-07-09 02:24"),
            ],
            ("1995-01-01", "1996-01-01"),
        ),
        (  # testMergeQuarter
            L.QUARTER,
            [
                ("1995-01-07 00:03", "1995-02-07 00:56"),
                ("1995-04-01 00:00", "1995-05-06 01:04"),
                ("1995-05-06 01:04", "1995-06-08 09:13"),
                ("1995-06-08 09:13", "1995-07-01 00:00"),
                ("1995-07-09 00:00", "1995-07-09 02:24"),
            ],
            ("1995-04-01", "1995-07-01"),
        ),
    ],
)
def test_find_merge_range_as_segmentstest(
    level: AutoMergeTimeRange, pairs: list[tuple[str, str]], expected: tuple[str, str] | None
) -> None:
    found = find_merge_range(_segs(*pairs), level)
    assert found == (rng(*expected) if expected else None)


def test_find_merge_range_edge_cases() -> None:
    assert find_merge_range([], L.WEEK) is None
    assert find_merge_range(daily("2010-01-04", 1), L.WEEK) is None
    assert find_merge_range(daily("2010-01-04", 7), L.SIX_HOUR) is None
    assert find_merge_range(list(reversed(daily("2010-01-04", 8))), L.WEEK) == rng("2010-01-04", "2010-01-11")


# --- volatile range -------------------------------------------------------------------------------------------

VOLATILE_SEGMENTS = [
    seg(1559232000000, 1561824000000),  # [2019-05-30 16:00, 2019-06-29 16:00)
    seg(1561824000000, 1564502400000),
    seg(1564502400000, 1567180800000),
]


@pytest.mark.parametrize(
    ("unit", "number", "left"),
    [(L.YEAR, 1, 0), (L.MONTH, 2, 1), (L.WEEK, 3, 2), (L.DAY, 3, 2), (L.QUARTER, 5, 3), (L.DAY, 0, 3)],
)
def test_remove_volatile_as_segmentstest(unit: AutoMergeTimeRange, number: int, left: int) -> None:
    vr = VolatileRange(volatile_range_enabled=True, volatile_range_number=number, volatile_range_type=unit)
    assert len(remove_volatile(VOLATILE_SEGMENTS, vr)) == left
    assert remove_volatile([], vr) == []


def test_remove_volatile_keeps_the_oldest() -> None:
    vr = VolatileRange(volatile_range_enabled=True, volatile_range_number=2, volatile_range_type=L.MONTH)
    assert remove_volatile(VOLATILE_SEGMENTS, vr) == VOLATILE_SEGMENTS[:1]


# --- autoMergeSegments ----------------------------------------------------------------------------------------


def test_a2_four_days_from_a_friday_merge_up_to_monday() -> None:
    assert plan_auto_merge(daily("2010-01-01", 4), config()) == rng("2010-01-01", "2010-01-04")


def test_a13_two_pairs_a_week_apart_do_not_merge() -> None:
    segments = _segs(
        ("2010-01-04", "2010-01-05"),
        ("2010-01-05", "2010-01-06"),
        ("2010-01-11", "2010-01-12"),
        ("2010-01-12", "2010-01-13"),
    )
    assert plan_auto_merge(segments, config([L.WEEK])) is None


def test_disabled_or_too_few_segments() -> None:
    segments = daily("2010-01-01", 4)
    assert plan_auto_merge(segments, SegmentConfig()) is None  # the project default: auto-merge off
    assert plan_auto_merge(daily("2010-01-01", 2), config()) is None  # Friday + Saturday: week not reached
    assert plan_auto_merge(segments[:1], config()) is None
    assert plan_auto_merge(segments, config([])) is None


def test_volatile_three_days_merges_the_first_week() -> None:
    vr = VolatileRange(volatile_range_enabled=True, volatile_range_number=3, volatile_range_type=L.DAY)
    assert plan_auto_merge(daily("2010-01-01", 10), config(volatile=vr)) == rng("2010-01-01", "2010-01-04")


def test_volatile_one_day_corner_case() -> None:
    vr = VolatileRange(volatile_range_enabled=True, volatile_range_number=1, volatile_range_type=L.DAY)
    assert plan_auto_merge(daily("2010-01-04", 8), config(volatile=vr)) == rng("2010-01-04", "2010-01-11")
    vr.volatile_range_enabled = False  # the number alone does nothing
    assert plan_auto_merge(daily("2010-01-04", 6), config(volatile=vr)) is None


def test_a_missing_day_restarts_the_week() -> None:
    segments = daily("2010-01-01", 10)
    del segments[1]  # 2010-01-02
    assert plan_auto_merge(segments, config()) == rng("2010-01-04", "2010-01-11")


def test_segments_overlapping_a_building_one_are_left_out() -> None:
    segments = daily("2010-01-01", 10)
    segments[1] = segments[1].model_copy(update={"status": NEW})
    assert plan_auto_merge(segments, config()) == rng("2010-01-04", "2010-01-11")
    # A merge in progress over the second week locks those days: nothing else is ripe.
    assert plan_auto_merge([*segments, seg("2010-01-04", "2010-01-11", NEW)], config()) is None


def test_a_segment_longer_than_the_rest_of_the_week_closes_it() -> None:
    segments = [*daily("2010-01-01", 2), seg("2010-01-03", "2010-01-11")]
    assert plan_auto_merge(segments, config()) == rng("2010-01-01", "2010-01-03")


def test_week_starting_sunday() -> None:
    assert plan_auto_merge(daily("2010-01-03", 10), config(), "sunday") == rng("2010-01-03", "2010-01-10")


def test_by_hour() -> None:
    start = ts("2010-01-01")
    segments = [seg(start + i * 13 * 60_000, start + (i + 1) * 13 * 60_000) for i in range(6)]
    assert plan_auto_merge(segments, config([L.HOUR])) == rng("2010-01-01", "2010-01-01 00:52")


def test_by_day() -> None:
    start = ts("2010-10-01 08:00")
    segments = [seg(start + i * 8_100_000, start + (i + 1) * 8_100_000) for i in range(10)]
    assert plan_auto_merge(segments, config([L.DAY])) == rng("2010-10-01 08:00", "2010-10-01 23:45")


def test_by_month() -> None:
    segments = [*daily("2010-12-01", 4, step_days=7), *daily("2010-12-29", 4)]
    assert plan_auto_merge(segments, config([L.MONTH])) == rng("2010-12-01", "2011-01-01")


def test_by_year() -> None:
    segments = daily("2010-10-01", 5, step_days=30)
    assert plan_auto_merge(segments, config([L.YEAR])) == rng("2010-10-01", "2010-12-30")


def test_first_week_without_a_fitting_segment() -> None:
    segments = _segs(("2010-01-03", "2010-01-05"), ("2010-01-05", "2010-01-07"))
    assert plan_auto_merge(segments, config()) is None


def test_retention_range_is_left_out_of_merging() -> None:
    segments = daily("2010-01-01", 59)  # 2010-01-01 … 2010-03-01
    assert plan_auto_merge(segments, config()) == rng("2010-01-01", "2010-02-01")
    retention = RetentionRange(retention_range_enabled=True, retention_range_number=1, retention_range_type=L.MONTH)
    # January ends before the retention end (2010-02-01): it is about to be dropped, not merged.
    assert plan_auto_merge(segments, config(retention=retention)) == rng("2010-02-01", "2010-03-01")


def test_doc_example_1_weeks_then_month() -> None:
    """segment_merge.md Example 1, levels week and month."""
    segments = _segs(
        ("2022-01-01", "2022-02-01"),  # A
        ("2022-02-01", "2022-02-07"),  # B
        ("2022-02-07", "2022-02-14"),  # C
        ("2022-02-14", "2022-02-21"),  # D
        ("2022-02-21", "2022-02-26"),  # E
        ("2022-02-26", "2022-02-27"),  # F
    )
    cfg = config([L.WEEK, L.MONTH])
    assert plan_auto_merge(segments, cfg) is None
    segments.append(seg("2022-02-27", "2022-02-28"))  # G
    assert plan_auto_merge(segments, cfg) == rng("2022-02-21", "2022-02-28")  # E-G
    segments = merged(segments, rng("2022-02-21", "2022-02-28"))
    assert plan_auto_merge(segments, cfg) is None
    segments.append(seg("2022-02-28", "2022-03-01"))  # H
    assert plan_auto_merge(segments, cfg) == rng("2022-02-01", "2022-03-01")  # B-H
    segments = merged(segments, rng("2022-02-01", "2022-03-01"))
    assert [s.seg_range for s in segments] == [rng("2022-01-01", "2022-02-01"), rng("2022-02-01", "2022-03-01")]
    assert plan_auto_merge(segments, cfg) is None


def test_doc_example_2_week_across_the_year_end_is_split() -> None:
    """segment_merge.md Example 2 with our deviation (Kylin's code would merge all seven days at once)."""
    segments = daily("2021-12-27", 7)  # Monday 12-27 … Sunday 01-02
    cfg = config([L.WEEK])
    assert plan_auto_merge(segments, cfg) == rng("2021-12-27", "2022-01-01")  # A-E
    segments = merged(segments, rng("2021-12-27", "2022-01-01"))
    assert plan_auto_merge(segments, cfg) == rng("2022-01-01", "2022-01-03")  # F-G
    segments = merged(segments, rng("2022-01-01", "2022-01-03"))
    assert len(segments) == 2 and plan_auto_merge(segments, cfg) is None


def test_levels_are_tried_largest_first_whatever_their_order() -> None:
    segments = daily("2010-01-01", 40)
    expected = rng("2010-01-01", "2010-02-01")
    assert plan_auto_merge(segments, config([L.WEEK, L.MONTH])) == expected
    assert plan_auto_merge(segments, config([L.MONTH, L.WEEK, L.WEEK])) == expected
    assert plan_auto_merge(segments, config([L.WEEK, L.DAY])) == rng("2010-01-01", "2010-01-04")


def test_warning_segments_merge_like_ready_ones() -> None:
    segments = [s.model_copy(update={"status": WARNING}) for s in daily("2010-01-01", 4)]
    assert plan_auto_merge(segments, config()) == rng("2010-01-01", "2010-01-04")


# --- Kylin 3/4 thresholds (seed 001 §4.4) ---------------------------------------------------------------------


def seed_example(with_i: bool = True) -> list[Segment]:
    """A 28 days, B 7 days, C…H 1 day each, then I 1 day."""
    segments = [seg("2024-01-01", "2024-01-29"), seg("2024-01-29", "2024-02-05"), *daily("2024-02-05", 6)]
    if with_i:
        segments.append(seg("2024-02-11", "2024-02-12"))
    return segments


def test_seed_example_merges_c_to_i_once() -> None:
    thresholds = [7 * DAY, 28 * DAY]
    assert plan_threshold_merge(seed_example(with_i=False), thresholds) is None  # B…H: 13 days, C…H: 6 days
    assert plan_threshold_merge(seed_example(), thresholds) == rng("2024-02-05", "2024-02-12")
    assert simulate_threshold_merges(seed_example(), thresholds) == [rng("2024-02-05", "2024-02-12")]
    assert simulate_threshold_merges(seed_example(), list(reversed(thresholds))) == [rng("2024-02-05", "2024-02-12")]


def test_cube_manager_auto_merge_normal() -> None:
    assert plan_threshold_merge([seg(0, 1000), seg(1000, 2000)], [2000, 6000]) == TimeRange.of(0, 2000)


def test_cube_manager_auto_merge_with_gap() -> None:
    thresholds = [2000, 6000]
    segments = [seg(0, 1000), seg(2000, 4000)]
    assert plan_threshold_merge(segments, thresholds) is None
    segments.append(seg(4000, 8000))
    assert plan_threshold_merge(segments, thresholds) == TimeRange.of(2000, 8000)
    segments.append(seg(1000, 2000))  # fill the gap
    assert plan_threshold_merge(segments, thresholds) == TimeRange.of(0, 8000)


def test_threshold_volatile_span_and_building() -> None:
    week = daily("2024-01-01", 7)
    assert plan_threshold_merge(week, [7 * DAY]) == rng("2024-01-01", "2024-01-08")
    assert plan_threshold_merge(week, [7 * DAY], volatile_ms=DAY) is None  # the last day is still changing
    big = [seg("2023-12-25", "2024-01-01"), *week]
    assert plan_threshold_merge(big, [14 * DAY]) == rng("2023-12-25", "2024-01-08")
    assert plan_threshold_merge(big, [14 * DAY], max_segment_span_ms=7 * DAY) is None
    merging = seg("2024-01-01", "2024-01-03", NEW)
    assert plan_threshold_merge([*week, merging], [5 * DAY]) == rng("2024-01-03", "2024-01-08")
    assert plan_threshold_merge(week, []) is None


def test_threshold_simulation_of_a_month_of_days() -> None:
    """Daily segments over 4 weeks with (7 d, 28 d): weeks 1-3 merge at 7 days; on day 28 the 28-day level is
    tried first and takes the three weeks plus the seven loose days at once."""
    segments: list[Segment] = []
    done: list[TimeRange] = []
    for day in daily("2024-01-01", 28):
        segments.append(day)
        for r in simulate_threshold_merges(segments, [7 * DAY, 28 * DAY]):
            segments = merged(segments, r)
            done.append(r)
    assert done == [
        rng("2024-01-01", "2024-01-08"),
        rng("2024-01-08", "2024-01-15"),
        rng("2024-01-15", "2024-01-22"),
        rng("2024-01-01", "2024-01-29"),
    ]
    assert [s.seg_range for s in segments] == [rng("2024-01-01", "2024-01-29")]


# --- properties -----------------------------------------------------------------------------------------------

BASE = ts("2021-11-29")


@st.composite
def segment_lists(draw: st.DrawFn) -> list[Segment]:
    """Segments meeting the §2 invariants: READY/WARNING pieces of 1 hour … 40 days with holes between some, and
    NEW segments over disjoint runs of whole pieces (builds over holes, refreshes and merges over READY ones)."""
    lengths = draw(
        st.lists(st.one_of(st.integers(1, 48), st.sampled_from([24, 24, 24, 168, 720, 960])), min_size=1, max_size=30)
    )
    kinds = draw(st.lists(st.sampled_from("RRRRWH"), min_size=len(lengths), max_size=len(lengths)))
    bounds = [BASE + draw(st.integers(0, 400)) * HOUR]
    for n in lengths:
        bounds.append(bounds[-1] + n * HOUR)
    out = [seg(bounds[i], bounds[i + 1], READY if k == "R" else WARNING) for i, k in enumerate(kinds) if k != "H"]
    cuts = sorted(draw(st.sets(st.integers(0, len(lengths)), max_size=6)))
    for lo, hi in zip(cuts[::2], cuts[1::2], strict=False):
        if draw(st.booleans()):
            out.append(seg(bounds[lo], bounds[hi], NEW))
    return draw(st.permutations(out))


def assert_exact_union(r: TimeRange, segments: Sequence[Segment]) -> list[Segment]:
    """`r` is the exact union of >= 2 contiguous READY/WARNING segments; nothing else touches it."""
    touching = sorted((s for s in segments if s.seg_range.overlaps(r)), key=lambda s: s.seg_range)
    assert all(s.status in (READY, WARNING) for s in touching), "a NEW segment overlaps the merge"
    assert all(r.contains(s.seg_range) for s in touching), "a segment crosses the merge boundary"
    assert len(touching) >= 2
    assert touching[0].seg_range.start == r.start and touching[-1].seg_range.end == r.end
    assert all(a.seg_range.connects(b.seg_range) for a, b in itertools.pairwise(touching)), "a hole"
    return touching


def covered_ms(segments: Sequence[Segment]) -> int:
    return sum(s.seg_range.end - s.seg_range.start for s in segments if s.status is not NEW)


levels = st.lists(st.sampled_from(list(AutoMergeTimeRange)), max_size=4)
volatiles = st.builds(
    VolatileRange,
    volatile_range_number=st.integers(0, 3),
    volatile_range_enabled=st.booleans(),
    volatile_range_type=st.sampled_from(list(AutoMergeTimeRange)),
)
retentions = st.builds(
    RetentionRange,
    retention_range_number=st.integers(0, 3),
    retention_range_enabled=st.booleans(),
    retention_range_type=st.sampled_from(list(AutoMergeTimeRange)),
)


@settings(max_examples=300)
@given(segment_lists(), levels, volatiles, retentions, st.sampled_from(["monday", "sunday"]))
def test_planned_merge_is_an_exact_union_of_ready_segments(
    segments: list[Segment],
    level_list: list[AutoMergeTimeRange],
    volatile: VolatileRange,
    retention: RetentionRange,
    first_day: str,
) -> None:
    check_invariants(segments)
    cfg = config(level_list, volatile, retention)
    r = plan_auto_merge(segments, cfg, first_day)
    if r is None:
        return
    assert_exact_union(r, segments)
    after = merged(segments, r)
    check_invariants(after)
    assert covered_ms(after) == covered_ms(segments)


@settings(max_examples=300)
@given(segment_lists(), st.sampled_from(list(AutoMergeTimeRange)), st.sampled_from(["monday", "sunday"]))
def test_found_range_fits_one_window(segments: list[Segment], level: AutoMergeTimeRange, first_day: str) -> None:
    ready = [s for s in segments if s.status is not NEW]
    r = find_merge_range(ready, level, first_day)
    if r is None:
        return
    assert_exact_union(r, ready)
    end = merge_end(r.start, level, first_day)
    assert r.end <= end <= max(s.seg_range.end for s in ready)  # inside the window, and the data reaches its end


@settings(max_examples=300)
@given(
    segment_lists(),
    st.lists(st.sampled_from([6 * HOUR, DAY, 2 * DAY, 7 * DAY, 28 * DAY]), max_size=3),
    st.sampled_from([0, 0, DAY, 3 * DAY]),
    st.sampled_from([-1, -1, 7 * DAY, 30 * DAY]),
)
def test_threshold_merges_keep_time_and_invariants(
    segments: list[Segment], thresholds: list[int], volatile_ms: int, max_span: int
) -> None:
    r = plan_threshold_merge(segments, thresholds, volatile_ms, max_span)
    if r is not None:
        picked = assert_exact_union(r, segments)
        assert r.end - r.start >= min(thresholds)
        assert all(s.seg_range.end - s.seg_range.start <= max(thresholds) for s in picked)
    current = list(segments)
    for step in simulate_threshold_merges(segments, thresholds, volatile_ms, max_span):
        assert_exact_union(step, current)
        current = merged(current, step)
        check_invariants(current)
    assert covered_ms(current) == covered_ms(segments)
    assert plan_threshold_merge(current, thresholds, volatile_ms, max_span) is None
