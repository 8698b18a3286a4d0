"""Segment retention: which old segments to drop (reference §1.5 for Kylin 5, §1.7 / seed 001 §4.5 for Kylin 3).

Kylin 5 (`Segments.getSegmentsToRemoveByRetention`): the retention end is the end of the last segment shifted back
by N calendar units (not aligned to a boundary); every segment, of any status, lying entirely inside
`[first.start, retentionEnd)` is removed.

Kylin 3 (`CubeService.keepCubeRetention`, the "Retention Threshold" of seed 001): a plain duration in ms; READY
segments ending at or before `lastReady.end - retention` are removed.
"""

from __future__ import annotations

from collections.abc import Sequence

from precube.metadata.dataflow import MAX_TIME, Segment, SegmentStatus, TimeRange
from precube.metadata.project import AutoMergeTimeRange, RetentionRange
from precube.modeling.partition_format import (
    MS_PER_DAY,
    MS_PER_HOUR,
    days_in_month,
    utc_fields,
    utc_ms,
)

_READY = (SegmentStatus.READY, SegmentStatus.WARNING)


def shift_calendar(ms: int, unit: AutoMergeTimeRange, amount: int) -> int:
    """`ms` moved by `amount` calendar units in UTC, as Java's `Calendar.add` (Kylin's `getRetentionEnd` and
    `getMillisecondByType`).

    HOUR, DAY and WEEK (= 7 days) are fixed lengths in UTC; MONTH and YEAR keep the time of day and clamp the
    day to the target month (2012-03-31 minus 1 month = 2012-02-29, 2012-02-29 minus 1 year = 2011-02-28).
    QUARTER, SIX_HOUR and HALF_DAY have no case in Kylin's switch: `ms` is returned unchanged.
    """
    if unit is AutoMergeTimeRange.HOUR:
        return ms + amount * MS_PER_HOUR
    if unit is AutoMergeTimeRange.DAY:
        return ms + amount * MS_PER_DAY
    if unit is AutoMergeTimeRange.WEEK:
        return ms + amount * 7 * MS_PER_DAY
    if unit not in (AutoMergeTimeRange.MONTH, AutoMergeTimeRange.YEAR):
        return ms
    f = utc_fields(ms)
    months = f.year * 12 + (f.month - 1) + (amount if unit is AutoMergeTimeRange.MONTH else 12 * amount)
    year, month0 = divmod(months, 12)
    day = min(f.day, days_in_month(year, month0 + 1))
    return utc_ms(year, month0 + 1, day, f.hour, f.minute, f.second, f.millisecond)


def retention_end(last_end_ms: int, retention: RetentionRange) -> int:
    """Kylin 5 `Segments.getRetentionEnd(lastEnd, type, -number)`: the end of the last segment shifted back by
    `retention_range_number` units of `retention_range_type` (QUARTER etc. → unchanged, Kylin's quirk)."""
    return shift_calendar(last_end_ms, retention.retention_range_type, -retention.retention_range_number)


def retention_range(segments: Sequence[Segment], retention: RetentionRange) -> TimeRange | None:
    """Kylin 5 `Segments.getSegmentRangeToRemove`: `[first.start, retentionEnd)` over all segments sorted by
    range, or None when retention is off, there are no segments, or `retentionEnd <= first.start`.

    Deviation: a segment with an open end (a full build) disables retention, where Kylin would compute a
    retention end near `Long.MAX_VALUE` that removes nothing anyway.
    """
    rr = retention
    if not rr.retention_range_enabled or rr.retention_range_number <= 0 or not segments:
        return None
    ordered = sorted(segments, key=lambda s: s.seg_range)
    first, last = ordered[0], ordered[-1]
    if last.seg_range.end >= MAX_TIME:
        return None
    end = retention_end(last.seg_range.end, rr)
    if end <= first.seg_range.start:
        return None
    return TimeRange.of(first.seg_range.start, end)


def segments_to_remove_by_retention(segments: Sequence[Segment], retention: RetentionRange) -> list[Segment]:
    """Kylin 5 `NDataflow.getSegmentsToRemoveByRetention`: segments (any status) fully contained in
    `[first.start, retentionEnd)`, in range order; empty when retention is disabled or its number is <= 0.

    Note Kylin's quirk kept here: a QUARTER retention does not shift the end, so it removes every segment that
    lies before the end of the last one.
    """
    rng = retention_range(segments, retention)
    if rng is None:
        return []
    return [s for s in sorted(segments, key=lambda s: s.seg_range) if rng.contains(s.seg_range)]


def segments_to_remove_by_retention_ms(segments: Sequence[Segment], retention_ms: int) -> list[Segment]:
    """Kylin 3 `CubeService.keepCubeRetention` / seed 001 §4.5: with `tail` the end of the last READY segment,
    remove the READY segments whose end is `<= tail - retention_ms`; nothing when `retention_ms <= 0`.

    Kylin 3 has no WARNING status; precube counts WARNING segments as READY (both are queryable). Kylin's
    "end > 0" guard for streaming cubes is kept.
    """
    if retention_ms <= 0:
        return []
    ready = sorted((s for s in segments if s.status in _READY), key=lambda s: s.seg_range)
    if not ready:
        return []
    head = ready[-1].seg_range.end - retention_ms
    return [s for s in ready if 0 < s.seg_range.end <= head]
