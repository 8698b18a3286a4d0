"""Rolling refresh planning (seed 001 §4.6): segments of N days, refreshing the last `volatile_days` days."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precube.metadata.dataflow import Segment, SegmentStatus, TimeRange
from precube.modeling.errors import SegmentRuleError
from precube.modeling.rolling import RollingPlan, plan_rolling
from precube.modeling.segments import check_invariants, new_segment, promote, validate_build
from tests.modeling.times import DAY, rng, seg

NEW, READY = SegmentStatus.NEW, SegmentStatus.READY


A = rng("2024-01-01", "2024-01-08")
B = rng("2024-01-08", "2024-01-15")
C = rng("2024-01-15", "2024-01-22")

# The seed's example day by day: (today, segment to build, segments to refresh).
SEED_DAYS = [
    ("2024-01-01", A, []),  # build A; 01-01 is the earliest date, nothing older to refresh
    *((f"2024-01-0{d}", None, [A]) for d in range(2, 8)),  # 01-02 … 01-07: refresh A
    ("2024-01-08", B, [A]),  # build B, refresh A
    *((f"2024-01-{d:02d}", None, [A, B]) for d in range(9, 15)),  # 01-09 … 01-14: refresh A and B
    ("2024-01-15", C, [B]),  # build C; A's last day (01-07) is out of the past 7 days
    ("2024-01-16", None, [B, C]),
]


def test_seed_example_day_by_day() -> None:
    segments: list[Segment] = []
    for today, build, refresh in SEED_DAYS:
        plan = plan_rolling(dt.date.fromisoformat(today), segments, volatile_days=7, segment_days=7)
        assert plan == RollingPlan(build=build, refresh=refresh), today
        if plan.build is not None:
            new = new_segment(validate_build(segments, plan.build, partitioned=True))
            segments, _ = promote([*segments, new], new.id)
        for r in plan.refresh:  # each refresh job replaces the segment by a fresh copy
            fresh = new_segment(r)
            segments, removed = promote([*segments, fresh], fresh.id)
            assert [s.seg_range for s in removed] == [r]
        check_invariants(segments)
    assert [s.seg_range for s in segments] == [A, B, C]


@pytest.mark.parametrize(
    ("today", "existing", "plan"),
    [
        ("2024-01-07", [A], RollingPlan(None, [A])),
        ("2024-01-08", [A], RollingPlan(B, [A])),
        ("2024-01-08", [A, B], RollingPlan(None, [A, B])),  # B already built earlier today: refresh it too
        ("2024-01-15", [A, B], RollingPlan(C, [B])),
    ],
)
def test_seed_example_with_explicit_origin(today: str, existing: list[TimeRange], plan: RollingPlan) -> None:
    segments = [new_segment(r, READY) for r in existing]
    day = dt.date.fromisoformat(today)
    assert plan_rolling(day, segments, volatile_days=7, segment_days=7, origin=dt.date(2024, 1, 1)) == plan


def test_segments_a_bit_longer_than_the_volatile_days() -> None:
    """The seed's advice: N = 7 with 10-day segments still refreshes enough if ETL runs late."""
    segments = [seg("2024-01-01", "2024-01-11")]
    plan = plan_rolling(dt.date(2024, 1, 11), segments, volatile_days=7, segment_days=10)
    assert plan == RollingPlan(build=rng("2024-01-11", "2024-01-21"), refresh=[rng("2024-01-01", "2024-01-11")])
    segments.append(seg("2024-01-11", "2024-01-21"))
    plan = plan_rolling(dt.date(2024, 1, 18), segments, volatile_days=7, segment_days=10)
    assert plan == RollingPlan(build=None, refresh=[rng("2024-01-11", "2024-01-21")])


def test_no_volatile_days_refreshes_only_today() -> None:
    segments = [seg("2024-01-01", "2024-01-08")]
    assert plan_rolling(dt.date(2024, 1, 3), segments, volatile_days=0, segment_days=7) == RollingPlan(None, [A])
    assert plan_rolling(dt.date(2024, 1, 8), segments, volatile_days=0, segment_days=7) == RollingPlan(B, [])


def test_segments_being_built_are_not_refreshed() -> None:
    segments = [seg("2024-01-01", "2024-01-08"), seg("2024-01-08", "2024-01-15", NEW)]
    assert plan_rolling(dt.date(2024, 1, 9), segments, volatile_days=7, segment_days=7) == RollingPlan(None, [A])


def test_a_merged_segment_covering_today_needs_no_build() -> None:
    segments = [seg("2024-01-01", "2024-01-15")]
    plan = plan_rolling(dt.date(2024, 1, 10), segments, volatile_days=2, segment_days=7)
    assert plan == RollingPlan(None, [rng("2024-01-01", "2024-01-15")])


def test_build_is_cut_to_the_free_days() -> None:
    segments = [seg("2024-01-01", "2024-01-10")]  # not aligned to 7 days
    plan = plan_rolling(dt.date(2024, 1, 12), segments, volatile_days=1, segment_days=7)
    assert plan.build == rng("2024-01-10", "2024-01-15")
    later = [*segments, seg("2024-01-13", "2024-01-20")]
    assert plan_rolling(dt.date(2024, 1, 11), later, volatile_days=1, segment_days=7).build == rng(
        "2024-01-10", "2024-01-13"
    )


def test_a_day_before_the_origin() -> None:
    segments = [seg("2024-01-08", "2024-01-15")]
    plan = plan_rolling(dt.date(2024, 1, 3), segments, volatile_days=7, segment_days=7)
    assert plan == RollingPlan(build=rng("2024-01-01", "2024-01-08"), refresh=[])


def test_invalid_settings() -> None:
    with pytest.raises(SegmentRuleError, match="at least 1 day"):
        plan_rolling(dt.date(2024, 1, 1), [], volatile_days=7, segment_days=0)
    with pytest.raises(SegmentRuleError, match=">= 0"):
        plan_rolling(dt.date(2024, 1, 1), [], volatile_days=-1, segment_days=7)


@given(
    st.integers(1, 15),
    st.integers(0, 20),
    st.lists(st.integers(0, 3), min_size=1, max_size=60),
)
def test_daily_runs_keep_segments_aligned_and_valid(segment_days: int, volatile_days: int, steps: list[int]) -> None:
    """Run the planner on days (skipping 0-3 days between runs): the segments stay aligned to the first one and
    never overlap, every refresh targets an existing segment, and at most two segments need work a day."""
    today = dt.date(2024, 1, 1)
    segments: list[Segment] = []
    for step in steps:
        today += dt.timedelta(days=step)
        plan = plan_rolling(today, segments, volatile_days, segment_days)
        existing = {s.seg_range for s in segments}
        assert all(r in existing for r in plan.refresh)
        if volatile_days < segment_days:
            assert len(plan.refresh) + (plan.build is not None) <= 2
        if plan.build is not None:
            validate_build(segments, plan.build, partitioned=True)
            new = new_segment(plan.build)
            segments, _ = promote([*segments, new], new.id)
        check_invariants(segments)
        for s in segments:
            assert (s.seg_range.start - segments[0].seg_range.start) % (segment_days * DAY) == 0
            assert s.seg_range.end - s.seg_range.start == segment_days * DAY
