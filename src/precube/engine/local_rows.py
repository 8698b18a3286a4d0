"""A tiny segment's source rows read on the driver and handed to Spark as one local relation (seed 003 step 1
for a day of a few thousand rows): the fact rows the plan's row groups hold within the range's bounds, and of
each lookup only the rows whose keys those rows join, joined there with Arrow as Spark would join them.

Spark then applies the model's filter, the range predicate and computed columns as before, but over rows it
already holds: no Parquet scan, no join, no broadcast (each build built PART's 200,000-row hash relation again,
then the four narrowed lookups', and re-planned after them), and the range predicate folded into the local rows
while planning, so the code Spark generates no longer holds each day's dates and is compiled once, not per
day. When the joined rows would be too many (`JOINED_MAX_VALUES`), Spark joins the local relations of the
tables instead (`flat_table`).

Only rows read exactly as Spark's reader reads them are read here (`TableSource.read_arrow`), at most
`LOCAL_MAX_VALUES` of the fact's; a lookup's rows are narrowed by key only where its keys and the joining
columns are of one Arrow type that compares as Spark compares (integers, strings, dates, booleans), so no row a
join would match is dropped, and Arrow's join then pairs the rows Spark's would. Anything else is read by Spark
as before.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from precube.engine.flat_table import joined_marker
from precube.engine.kept_lookups import ArrowRows
from precube.engine.source_reads import SourceReads
from precube.metadata import JoinType, Model

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# A segment's fact rows are read on the driver only up to this many values (rows times columns): a local
# relation travels inside Spark's plan and tasks.
LOCAL_MAX_VALUES = 1_000_000
# ... and joined there up to this many (rows times the joined tables' columns): each lookup adds its columns to
# every fact row, and a key held by several lookup rows multiplies them. Beyond it, Spark joins the tables.
JOINED_MAX_VALUES = 4 * LOCAL_MAX_VALUES


def _keyable(t: pa.DataType) -> bool:
    """Arrow types whose equality is Spark's join equality (not floating point: Spark equates NaNs and
    zeros of both signs)."""
    return any(kind(t) for kind in (pa.types.is_integer, pa.types.is_string, pa.types.is_date32, pa.types.is_boolean))


def _joined_rows(lookup: pa.Table, keys: list[tuple[pa.ChunkedArray, str]]) -> pa.Table | None:
    """The rows of `lookup` whose key columns each hold a value of the joining column beside it; None when a
    pair's types differ or do not compare as Spark's do (the lookup is then read whole by Spark)."""
    keep = None
    for values, column in keys:
        if column not in lookup.column_names:
            return None
        key = lookup[column]
        if key.type != values.type or not _keyable(key.type):
            return None
        mask = pc.is_in(key, value_set=pc.unique(values), skip_nulls=True)  # NULL keys join nothing
        keep = mask if keep is None else pc.and_(keep, mask)
    return lookup.filter(keep) if keep is not None else None


def _column(ref: str) -> str:
    """The column of an ALIAS.COLUMN reference, as the source tables name it."""
    return ref.split(".", 1)[1].upper()


def _positions(n: int) -> pa.Array:
    return pa.array(np.arange(n, dtype=np.int64))


def _index_pairs(left: list[pa.ChunkedArray], right: list[pa.ChunkedArray], how: str) -> tuple[pa.Array, pa.Array]:
    """Which row of `right` each row of `left` joins, as (left row, right row) index pairs in left order, by
    the equality of each pair of key columns (of one keyable type): NULL keys match nothing, a key on several
    right rows gives as many pairs, and a LEFT join (`how`: "left outer") pairs an unmatched row with NULL."""
    keys = [f"k{i}" for i in range(len(left))]
    lt = pa.table(dict(zip(keys, left, strict=True)) | {"__l": _positions(len(left[0]))})
    rt = pa.table(dict(zip(keys, right, strict=True)) | {"__r": _positions(len(right[0]))})
    pairs = lt.join(rt, keys, join_type=how).sort_by([("__l", "ascending"), ("__r", "ascending")])
    return pairs["__l"].combine_chunks(), pairs["__r"].combine_chunks()


@dataclass
class LocalRows:
    """The rows read on the driver by model alias (Arrow, with their Spark schemas), and Spark's local
    relations of them."""

    spark: SparkSession
    tables: dict[str, ArrowRows] = field(default_factory=dict)
    joined_rows: int | None = None  # the rows of `joined`, once made
    _frames: dict[str, DataFrame] = field(default_factory=dict)

    def frame(self, alias: str) -> DataFrame | None:
        """A local relation of `alias`'s rows; None when Spark reads them."""
        if alias not in self.tables:
            return None
        if alias not in self._frames:
            table, schema = self.tables[alias]
            self._frames[alias] = self.spark.createDataFrame(table, schema=schema)
        return self._frames[alias]

    def joined(self, model: Model, aliases: list[str], marked: Collection[str]) -> DataFrame | None:
        """The fact rows joined to the lookups `aliases` on the driver, as `flat_table`'s joins join them, in
        one local relation (no join, no broadcast in Spark's plan): a struct column per alias, so that
        "ALIAS.COLUMN" names its field as it names the column of a joined table, and the `joined_marker` of
        each alias in `marked`. None unless every one of these tables was read on the driver, or when the
        joined rows would hold more than `JOINED_MAX_VALUES`."""
        from pyspark.sql.types import BooleanType, StructField, StructType

        root = model.root_alias
        if any(alias not in self.tables for alias in (root, *aliases)):
            return None
        rows = {alias: table for alias, (table, _) in self.tables.items()}
        taken = {root: _positions(rows[root].num_rows)}  # each alias's row of each joined row
        for join in model.join_tables:
            if join.alias not in aliases:
                continue
            left, right = [], []
            for fk, pk in zip(join.join.foreign_key, join.join.primary_key, strict=True):
                left.append(rows[join.parent][_column(fk)].take(taken[join.parent]))
                right.append(rows[join.alias][_column(pk)])
            how = "left outer" if join.join.type is JoinType.LEFT else "inner"
            on_left, on_right = _index_pairs(left, right, how)
            taken = {alias: index.take(on_left) for alias, index in taken.items()} | {join.alias: on_right}
            if len(on_left) * sum(rows[alias].num_columns for alias in taken) > JOINED_MAX_VALUES:
                return None
        columns = {alias: rows[alias].take(taken[alias]).to_struct_array() for alias in taken}
        fields = [StructField(alias, self.tables[alias][1]) for alias in taken]
        for alias in marked:  # true where a row of the lookup joined, else NULL (as `flat_table` marks it)
            columns[joined_marker(alias)] = pc.if_else(pc.is_valid(taken[alias]), True, None)
            fields.append(StructField(joined_marker(alias), BooleanType()))
        table = pa.table(columns)
        self.joined_rows = table.num_rows
        return self.spark.createDataFrame(table, schema=StructType(fields))

    def describe(self) -> str:
        read = ", ".join(f"{alias} {table.num_rows:,} rows" for alias, (table, _) in self.tables.items())
        return read if self.joined_rows is None else f"{read}; joined there: {self.joined_rows:,} rows"


def local_rows(reads: SourceReads, model: Model, aliases: list[str]) -> LocalRows:
    """The fact table's rows and those of the joined lookups (`aliases`) that can be read on the driver; none
    when the fact's rows cannot (every table is then read by Spark)."""
    local = LocalRows(reads.spark)
    estimate, columns = reads.estimated_rows, len(reads.fact.columns)
    if estimate is None or estimate * columns > LOCAL_MAX_VALUES:
        return local
    fact = reads.fact_arrow()
    if fact is None or fact[0].num_rows * fact[0].num_columns > LOCAL_MAX_VALUES:
        return local
    local.tables[model.root_alias] = fact
    for join in model.join_tables:
        if join.alias not in aliases or join.parent not in local.tables:
            continue
        whole = reads.lookup_arrow(join.table)
        if whole is None:
            continue
        joining = local.tables[join.parent][0]
        pairs = []
        for fk, pk in zip(join.join.foreign_key, join.join.primary_key, strict=True):
            if _column(fk) not in joining.column_names:
                break
            pairs.append((joining[_column(fk)], _column(pk)))
        else:
            narrowed = _joined_rows(whole[0], pairs)
            if narrowed is not None:
                local.tables[join.alias] = (narrowed, whole[1])
    return local
