"""Metadata: versioned JSON documents keyed by path, project-scoped transactions, backup/restore.

Everything precube knows (projects, tables, models, index plans, dataflows, jobs) is an entity
stored as one JSON document under a Kylin 5 style key such as `/ssb/table/SSB.DATES.json`.
"""

from precube.metadata.entity import Entity
from precube.metadata.errors import (
    AlreadyExistsError,
    BackupFormatError,
    MetadataError,
    NotFoundError,
    StoreUnavailableError,
    VersionConflictError,
)
from precube.metadata.project import Project, SegmentConfig
from precube.metadata.store import MetadataStore, open_store
from precube.metadata.table import Column, ColumnStats, SourceType, Table, TableExt
from precube.metadata.transaction import Transaction

__all__ = [
    "AlreadyExistsError",
    "BackupFormatError",
    "Column",
    "ColumnStats",
    "Entity",
    "MetadataError",
    "MetadataStore",
    "NotFoundError",
    "Project",
    "SegmentConfig",
    "SourceType",
    "StoreUnavailableError",
    "Table",
    "TableExt",
    "Transaction",
    "VersionConflictError",
    "open_store",
]
