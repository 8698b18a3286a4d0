"""The source tables one build operation reads: each read once (the flat table, the join statistics and the
lookup snapshots share its DataFrame, so Spark resolves each source once), and the fact table only from the
files that can hold the segment's range.

The range's bounds are the values the flat table's range predicate compares the partition column with
(`partition_format.range_bounds`, typed as the column holds them: `yyyyMMdd` integers, formatted strings,
dates, timestamps), so the files kept are a superset of the files holding a row of the segment, whatever the
column's format; the row-level predicate stays, and keeps the result exact. How much the plan skipped is part
of the build's report (`BuildReport.scans`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from precube.engine.kept_lookups import ARROW_MAX_VALUES, ArrowRows, KeptLookups
from precube.errors import PrecubeError
from precube.metadata import Model, Table, TimeRange
from precube.modeling.partition_format import range_bounds, to_epoch_ms
from precube.sources.scan_plan import ColumnRange, ScanPlan, Value
from precube.sources.source import source_for

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class SourceReads:
    """The reads of one build of `time_range` (None or full: every row) of `model`."""

    def __init__(
        self,
        spark: SparkSession,
        model: Model,
        tables: Mapping[str, Table],
        time_range: TimeRange | None,
        kept: KeptLookups | None = None,
    ) -> None:
        self.spark, self.model, self.tables, self.kept = spark, model, tables, kept
        self._frames: dict[str, DataFrame] = {}
        self.fact = tables[model.fact_table.upper()]
        found = _range(model, time_range)
        self.range = found[0] if found is not None else None
        ranged = model.partition_desc is not None and time_range is not None and not time_range.is_full
        self.plan: ScanPlan | None = _plan(self.fact, ranged, found)

    def table(self, identity: str) -> DataFrame:
        """The rows of table `identity` (DB.TABLE) with the registered names and types; the fact table's
        from the planned files only."""
        key = identity.upper()
        if key not in self._frames:
            table = self.tables[key]
            source = source_for(table)
            if key == self.fact.identity and self.plan is not None:
                self._frames[key] = source.read_files(self.spark, table.columns, self.plan.files)
            elif key != self.fact.identity and self.kept is not None:  # a lookup: kept while its files are unchanged
                self._frames[key] = self.kept.get(table, lambda: source.read(self.spark, table.columns))
            else:
                self._frames[key] = source.read(self.spark, table.columns)
        return self._frames[key]

    def alias(self, alias: str) -> DataFrame:
        """The rows of the table behind a model alias (the fact table's or a lookup's)."""
        return self.table(self._table_of(alias).identity)

    def integer_ranges(self, alias: str, columns: Sequence[str]) -> dict[str, tuple[int, int]]:
        """(min, max) of the integer `columns` of the table behind `alias` that its files' statistics bound
        (the fact table's planned files only)."""
        table = self._table_of(alias)
        files = self.plan.files if table is self.fact and self.plan is not None else None
        return source_for(table).integer_ranges(columns, files)

    def _table_of(self, alias: str) -> Table:
        if alias.upper() == self.model.root_alias.upper():
            return self.fact
        join = next(j for j in self.model.join_tables if j.alias.upper() == alias.upper())
        return self.tables[join.table.upper()]

    def fact_arrow(self) -> ArrowRows | None:
        """The fact rows the plan reads that may fall in the range, read on the driver
        (`TableSource.read_arrow`); None when Spark must read them."""
        if self.plan is None:
            return None
        return source_for(self.fact).read_arrow(self.plan.files, self.range)

    def lookup_arrow(self, identity: str) -> ArrowRows | None:
        """The rows of lookup `identity` on the driver, kept across builds (`KeptLookups.arrow`); None when
        Spark must read them, or they are more than `ARROW_MAX_VALUES`."""
        table = self.tables[identity.upper()]
        if self.kept is None:
            return None
        return self.kept.arrow(table, lambda: source_for(table).read_arrow(None, None, ARROW_MAX_VALUES))

    @property
    def estimated_rows(self) -> int | None:
        """The fact rows the segment is expected to hold, from the plan (None: unknown)."""
        return self.plan.estimated_rows if self.plan is not None else None

    @property
    def most_rows(self) -> int | None:
        """The rows of the fact table's row groups the plan reads: at most that many are the segment's (None:
        unknown); a lookup joined many-to-one adds none."""
        return self.plan.rows_read if self.plan is not None else None


def _range(model: Model, time_range: TimeRange | None) -> tuple[ColumnRange, Callable[[str], Value]] | None:
    """The fact column's range of `time_range` and how its partition directories read, when the partition
    column is a column of the fact table's files."""
    partition = model.partition_desc
    if partition is None or time_range is None or time_range.is_full:
        return None
    ref = partition.partition_date_column
    alias, column = ref.split(".", 1)
    computed = {f"{cc.table_alias}.{cc.column_name}".upper() for cc in model.computed_columns}
    if alias.upper() != model.root_alias.upper() or ref.upper() in computed:
        return None  # not a column of the fact table's files: nothing to prune by
    fmt, datatype = partition.partition_date_format, model.column_by_ref(ref).datatype
    bounds = range_bounds(time_range, fmt, datatype)
    if bounds is None:
        return None
    low, high = bounds
    return ColumnRange(column, low, high, _position(fmt)), _parser(low)


def _plan(fact: Table, ranged: bool, found: tuple[ColumnRange, Callable[[str], Value]] | None) -> ScanPlan | None:
    """The plan of the fact table's files for a range (`ranged`: not every row) found by `_range`."""
    if ranged and found is None:
        return None  # nothing to prune by
    rng, parse = found if found is not None else (None, None)
    plan = source_for(fact).plan(rng, parse)
    return dataclasses.replace(plan, table=fact.identity) if plan is not None else None


def _position(fmt: str) -> Callable[[Value], float]:
    """A partition value's place on the time line (epoch ms), to estimate a row group's share of a range."""

    def position(value: Value) -> float:
        try:
            return float(to_epoch_ms(value, fmt))
        except PrecubeError as err:  # a value not in the format: no place on the line
            raise ValueError(str(err)) from err

    return position


def _parser(like: Value) -> Callable[[str], Value]:
    """How a partition directory's text reads as a value of the bounds' type."""
    if isinstance(like, dt.datetime):
        return dt.datetime.fromisoformat
    if isinstance(like, dt.date):
        return dt.date.fromisoformat
    if isinstance(like, int):
        return int
    return str
