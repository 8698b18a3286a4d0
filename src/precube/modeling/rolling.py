"""Rolling refresh planning (seed 001 §4.6 "数据持续更新"): each day, build the N-day segment holding today if it
does not exist yet, and refresh the existing segments that still hold data from the last `volatile_days` days.

Segments are `segment_days` long and aligned to an origin day (by default the start of the first segment), so
on any day at most two segments need work: the one still receiving late data and the one receiving today's.
Pure planning: the caller submits the build and refresh jobs (after `validate_build` / `validate_refresh`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from precube.metadata.dataflow import Segment, SegmentStatus, TimeRange
from precube.modeling.errors import SegmentRuleError
from precube.modeling.partition_format import MS_PER_DAY, to_epoch_ms, utc_fields

_READY = (SegmentStatus.READY, SegmentStatus.WARNING)


@dataclass(frozen=True)
class RollingPlan:
    """What to do today: the segment to build (None if today's segment exists) and the ranges to refresh."""

    build: TimeRange | None
    refresh: list[TimeRange] = field(default_factory=list)


def _day_ms(day: dt.date) -> int:
    return to_epoch_ms(day, "yyyy-MM-dd")


def plan_rolling(
    today: dt.date,
    segments: Sequence[Segment],
    volatile_days: int,
    segment_days: int,
    origin: dt.date | None = None,
) -> RollingPlan:
    """Seed 001 §4.6 as a planner (UTC days).

    build: the `segment_days`-long range aligned to `origin` (default: the day of the first segment's start,
    else `today`) that contains `today`, when no existing segment (any status) overlaps today. Where existing
    segments already cover part of that range (e.g. after a manual merge), it is cut to the uncovered part
    around today so that it never overlaps them (precube's interpretation; the seed assumes aligned segments).

    refresh: the existing READY/WARNING segments overlapping `[today - volatile_days, today + 1 day)`, except the
    one being built, in range order. NEW segments are skipped: their jobs are still running.

    Raises SegmentRuleError when `segment_days < 1` or `volatile_days < 0`.
    """
    if segment_days < 1:
        raise SegmentRuleError(f"Rolling segments must be at least 1 day long, not {segment_days}")
    if volatile_days < 0:
        raise SegmentRuleError(f"The number of days to refresh must be >= 0, not {volatile_days}")
    ordered = sorted(segments, key=lambda s: s.seg_range)
    if origin is None:
        if ordered:
            f = utc_fields(ordered[0].seg_range.start)
            origin = dt.date(f.year, f.month, f.day)
        else:
            origin = today
    day_start = _day_ms(today)
    day_end = day_start + MS_PER_DAY

    build: TimeRange | None = None
    # Any segment touching today (even partly) means today's data has a home: nothing to build.
    if not any(s.seg_range.overlaps(TimeRange.of(day_start, day_end)) for s in ordered):
        span = segment_days * MS_PER_DAY
        bucket_start = _day_ms(origin) + (day_start - _day_ms(origin)) // span * span
        # Cut the aligned range to the free time around today: every segment ends before or starts after it.
        lo = max([bucket_start, *(s.seg_range.end for s in ordered if s.seg_range.end <= day_start)])
        hi = min([bucket_start + span, *(s.seg_range.start for s in ordered if s.seg_range.start >= day_end)])
        build = TimeRange.of(lo, hi)

    window = TimeRange.of(day_start - volatile_days * MS_PER_DAY, day_end)
    refresh = [
        s.seg_range for s in ordered if s.status in _READY and s.seg_range.overlaps(window) and s.seg_range != build
    ]
    return RollingPlan(build=build, refresh=refresh)
