"""Times and segments written as dates, shared by the segment-rule tests."""

from __future__ import annotations

import calendar
import datetime as dt

from precube.metadata import Segment, SegmentStatus, TimeRange
from precube.modeling.segments import new_segment

DAY = 86_400_000


def ts(text: str) -> int:
    """Epoch ms (UTC) of 'YYYY-MM-DD[ HH:MM[:SS]]'."""
    return calendar.timegm(dt.datetime.fromisoformat(text).timetuple()) * 1000


def rng(start: str, end: str) -> TimeRange:
    return TimeRange.of(ts(start), ts(end))


def seg(start: int | str, end: int | str, status: SegmentStatus = SegmentStatus.READY) -> Segment:
    """A segment of [start, end): dates or epoch ms."""
    lo = ts(start) if isinstance(start, str) else start
    hi = ts(end) if isinstance(end, str) else end
    return new_segment(TimeRange.of(lo, hi), status)
