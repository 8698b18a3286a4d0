"""Segment auto-merge planning: Kylin 5's calendar levels (reference §1.1 to §1.4) and Kylin 3/4's duration
thresholds (reference §1.7, the algorithm seed 001 §4.4 describes).

Kylin 5 (`Segments.autoMergeSegments` / `findMergeSegmentsRange` / `getMergeEnd`): levels HOUR … YEAR are tried
largest first; a window starts at a segment's start and ends at the next calendar boundary of the level; it is
merged once at least two contiguous segments lie inside it and the data reaches the window's end. Calendar
arithmetic is in UTC (Kylin uses the JVM time zone; its tests run in UTC).

DELIBERATE DEVIATION (WEEK level): Kylin's `getMergeEnd` clamps a week window to the 1st of the next month only
when the month number grows (`MONTH > month`), so a week spanning December → January is not split. Kylin's
documentation (segment_merge.md, "Example 2") says a natural week spanning months, quarters or years is merged
separately. precube follows the documentation: the WEEK window is clamped at every month boundary, December →
January included (Mon 2021-12-27 … Sun 2022-01-02 merges as 12-27..12-31, then 01-01..01-02).

Kept Kylin quirks: SIX_HOUR and HALF_DAY have no window (never merge at those levels); sub-second parts of a
window start survive into its end (Java never resets MILLISECOND).
"""

from __future__ import annotations

from collections.abc import Sequence

from precube.metadata.dataflow import Segment, SegmentStatus, TimeRange
from precube.metadata.project import AutoMergeTimeRange, SegmentConfig, VolatileRange
from precube.modeling.errors import SegmentRuleError
from precube.modeling.partition_format import MS_PER_DAY, MS_PER_HOUR, utc_fields, utc_ms
from precube.modeling.retention import retention_range, shift_calendar
from precube.modeling.segments import new_segment, promote

_READY = (SegmentStatus.READY, SegmentStatus.WARNING)
_LEVEL_ORDER = list(AutoMergeTimeRange)  # Kylin's AutoMergeTimeEnum codes 1..8 follow this order


def _first_day_is_monday(first_day_of_week: str) -> bool:
    # Kylin treats anything but "monday" as Sunday; precube refuses a typo instead of silently using Sunday.
    day = first_day_of_week.strip().lower()
    if day not in ("monday", "sunday"):
        raise SegmentRuleError(f'First day of week must be "monday" or "sunday", not "{first_day_of_week}"')
    return day == "monday"


