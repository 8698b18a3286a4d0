"""What a user writes to define a model (JSON or YAML), after Kylin 5's `POST /api/models` body.

    alias: ssb
    fact_table: SSB.LINEORDER
    join_tables:
      - {table: SSB.DATES, alias: DATES, join: {type: LEFT, foreign_key: [LINEORDER.LO_ORDERDATE],
                                                primary_key: [DATES.D_DATEKEY]}}
    computed_columns: [{column_name: V_REVENUE, expression: LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT}]
    simplified_dimensions: [DATES.D_YEAR, {column: LINEORDER.LO_ORDERDATE, name: ORDER_DATE}]
    simplified_measures:
      - {name: REVENUE, expression: SUM, column: LINEORDER.LO_REVENUE}
      - {name: CUSTOMERS, expression: COUNT_DISTINCT, column: LINEORDER.LO_CUSTKEY, return_type: bitmap}
    partition_desc: {partition_date_column: LINEORDER.LO_ORDERDATE, partition_date_format: yyyy-MM-dd}
    filter_condition: LINEORDER.LO_QUANTITY > 0
    aggregation_groups: [{includes: [D_YEAR, ...], select_rule: {mandatory_dims: [D_YEAR]}}]

`aggregation_groups` name dimensions and measures by name (precube's addition; Kylin's REST takes ids).
A measure takes Kylin's `parameter_value` list or the `column` shorthand; COUNT without one is COUNT(*).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator

from precube.metadata import Join, JoinTable, Parameter, ParameterType, PartitionDesc, SegmentConfigOverride
from precube.modeling.errors import InvalidModelError

_M = TypeVar("_M", bound=BaseModel)


class DimensionSpec(BaseModel):
    column: str  # ALIAS.COLUMN
    name: str | None = None  # default: the column name (ALIAS_COLUMN when ambiguous)


class MeasureSpec(BaseModel):
    name: str
    expression: str  # SUM, COUNT, MIN, MAX, COUNT_DISTINCT, TOP_N, PERCENTILE_APPROX
    parameter_value: list[Parameter] = Field(default_factory=list)
    column: str | None = None  # shorthand for one column parameter
    return_type: str = ""  # bitmap | hllc(p) | topn(n) | percentile(c); inferred otherwise
    comment: str | None = None

    def parameters(self) -> list[Parameter]:
        if self.column is not None and self.parameter_value:
            raise InvalidModelError(f"measure {self.name}: give either column or parameter_value, not both")
        if self.column is not None:
            return [Parameter(type=ParameterType.COLUMN, value=self.column)]
        return list(self.parameter_value)


class ComputedColumnSpec(BaseModel):
    column_name: str
    expression: str
    datatype: str | None = None  # the column's type: the expression is cast to it (default: the inferred type)
    comment: str | None = None


class SelectRuleSpec(BaseModel):
    mandatory_dims: list[str] = Field(default_factory=list)
    hierarchy_dims: list[list[str]] = Field(default_factory=list)
    joint_dims: list[list[str]] = Field(default_factory=list)
    dim_cap: int | None = None


class AggregationGroupSpec(BaseModel):
    includes: list[str]
    measures: list[str] = Field(default_factory=list)  # empty: all measures
    select_rule: SelectRuleSpec = Field(default_factory=SelectRuleSpec)


BaseIndexType = Literal["BASE_AGG_INDEX", "BASE_TABLE_INDEX"]


class ModelSpec(BaseModel):
    """A model as a user writes it; `build_model` turns it into a validated `Model`."""

    model_config = {"extra": "forbid"}

    alias: str
    description: str = ""
    fact_table: str
    fact_table_alias: str | None = None
    join_tables: list[JoinTable] = Field(default_factory=list)
    computed_columns: list[ComputedColumnSpec] = Field(default_factory=list)
    simplified_dimensions: list[DimensionSpec] = Field(default_factory=list)
    simplified_measures: list[MeasureSpec] = Field(default_factory=list)
    partition_desc: PartitionDesc | None = None
    filter_condition: str = ""
    segment_config: SegmentConfigOverride | None = None
    aggregation_groups: list[AggregationGroupSpec] = Field(default_factory=list)
    global_dim_cap: int | None = None
    base_layout_enabled: bool | None = None  # the groups' base layout (all their dimensions); None: as before
    # Kylin's `base_index_type`: which base indexes the model keeps. None: both for a new model; on update,
    # those the model already has (a base index the user removed is not brought back).
    base_index_type: list[BaseIndexType] | None = None

    @field_validator("simplified_dimensions", mode="before")
    @classmethod
    def _dimension_shorthand(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"column": v} if isinstance(v, str) else v for v in value]
        return value


class RulesSpec(BaseModel):
    """Aggregation groups on their own (`precube index preview|set-rules FILE`)."""

    model_config = {"extra": "forbid"}

    aggregation_groups: list[AggregationGroupSpec]
    global_dim_cap: int | None = None
    # Kylin's rule field: whether the groups also yield their base layout (every dimension of them, every
    # measure); None keeps the model's current choice (yes for a model without rules)
    base_layout_enabled: bool | None = None


def read_document(path: Path) -> Any:
    """The data in a `.json`, `.yaml` or `.yml` file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidModelError(f"cannot read {path}: {err.strerror}") from err
    import yaml  # here: only a model file needs it, not a query's process

    try:
        return json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as err:
        raise InvalidModelError(f"{path} is not valid {path.suffix.lstrip('.').upper() or 'YAML'}: {err}") from err


def load_spec(path: Path) -> ModelSpec:
    """Read a model spec from a `.json`, `.yaml` or `.yml` file."""
    return parse_spec(read_document(path), str(path))


def load_rules(path: Path) -> RulesSpec:
    return _validate(RulesSpec, read_document(path), str(path))


def parse_spec(data: Any, source: str = "model") -> ModelSpec:
    return _validate(ModelSpec, data, source)


def _validate(cls: type[_M], data: Any, source: str) -> _M:
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        prefix = f"{source}: " if source else ""
        found = [f"{prefix}{spec_path(e['loc']) or 'document'}: {e['msg']}" for e in err.errors()]
        raise InvalidModelError.of(found) from err


def spec_path(loc: tuple[int | str, ...]) -> str:
    """A place in a spec as the user finds it in the file: `simplified_measures[3].expression`."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")


__all__ = [
    "AggregationGroupSpec",
    "DimensionSpec",
    "Join",
    "MeasureSpec",
    "ModelSpec",
    "RulesSpec",
    "load_rules",
    "load_spec",
    "parse_spec",
]
