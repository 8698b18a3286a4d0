"""Source tables (`/{project}/table/{DB.TABLE}.json`) and their sampled stats (`table_exd`)."""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import ClassVar

from pydantic import BaseModel, Field, field_validator

from precube.metadata.entity import Entity


class SourceType(IntEnum):
    """Where a table's rows come from. Numbers follow Kylin's `ISourceAware` where Kylin has one."""

    HIVE = 0
    SPARK = 9  # a table of the Spark catalog
    CSV = 11  # precube: a directory of CSV files
    PARQUET = 12  # precube: a directory of Parquet files


class TableType(StrEnum):
    EXTERNAL = "EXTERNAL"
    MANAGED = "MANAGED"
    VIEW = "VIEW"


class Column(BaseModel):
    """One source column; `datatype` uses Kylin's names (integer, bigint, varchar(4096), decimal(15,2)…)."""

    id: str
    name: str
    datatype: str
    comment: str | None = None
    case_sensitive_name: str | None = None


class Table(Entity):
    """A source table's schema and where to read it from (`location`, `source_properties` are precube's)."""

    kind: ClassVar[str] = "table"

    name: str
    database: str
    columns: list[Column]
    source_type: SourceType
    table_type: TableType = TableType.EXTERNAL
    location: str | None = None
    source_properties: dict[str, str] = Field(default_factory=dict)
    transactional: bool = False
    table_comment: str | None = None

    @field_validator("name", "database")
    @classmethod
    def _upper(cls, v: str) -> str:
        return v.upper()

    @property
    def identity(self) -> str:
        return f"{self.database}.{self.name}"

    def resource_name(self) -> str:
        return self.identity

    def column(self, name: str) -> Column | None:
        upper = name.upper()
        return next((c for c in self.columns if c.name == upper), None)


class ColumnStats(BaseModel):
    """Sampled statistics of one column (Kylin's `TableExtDesc.ColumnStats`)."""

    column_name: str
    cardinality: int = 0
    null_count: int = 0
    min_value: str | None = None
    max_value: str | None = None
    max_numeral: float | None = None
    min_numeral: float | None = None
    max_length: int | None = None
    min_length: int | None = None
    max_length_value: str | None = None
    min_length_value: str | None = None
    data_skew_samples: dict[str, int] = Field(default_factory=dict)


class RowCountStatus(StrEnum):
    OK = "OK"  # total_rows is exact
    TENTATIVE = "TENTATIVE"  # total_rows is an estimate


class TableExt(Entity):
    """A table's sampled statistics; `table_name` is the table's `DB.TABLE` identity."""

    kind: ClassVar[str] = "table_exd"

    table_name: str
    last_build_job_id: str | None = None
    columns_stats: list[ColumnStats] = Field(default_factory=list)
    sample_rows: list[list[str | None]] = Field(default_factory=list)
    last_modified_time: int = 0
    total_rows: int = 0
    sampled_rows: int = 0  # precube: rows the column stats were computed over (<= total_rows)
    row_count_status: RowCountStatus | None = None
    data_source_properties: dict[str, str] = Field(default_factory=dict)
    query_hit_count: int = 0

    def resource_name(self) -> str:
        return self.table_name

    def stats(self, column: str) -> ColumnStats | None:
        upper = column.upper()
        return next((s for s in self.columns_stats if s.column_name == upper), None)
