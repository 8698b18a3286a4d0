"""Model (seed 002 "Model Description"): fact and lookup tables, joins, named columns, computed
columns, measures, partition column and filter. Stored at `/{project}/model_desc/{uuid}.json`.

Field names follow Kylin 5's `NDataModel` JSON. Validation lives in `precube.modeling`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from pydantic import BaseModel, Field

from precube.metadata.entity import Entity
from precube.metadata.project import SegmentConfigOverride

MEASURE_ID_BASE = 100_000


class ColumnStatus(StrEnum):
    DIMENSION = "DIMENSION"  # a dimension of the model
    EXIST = "EXIST"  # a column of the model's tables, not a dimension
    TOMB = "TOMB"  # removed; its id is never reused


class JoinType(StrEnum):
    INNER = "INNER"
    LEFT = "LEFT"


class Join(BaseModel):
    """Equi-join keys: `foreign_key[i]` (on the table joined from) = `primary_key[i]` (on this lookup)."""

    type: JoinType = JoinType.LEFT
    primary_key: list[str]  # "ALIAS.COLUMN" on the lookup table
    foreign_key: list[str]  # "ALIAS.COLUMN" on the fact table or another lookup


class JoinTable(BaseModel):
    table: str  # DB.TABLE
    alias: str
    kind: str = "LOOKUP"
    join: Join
    # "flatten": joined into the flat table at build (precomputed); "normalized": joined at query time.
    flattenable: str = "flatten"
    join_relation_type: str = "MANY_TO_ONE"

    @property
    def parent(self) -> str:
        """The alias the join's foreign key is on: the fact table's, or another lookup's in a snowflake."""
        return self.join.foreign_key[0].split(".", 1)[0]


class NamedColumn(BaseModel):
    id: int
    name: str  # unique among the model's named columns; how queries and rules refer to it
    column: str  # "ALIAS.COLUMN"
    status: ColumnStatus = ColumnStatus.EXIST
    datatype: str = ""  # precube: the source type when the model was saved (detects incompatible reloads)


class ComputedColumn(BaseModel):
    """A SQL expression over the fact table, precomputed as if it were a column of it."""

    table_identity: str  # DB.TABLE of the fact table
    table_alias: str
    column_name: str
    expression: str  # as written, columns as ALIAS.COLUMN
    inner_expression: str = ""  # normalized by validation
    datatype: str = ""  # inferred by validation
    comment: str | None = None


class ParameterType(StrEnum):
    COLUMN = "column"
    CONSTANT = "constant"


class Parameter(BaseModel):
    type: ParameterType
    value: str  # "ALIAS.COLUMN" or a literal


class FunctionExpression(StrEnum):
    SUM = "SUM"
    COUNT = "COUNT"
    MIN = "MIN"
    MAX = "MAX"
    COUNT_DISTINCT = "COUNT_DISTINCT"
    TOP_N = "TOP_N"
    PERCENTILE_APPROX = "PERCENTILE_APPROX"


class Function(BaseModel):
    """A measure's aggregate. `returntype` as in Kylin: `bitmap` (precise count distinct), `hllc(p)`
    (approximate, precision p), `topn(n)`, `percentile(c)`, or the result type for plain aggregates."""

    expression: FunctionExpression
    parameters: list[Parameter]
    returntype: str = ""


class Measure(BaseModel):
    id: int  # from MEASURE_ID_BASE
    name: str
    function: Function
    comment: str | None = None
    tomb: bool = False  # removed; its id is never reused


class PartitionDesc(BaseModel):
    """The column that splits the model into time segments and how its values are written."""

    partition_date_column: str  # "ALIAS.COLUMN" on the fact table
    partition_date_format: str  # yyyyMMdd, yyyy-MM-dd, yyyy-MM-dd HH:mm:ss, ...
    partition_type: str = "APPEND"


class Model(Entity):
    """A star or snowflake schema and what it offers to precompute."""

    kind: ClassVar[str] = "model_desc"

    alias: str  # the model's name
    owner: str = "ADMIN"
    description: str = ""
    fact_table: str  # DB.TABLE
    fact_table_alias: str | None = None  # default: the table name
    management_type: str = "MODEL_BASED"
    join_tables: list[JoinTable] = Field(default_factory=list)
    filter_condition: str = ""
    partition_desc: PartitionDesc | None = None
    all_named_columns: list[NamedColumn] = Field(default_factory=list)
    all_measures: list[Measure] = Field(default_factory=list)
    computed_columns: list[ComputedColumn] = Field(default_factory=list)
    segment_config: SegmentConfigOverride | None = None  # per-model override of the project's
    semantic_version: int = 0
    model_type: str = "BATCH"

    @property
    def root_alias(self) -> str:
        return self.fact_table_alias or self.fact_table.split(".")[-1]

    def dimensions(self) -> list[NamedColumn]:
        return [c for c in self.all_named_columns if c.status is ColumnStatus.DIMENSION]

    def live_columns(self) -> list[NamedColumn]:
        return [c for c in self.all_named_columns if c.status is not ColumnStatus.TOMB]

    def column_by_name(self, name: str) -> NamedColumn | None:
        upper = name.upper()
        return next((c for c in self.live_columns() if c.name.upper() == upper), None)

    def column_by_ref(self, ref: str) -> NamedColumn:
        """The named column for an `ALIAS.COLUMN` reference stored in the model (measures, partition)."""
        col = next((c for c in self.all_named_columns if c.column == ref), None)
        if col is None:
            raise KeyError(f"model {self.alias} has no column {ref}")
        return col

    def column_by_id(self, column_id: int) -> NamedColumn | None:
        return next((c for c in self.all_named_columns if c.id == column_id), None)

    def measures(self) -> list[Measure]:
        return [m for m in self.all_measures if not m.tomb]

    def measure_by_id(self, measure_id: int) -> Measure | None:
        return next((m for m in self.all_measures if m.id == measure_id), None)

    def measure_by_name(self, name: str) -> Measure | None:
        upper = name.upper()
        return next((m for m in self.measures() if m.name.upper() == upper), None)
