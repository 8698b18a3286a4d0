"""IndexPlan (seed 002 "IndexPlan"): what to precompute for a model. Stored at
`/{project}/index_plan/{model uuid}.json`.

An *index* is a set of dimensions + measures; each of its *layouts* is one column order (with
shard/sort columns). Agg index ids are multiples of 10,000 from 0, layout id = index id + n (n ≥ 1);
table (detail) indexes start at 20,000,000,000. Layouts expanded from the aggregation groups are
kept materialized in `rule_based_indexes` (precube's addition; Kylin recomputes them), so every reader
sees the same ids without re-running the expansion.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, Field

from precube.metadata.entity import Entity, now_ms
from precube.metadata.model import MEASURE_ID_BASE

INDEX_ID_STEP = 10_000
TABLE_INDEX_START_ID = 20_000_000_000


def index_id_of(layout_id: int) -> int:
    return layout_id - layout_id % INDEX_ID_STEP


def is_table_index(index_or_layout_id: int) -> bool:
    return index_or_layout_id >= TABLE_INDEX_START_ID


class Layout(BaseModel):
    """One physical arrangement of an index: dims then measures in `col_order`."""

    id: int
    name: str | None = None
    owner: str | None = None
    col_order: list[int]
    shard_by_columns: list[int] = Field(default_factory=list)
    partition_by_columns: list[int] = Field(default_factory=list)
    sort_by_columns: list[int] = Field(default_factory=list)
    storage_type: int = 20
    update_time: int = Field(default_factory=now_ms)
    manual: bool = False  # defined by the user as an explicit index
    auto: bool = False  # proposed by a program
    base: bool = False  # a base agg or base table index

    @property
    def index_id(self) -> int:
        return index_id_of(self.id)

    @property
    def dimensions(self) -> list[int]:
        """The dimension columns, in column order (the order its rows are sorted by)."""
        return [i for i in self.col_order if i < MEASURE_ID_BASE]

    @property
    def is_table_index(self) -> bool:
        return is_table_index(self.id)


class Index(BaseModel):
    id: int
    dimensions: list[int]
    measures: list[int] = Field(default_factory=list)
    layouts: list[Layout] = Field(default_factory=list)
    next_layout_offset: int = 1

    @property
    def is_table_index(self) -> bool:
        return is_table_index(self.id)


class SelectRule(BaseModel):
    mandatory_dims: list[int] = Field(default_factory=list)
    hierarchy_dims: list[list[int]] = Field(default_factory=list)
    joint_dims: list[list[int]] = Field(default_factory=list)
    dim_cap: int | None = None


class AggregationGroup(BaseModel):
    includes: list[int]
    measures: list[int] = Field(default_factory=list)  # empty: all of the rule's measures
    select_rule: SelectRule = Field(default_factory=SelectRule)
    index_range: str = "BATCH"


class RuleBasedIndex(BaseModel):
    dimensions: list[int] = Field(default_factory=list)
    measures: list[int] = Field(default_factory=list)
    global_dim_cap: int | None = None
    aggregation_groups: list[AggregationGroup] = Field(default_factory=list)
    layout_id_mapping: list[int] = Field(default_factory=list)  # ids of the expanded layouts, in order
    parent_forward: int = 3
    index_start_id: int = 0
    last_modify_time: int = Field(default_factory=now_ms)
    layout_black_list: list[int] = Field(default_factory=list)
    scheduler_version: int = 2
    base_layout_enabled: bool | None = True


class IndexPlan(Entity):
    """What to precompute for one model; its `uuid` is the model's."""

    kind: ClassVar[str] = "index_plan"

    description: str = ""
    rule_based_index: RuleBasedIndex | None = None
    rule_based_indexes: list[Index] = Field(default_factory=list)
    indexes: list[Index] = Field(default_factory=list)  # explicit: base, manual agg and table indexes
    to_be_deleted_indexes: list[Index] = Field(default_factory=list)
    next_aggregation_index_id: int = 0
    next_table_index_id: int = TABLE_INDEX_START_ID
    override_properties: dict[str, str] = Field(default_factory=dict)

    def all_indexes(self) -> list[Index]:
        """Explicit and rule-based indexes (an index id appears once, its layouts merged)."""
        merged: dict[int, Index] = {}
        for index in [*self.indexes, *self.rule_based_indexes]:
            if index.id in merged:
                have = {lay.id for lay in merged[index.id].layouts}
                merged[index.id].layouts.extend(lay for lay in index.layouts if lay.id not in have)
            else:
                merged[index.id] = index.model_copy(deep=True)
        return sorted(merged.values(), key=lambda i: i.id)

    def all_layouts(self) -> list[Layout]:
        return [lay for index in self.all_indexes() for lay in index.layouts]

    def layout(self, layout_id: int) -> Layout | None:
        return next((lay for lay in self.all_layouts() if lay.id == layout_id), None)