def merge_end(t_ms: int, level: AutoMergeTimeRange, first_day_of_week: str = "monday") -> int:
    """Kylin 5 `Segments.getMergeEnd`: the first boundary of `level` strictly after `t_ms` (UTC).

    HOUR: next full hour. DAY: next midnight. WEEK: next Monday (or Sunday) 00:00 strictly after `t_ms`'s
    date, clamped to the 1st of the next month when it falls in another month (deviation: Dec → Jan too).
    MONTH / QUARTER / YEAR: 1st of the next month / calendar quarter / year. SIX_HOUR, HALF_DAY: `t_ms` itself.
    The millisecond-of-second of `t_ms` is kept, as Java's Calendar does.
    """
    monday = _first_day_is_monday(first_day_of_week)
    f = utc_fields(t_ms)
    millis = f.millisecond
    if level is AutoMergeTimeRange.HOUR:
        return utc_ms(f.year, f.month, f.day, f.hour, 0, 0, millis) + MS_PER_HOUR
    if level is AutoMergeTimeRange.DAY:
        return utc_ms(f.year, f.month, f.day, 0, 0, 0, millis) + MS_PER_DAY
    if level is AutoMergeTimeRange.WEEK:
        # monday: Monday → +7 … Sunday → +1; sunday: Sunday → +7, Monday → +6 … Saturday → +1
        ahead = 7 - f.weekday if monday else 6 - f.weekday if f.weekday != 6 else 7
        end = utc_ms(f.year, f.month, f.day, 0, 0, 0, millis) + ahead * MS_PER_DAY
        e = utc_fields(end)
        if (e.year, e.month) != (f.year, f.month):  # a week never crosses a month end (incl. a year end)
            return utc_ms(e.year, e.month, 1, 0, 0, 0, millis)
        return end
    if level is AutoMergeTimeRange.MONTH:
        return utc_ms(f.year + f.month // 12, f.month % 12 + 1, 1, 0, 0, 0, millis)
    if level is AutoMergeTimeRange.QUARTER:
        next_quarter0 = (f.month - 1) // 3 * 3 + 3  # 0-based month of the next quarter's start
        return utc_ms(f.year + next_quarter0 // 12, next_quarter0 % 12 + 1, 1, 0, 0, 0, millis)
    if level is AutoMergeTimeRange.YEAR:
        return utc_ms(f.year + 1, 1, 1, 0, 0, 0, millis)
    return t_ms  # SIX_HOUR, HALF_DAY: no case in Kylin's switch


def find_merge_range(
    segments: Sequence[Segment], level: AutoMergeTimeRange, first_day_of_week: str = "monday"
) -> TimeRange | None:
    """Kylin 5 `Segments.findMergeSegmentsRange(level)` over already filtered segments (sorted here by range).

    Walks the segments with a window `[s.start, merge_end(s.start))`: contiguous segments inside the window
    accumulate; a segment sticking out of the window ends it, and the accumulated ones (>= 2) are merged if the
    last connects to that segment or ends at the window end, else the walk restarts from that segment. A
    segment that does not fit (gap, overlap, longer than its own window) is dropped and the walk restarts after
    it. Nothing is merged while the last segment ends before the current window does.
    """
    ordered = sorted(segments, key=lambda s: s.seg_range)
    if not ordered:
        return None
    last_end = ordered[-1].seg_range.end
    window: TimeRange | None = None
    acc: list[Segment] = []
    for seg in ordered:
        rng = seg.seg_range
        if window is not None and rng.end > window.end:
            prev = acc[-1].seg_range if acc else None
            if len(acc) > 1 and prev is not None and (prev.connects(rng) or prev.end == window.end):
                break
            window, acc = None, []
        if window is None:
            window = TimeRange.of(rng.start, merge_end(rng.start, level, first_day_of_week))
        if last_end < window.end:
            return None
        if rng.end <= window.end and (not acc or acc[-1].seg_range.connects(rng)):
            acc.append(seg)
        else:
            window, acc = None, []
    if len(acc) < 2:
        return None
    return TimeRange.of(acc[0].seg_range.start, acc[-1].seg_range.end)


def remove_volatile(segments: Sequence[Segment], volatile: VolatileRange) -> list[Segment]:
    """Kylin 5 `Segments.removeSegmentsByVolatileRange`: with `latest` the end of the last segment (in range
    order) and `vt = latest - (latest shifted back by N units)`, drop every segment whose `end + vt > latest`.

    Nothing is removed when the number is <= 0 or for QUARTER/SIX_HOUR/HALF_DAY (vt = 0). Like Kylin's method this
    ignores `volatile_range_enabled`: `plan_auto_merge` checks it.
    """
    ordered = sorted(segments, key=lambda s: s.seg_range)
    if volatile.volatile_range_number <= 0 or not ordered:
        return ordered
    latest = ordered[-1].seg_range.end
    vt = latest - shift_calendar(latest, volatile.volatile_range_type, -volatile.volatile_range_number)
    if vt <= 0:
        return ordered
    return [s for s in ordered if s.seg_range.end + vt <= latest]


def plan_auto_merge(
    segments: Sequence[Segment], config: SegmentConfig, first_day_of_week: str = "monday"
) -> TimeRange | None:
    """Kylin 5 `Segments.autoMergeSegments(config)`: the one range to merge now, or None.

    Candidates are READY/WARNING segments, minus those overlapping the retention range (§1.5; overlap, not
    containment, as Kylin), minus the volatile tail when enabled, minus those overlapping any NEW segment (being
    built, refreshed or merged). Levels are tried largest first; the first level with a range wins — or, when
    the config gives duration thresholds (seed 001), `plan_threshold_merge` decides. None when auto-merge is
    disabled or fewer than two candidates remain.
    """
    if not config.auto_merge_enabled:
        return None
    ordered = sorted(segments, key=lambda s: s.seg_range)
    ready = [s for s in ordered if s.status in _READY]
    kept = retention_range(ordered, config.retention_range)
    if kept is not None:
        ready = [s for s in ready if not s.seg_range.overlaps(kept)]
    if config.volatile_range.volatile_range_enabled:
        ready = remove_volatile(ready, config.volatile_range)
    building = [s for s in ordered if s.status is SegmentStatus.NEW]
    ready = [r for r in ready if not any(b.seg_range.overlaps(r.seg_range) for b in building)]
    if len(ready) < 2:
        return None
    if config.auto_merge_thresholds_ms:  # seed 001's durations chosen instead of Kylin 5's calendar levels
        return plan_threshold_merge(ready, config.auto_merge_thresholds_ms)
    for level in sorted(set(config.auto_merge_time_ranges), key=_LEVEL_ORDER.index, reverse=True):
        found = find_merge_range(ready, level, first_day_of_week)
        if found is not None:
            return found
    return None


def plan_threshold_merge(
    segments: Sequence[Segment],
    thresholds_ms: Sequence[int],
    volatile_ms: int = 0,
    max_segment_span_ms: int = -1,
) -> TimeRange | None:
    """Kylin 3/4 `Segments.autoMergeCubeSegments` (seed 001 §4.4 "Auto Merge Thresholds"): the one range to
    merge now, or None.

    Candidates: READY/WARNING segments not overlapping a NEW one (Kylin 4: contained in; the same under the §2
    invariants), without those ending within `volatile_ms` of the latest end, and without those lasting
    `>= max_segment_span_ms` (when > 0). For each threshold T, largest first, and each candidate s in order:
    take the window `[s.start, s.start + T)`, collect the following candidates overlapping it, stopping at one
    longer than T or at a gap; merge them if there are >= 2 and they span >= T.
    """
    ordered = sorted(segments, key=lambda s: s.seg_range)
    ready = [s for s in ordered if s.status in _READY]
    building = [s for s in ordered if s.status is SegmentStatus.NEW]
    if volatile_ms > 0 and ready:
        latest = max(s.seg_range.end for s in ready)  # over all READY ones, before the NEW-covered are dropped
        ready = [s for s in ready if s.seg_range.end + volatile_ms <= latest]
    if max_segment_span_ms > 0:
        ready = [s for s in ready if s.seg_range.end - s.seg_range.start < max_segment_span_ms]
    ready = [r for r in ready if not any(b.seg_range.overlaps(r.seg_range) for b in building)]
    for threshold in sorted(thresholds_ms, reverse=True):
        for i, first in enumerate(ready):
            window = TimeRange.of(first.seg_range.start, first.seg_range.start + threshold)
            picked: list[Segment] = []
            for seg in ready[i:]:
                rng = seg.seg_range
                if not window.overlaps(rng):
                    continue
                if rng.end - rng.start > threshold:  # a segment already longer than T is never merged at T
                    break
                if picked and not picked[-1].seg_range.connects(rng):  # a hole ends the run
                    break
                picked.append(seg)
            if len(picked) > 1 and picked[-1].seg_range.end - picked[0].seg_range.start >= threshold:
                return TimeRange.of(picked[0].seg_range.start, picked[-1].seg_range.end)
    return None


def simulate_threshold_merges(
    segments: Sequence[Segment],
    thresholds_ms: Sequence[int],
    volatile_ms: int = 0,
    max_segment_span_ms: int = -1,
) -> list[TimeRange]:
    """Seed 001 §4.4 end to end: plan a threshold merge, replace the merged segments by one READY segment (as
    a successful merge job would, via `promote`), and plan again until nothing merges ("one merge per round,
    repeated after each merge"). Returns the merged ranges in order; every round removes at least one
    segment, so it ends."""
    current = list(segments)
    merged: list[TimeRange] = []
    while (rng := plan_threshold_merge(current, thresholds_ms, volatile_ms, max_segment_span_ms)) is not None:
        merged.append(rng)
        seg = new_segment(rng)
        current, _ = promote([*current, seg], seg.id)
    return merged
