"""Metadata: versioned JSON documents keyed by path, project-scoped transactions, backup/restore.

Everything precube knows (projects, tables, models, index plans, dataflows, jobs) is an entity
stored as one JSON document under a Kylin 5 style key such as `/ssb/table/SSB.DATES.json`.
"""

from precube.metadata.dataflow import (
    Dataflow,
    DataflowStatus,
    LayoutInstance,
    Segment,
    SegmentDetails,
    SegmentStatus,
    TimeRange,
)
from precube.metadata.entity import Entity
from precube.metadata.errors import (
    AlreadyExistsError,
    BackupFormatError,
    MetadataError,
    NotFoundError,
    StoreUnavailableError,
    VersionConflictError,
)
from precube.metadata.index_plan import AggregationGroup, Index, IndexPlan, Layout, RuleBasedIndex, SelectRule
from precube.metadata.job import (
    InvalidJobStateError,
    Job,
    JobAction,
    JobLease,
    JobState,
    JobStats,
    JobStep,
    JobType,
    new_job_id,
)
from precube.metadata.model import (
    ColumnStatus,
    ComputedColumn,
    Function,
    FunctionExpression,
    Join,
    JoinTable,
    JoinType,
    Measure,
    Model,
    NamedColumn,
    Parameter,
    ParameterType,
    PartitionDesc,
)
from precube.metadata.project import (
    AutoMergeTimeRange,
    Project,
    RetentionRange,
    SegmentConfig,
    SegmentConfigOverride,
    VolatileRange,
)
from precube.metadata.store import MetadataStore, open_store
from precube.metadata.table import Column, ColumnStats, SourceType, Table, TableExt
from precube.metadata.transaction import Transaction

__all__ = [
    "AggregationGroup",
    "AlreadyExistsError",
    "AutoMergeTimeRange",
    "BackupFormatError",
    "Column",
    "ColumnStats",
    "ColumnStatus",
    "ComputedColumn",
    "Dataflow",
    "DataflowStatus",
    "Entity",
    "Function",
    "FunctionExpression",
    "Index",
    "IndexPlan",
    "InvalidJobStateError",
    "Job",
    "JobAction",
    "JobLease",
    "JobState",
    "JobStats",
    "JobStep",
    "JobType",
    "Join",
    "JoinTable",
    "JoinType",
    "Layout",
    "LayoutInstance",
    "Measure",
    "MetadataError",
    "MetadataStore",
    "Model",
    "NamedColumn",
    "NotFoundError",
    "Parameter",
    "ParameterType",
    "PartitionDesc",
    "Project",
    "RetentionRange",
    "RuleBasedIndex",
    "Segment",
    "SegmentConfig",
    "SegmentConfigOverride",
    "SegmentDetails",
    "SegmentStatus",
    "SelectRule",
    "SourceType",
    "StoreUnavailableError",
    "Table",
    "TableExt",
    "TimeRange",
    "Transaction",
    "VersionConflictError",
    "VolatileRange",
    "new_job_id",
    "open_store",
]
