"""Project: the unit of isolation (seed 002 "Brief Summary"), and its segment settings."""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, Field

from precube.metadata import paths
from precube.metadata.entity import Entity, now_ms


class AutoMergeTimeRange(StrEnum):
    """Kylin's `AutoMergeTimeEnum`, in sort order."""

    HOUR = "HOUR"
    SIX_HOUR = "SIX_HOUR"
    HALF_DAY = "HALF_DAY"
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"
    QUARTER = "QUARTER"
    YEAR = "YEAR"


class VolatileRange(BaseModel):
    volatile_range_number: int = 0
    volatile_range_enabled: bool = False
    volatile_range_type: AutoMergeTimeRange = AutoMergeTimeRange.DAY


class RetentionRange(BaseModel):
    retention_range_number: int = 1
    retention_range_enabled: bool = False
    retention_range_type: AutoMergeTimeRange = AutoMergeTimeRange.MONTH


class SegmentConfig(BaseModel):
    """Auto-merge, volatile range and retention (reference §1.1). Project defaults as in Kylin 5."""

    auto_merge_enabled: bool = False
    auto_merge_time_ranges: list[AutoMergeTimeRange] = Field(
        default_factory=lambda: [
            AutoMergeTimeRange.WEEK,
            AutoMergeTimeRange.MONTH,
            AutoMergeTimeRange.QUARTER,
            AutoMergeTimeRange.YEAR,
        ]
    )
    # seed 001 §4.4 (Kylin 3/4): merge by durations (e.g. 7 and 28 days, in ms) instead of calendar levels
    auto_merge_thresholds_ms: list[int] = Field(default_factory=list)
    volatile_range: VolatileRange = Field(default_factory=VolatileRange)
    retention_range: RetentionRange = Field(default_factory=RetentionRange)
    create_empty_segment_enabled: bool = False


class SegmentConfigOverride(BaseModel):
    """A model's `segment_config`: each field left None takes the project's value (Kylin's
    `NSegmentConfigHelper.getModelSegmentConfig` merges field by field)."""

    auto_merge_enabled: bool | None = None
    auto_merge_time_ranges: list[AutoMergeTimeRange] | None = None
    auto_merge_thresholds_ms: list[int] | None = None
    volatile_range: VolatileRange | None = None
    retention_range: RetentionRange | None = None
    create_empty_segment_enabled: bool | None = None

    def over(self, base: SegmentConfig) -> SegmentConfig:
        """The effective settings: this override's fields that are set, the project's for the others."""
        return base.model_copy(update={k: v for k, v in self if v is not None}, deep=True)


class ProjectStatus(StrEnum):
    ENABLED = "ENABLED"
    DISABLED = "DISABLED"


class Project(Entity):
    """A project: stored globally at `/_global/project/{name}.json`; its documents live under `/{name}/`."""

    kind: ClassVar[str] = "project"

    name: str
    owner: str = "ADMIN"
    status: ProjectStatus = ProjectStatus.ENABLED
    create_time_utc: int = Field(default_factory=now_ms)
    default_database: str = "DEFAULT"
    description: str = ""
    maintain_model_type: str = "MANUAL_MAINTAIN"
    override_kylin_properties: dict[str, str] = Field(default_factory=dict)
    segment_config: SegmentConfig = Field(default_factory=SegmentConfig)

    def resource_name(self) -> str:
        return self.name

    def key(self, project: str = "") -> str:
        return paths.project_key(self.name)
