"""Integer codes of lookup string columns, as Kylin encodes dimensions (`flat_table`'s `encode`): a column's
code table maps each distinct value of the lookup column to its position in Spark's order of the values
(NULL first, codes from 1), so codes sort like the values; the join, shuffle, group-by and sort of root
layouts then move integers, and the rows are decoded, already sorted, just before they are written.

Decoding is a projection, `element_at(values, code)` over the column's values as one literal array that Spark
folds into the plan: it keeps the rows' order (a join would not, and Spark drops a sort below a join), so a
layout is sorted on its codes. That literal travels with every task, so a column with more than
`CODE_MAX_VALUES` distinct values is not coded.

A code table depends on its lookup alone, not on the segment: `CodeTables` keeps each one while its source's
fingerprint (`storage.snapshots.source_fingerprint`: the files' paths, sizes and modification times, the
registered columns) is unchanged, so the segments built by one process compute it once. A source without a
fingerprint (a catalog table) gets a code table per build.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from precube.engine.sort_keys import IntRange, Packing, packing
from precube.metadata import Table
from precube.storage.snapshots import source_fingerprint

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

CODE_MAX_VALUES = 65_536  # more distinct values than this: the column keeps its values in the flat table
CODE_TABLE_JOBS = 4  # code tables made at once


@dataclass(frozen=True)
class CodeTable:
    """One lookup column's codes: `values` in Spark's order, NULL first; a value's code is its position + 1."""

    values: list[str | None]
    mapping: DataFrame  # (code int, value): what codes the lookup's rows, a local relation Spark can size
    literal: Column  # `values` as one array literal

    def decoded(self, code: Column) -> Column:
        """The value of `code` (NULL for a NULL code: a fact row no lookup row matched)."""
        from pyspark.sql import functions as F  # noqa: N812

        return F.element_at(self.literal, code)


@dataclass
class Codes:
    """What one build knows of its flat table's integer columns: the code tables of its coded columns, and
    the ranges of its integer columns (codes included) that pack into a sort key (`sort_keys`); by flat
    column name."""

    tables: dict[str, CodeTable] = field(default_factory=dict)
    ranges: dict[str, IntRange] = field(default_factory=dict)

    def add(self, column: str, table: CodeTable) -> None:
        self.tables[column] = table
        self.ranges[column] = IntRange(1, max(1, len(table.values)), "int")

    def packing(self, dims: Sequence[str]) -> Packing | None:
        """How the leading `dims` of a layout computed from the flat table pack into a sort key."""
        return packing(dims, self.ranges)

    def decode(self, df: DataFrame) -> DataFrame:
        """`df` with every coded column replaced by its values; the columns and the rows' order are kept."""
        from pyspark.sql import functions as F  # noqa: N812

        if not any(c in self.tables for c in df.columns):
            return df
        tables = self.tables
        return df.select(*[tables[c].decoded(F.col(c)).alias(c) if c in tables else F.col(c) for c in df.columns])


def code_table(spark: SparkSession, lookup: DataFrame, column: str) -> CodeTable | None:
    """The code table of one column of a lookup (one Spark job), None when it has more than `CODE_MAX_VALUES`
    distinct values."""
    import pyarrow as pa
    from pyspark.sql import functions as F  # noqa: N812

    distinct = lookup.select(F.col(column).cast("string").alias("value")).distinct()
    found = distinct.orderBy(F.col("value").asc_nulls_first()).limit(CODE_MAX_VALUES + 1).toArrow()
    if found.num_rows > CODE_MAX_VALUES:
        return None
    values: list[str | None] = found.column("value").to_pylist()
    rows = pa.table({"code": pa.array(range(1, len(values) + 1), pa.int32()), "value": pa.array(values, pa.string())})
    literal = F.from_json(F.lit(json.dumps(values)), "array<string>")  # constant-folded into one literal
    return CodeTable(values, spark.createDataFrame(rows), literal)


class CodeTables:
    """Code tables kept across builds while their lookup's source is unchanged; shared by the jobs of one
    process (`BuildContext.code_tables`)."""

    def __init__(self) -> None:
        # (table, column) → (fingerprint, codes; None: too many values to code)
        self._held: dict[tuple[str, str], tuple[str, CodeTable | None]] = {}
        self._lock = threading.Lock()

    def get(self, spark: SparkSession, table: Table, column: str, lookup: DataFrame) -> CodeTable | None:
        """The code table of `table.column` (`lookup`: its rows as this build reads them), None when the
        column is not worth coding."""
        fingerprint = source_fingerprint(table)
        if fingerprint is None:
            return code_table(spark, lookup, column)
        key = (table.identity, column)
        with self._lock:
            held = self._held.get(key)
        if held is not None and held[0] == fingerprint:
            return held[1]
        codes = code_table(spark, lookup, column)  # two builds may both make it: the same codes
        with self._lock:
            self._held[key] = (fingerprint, codes)
        return codes

    def get_all(self, spark: SparkSession, wanted: Sequence[tuple[Table, str, DataFrame]]) -> list[CodeTable | None]:
        """`get` of each (table, column, lookup); those not held are made side by side (a small Spark job each,
        which waits mostly on scheduling)."""
        if len(wanted) <= 1:
            return [self.get(spark, *item) for item in wanted]
        with ThreadPoolExecutor(min(len(wanted), CODE_TABLE_JOBS), thread_name_prefix="precube-codes") as pool:
            return list(pool.map(lambda item: self.get(spark, *item), wanted))

    def fingerprints(self) -> dict[tuple[str, str], str]:
        """(table, column) → the fingerprint of the lookup files each held code table was made from."""
        with self._lock:
            return {key: fingerprint for key, (fingerprint, _) in self._held.items()}
