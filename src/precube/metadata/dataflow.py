"""Dataflow: the built state of a model, i.e. its segments (`/{project}/dataflow/{model uuid}.json`),
and per segment the layouts built in it (`/{project}/dataflow_details/{model uuid}/{segment id}.json`).
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from precube.metadata import paths
from precube.metadata.entity import Entity, new_uuid, now_ms
from precube.metadata.lookup_snapshot import LookupSnapshot

MAX_TIME = 2**63 - 1  # Java's Long.MAX_VALUE: the open end of a full build


def time_text(ms: int) -> str:
    """A time in epoch ms as UTC text for people: midnight as the date alone, milliseconds only when there
    are some, the open end as ∞."""
    if ms >= MAX_TIME:
        return "∞"
    at = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)  # exact, also before 1970
    text = at.strftime("%Y-%m-%d %H:%M:%S") + (f".{ms % 1000:03d}" if ms % 1000 else "")
    return text.removesuffix(" 00:00:00")


class TimeRange(BaseModel):
    """A half-open range `[start, end)` of epoch milliseconds (UTC), as Kylin's `SegmentRange`."""

    model_config = ConfigDict(frozen=True)

    date_range_start: int
    date_range_end: int

    @classmethod
    def of(cls, start: int, end: int) -> TimeRange:
        return cls(date_range_start=start, date_range_end=end)

    @classmethod
    def full(cls) -> TimeRange:
        return cls(date_range_start=0, date_range_end=MAX_TIME)

    @property
    def start(self) -> int:
        return self.date_range_start

    @property
    def end(self) -> int:
        return self.date_range_end

    @property
    def is_full(self) -> bool:
        return self.start <= 0 and self.end == MAX_TIME

    def __str__(self) -> str:
        """`[2024-01-01, 2024-02-01)`: the range as people read it (messages, listings)."""
        return f"[{time_text(self.start)}, {time_text(self.end)})"

    def overlaps(self, other: TimeRange) -> bool:
        return self.start < other.end and other.start < self.end

    def contains(self, other: TimeRange) -> bool:
        return self.start <= other.start and other.end <= self.end

    def connects(self, other: TimeRange) -> bool:
        return self.end == other.start

    def cover(self, other: TimeRange) -> TimeRange:
        return TimeRange.of(min(self.start, other.start), max(self.end, other.end))

    def __lt__(self, other: TimeRange) -> bool:
        return (self.start, self.end) < (other.start, other.end)


class SegmentStatus(StrEnum):
    NEW = "NEW"  # being built, refreshed or merged; not queryable
    READY = "READY"
    WARNING = "WARNING"  # queryable, but its layouts may disagree (e.g. built from different flat tables)


class DataflowStatus(StrEnum):
    ONLINE = "ONLINE"
    OFFLINE = "OFFLINE"
    WARNING = "WARNING"
    BROKEN = "BROKEN"


class DimensionRange(BaseModel):
    min: str | None = None
    max: str | None = None


class JoinStat(BaseModel):
    """One lookup join of a segment's flat table, as the build found it (issue 18): `orphans` fact rows
    whose joined-from row was there but found no lookup row (a LEFT join nulled them, an INNER one
    dropped them; a NULL foreign key counts), and `duplicate_keys` key values the lookup holds more than
    once (each multiplies the fact rows that join it)."""

    model_config = ConfigDict(frozen=True)

    orphans: int = 0
    duplicate_keys: int = 0

    @property
    def exact(self) -> bool:
        """INNER and LEFT give the same rows: every fact row finds exactly one lookup row."""
        return self.orphans == 0 and self.duplicate_keys == 0


class Segment(BaseModel):
    id: str = Field(default_factory=new_uuid)
    name: str
    create_time_utc: int = Field(default_factory=now_ms)
    status: SegmentStatus = SegmentStatus.NEW
    seg_range: TimeRange
    dimension_range_info_map: dict[str, DimensionRange] = Field(default_factory=dict)  # column id → range
    # precube: NULLs of each measure input column among the segment's flat rows (column id → count);
    # absent: not recorded (a segment built before, or a column no layout of the build read)
    column_null_counts: dict[str, int] = Field(default_factory=dict)
    last_build_time: int = 0  # when its data last changed (build, refresh, merge)
    source_count: int = -1
    source_bytes_size: int = -1
    additional_info: dict[str, str] = Field(default_factory=dict)
    lookup_snapshots: dict[str, LookupSnapshot] = Field(default_factory=dict)  # DB.TABLE → its snapshot
    # lookup join alias (upper case) → its stat; None: unknown (built before join stats were recorded)
    join_stats: dict[str, JoinStat] | None = None

    @property
    def range(self) -> TimeRange:
        return self.seg_range


class Dataflow(Entity):
    """The segments of one model; its `uuid` is the model's."""

    kind: ClassVar[str] = "dataflow"

    status: DataflowStatus = DataflowStatus.OFFLINE
    segments: list[Segment] = Field(default_factory=list)
    broken_reason: str | None = None  # SCHEMA, EVENT or None (seed 002 "Broken Model")
    broken_detail: str | None = None  # precube: what broke it, for people
    query_hit_count: int = 0

    def segment(self, segment_id: str) -> Segment | None:
        return next((s for s in self.segments if s.id == segment_id), None)


class LayoutInstance(BaseModel):
    """One layout built in one segment (Kylin's `NDataLayout`)."""

    layout_id: int
    build_job_id: str | None = None
    rows: int = 0
    byte_size: int = 0
    file_count: int = 0
    source_rows: int = 0
    source_byte_size: int = 0
    partition_num: int = 1
    partition_values: list[str] = Field(default_factory=list)
    is_ready: bool = False
    create_time: int = Field(default_factory=now_ms)


class SegmentDetails(Entity):
    """The layouts built in one segment; `uuid` is the segment id, `dataflow` the model's uuid."""

    kind: ClassVar[str] = "dataflow_details"

    dataflow: str
    layout_instances: list[LayoutInstance] = Field(default_factory=list)

    def key(self, project: str) -> str:
        return paths.entity_key(project, self.kind, self.dataflow, self.uuid, suffix=self.suffix)

    def resource_name(self) -> str:
        return self.uuid
