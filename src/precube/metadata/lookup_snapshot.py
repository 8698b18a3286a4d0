"""A lookup table's snapshot as a segment records it (Kylin's lookup table snapshots): the Parquet copy of
the model's columns of the table, written by a build, and the fingerprint of the source it was read from."""

from __future__ import annotations

from pydantic import BaseModel, Field

from precube.metadata.entity import now_ms


class LookupSnapshot(BaseModel):
    """One snapshot of one lookup table (`Segment.lookup_snapshots[DB.TABLE]`)."""

    key: str  # its directory under the model's `snapshot/{DB.TABLE}/` (`storage.snapshots.snapshot_path`)
    fingerprint: str  # the source's files, schema and read options when it was taken (`source_fingerprint`)
    columns: list[str]  # the source columns it holds (upper case), the model's columns of the table
    rows: int = 0
    create_time: int = Field(default_factory=now_ms)
