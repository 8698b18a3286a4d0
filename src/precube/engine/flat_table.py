"""The flat table of one segment (seed 003 step 1): the fact table joined to the lookups the build
needs, computed columns evaluated, the model filter and the segment's range applied, and only the
needed columns kept, each named by its model column id (`columns.column`).

String dimensions of lookup tables can come out as integer codes instead (`encodable`, `Codes`), as
Kylin encodes dimensions: the codes are dense ranks of the lookup column's distinct values, so they
sort like the values; the join, shuffle, group-by and sort of the root layouts then move integers, and
the (much smaller) output is decoded before it is written. Layout files always hold raw values.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlglot import exp

from precube.metadata import JoinType, Model, Table, TimeRange
from precube.metadata import datatypes as dt
from precube.modeling.expressions import parse
from precube.modeling.partition_format import range_predicate
from precube.sources.source import source_for
from precube.storage import columns as names

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _needed_aliases(model: Model, refs: Collection[str]) -> list[str]:
    """Lookups to join: those whose columns are needed, every INNER lookup (it filters rows), and the
    lookups on the path from those to the fact table (snowflakes). LEFT lookups nobody reads are
    skipped: a many-to-one LEFT join cannot change the fact rows."""
    parent = {j.alias: j.join.foreign_key[0].split(".")[0] for j in model.join_tables}
    wanted = {r.split(".")[0] for r in refs} | {j.alias for j in model.join_tables if j.join.type is JoinType.INNER}
    closure: set[str] = set()
    for alias in wanted:
        while alias in parent and alias not in closure:
            closure.add(alias)
            alias = parent[alias]
    return [j.alias for j in model.join_tables if j.alias in closure]


@dataclass
class Codes:
    """Integer codes of some flat-table columns: flat column name → DataFrame(code int, value)."""

    tables: dict[str, DataFrame] = field(default_factory=dict)

    def decode(self, df: DataFrame) -> DataFrame:
        """`df` with every coded column replaced by its values, columns and row order unchanged (a
        broadcast join streams `df` in order, so a sorted frame stays sorted)."""
        from pyspark.sql import functions as F  # noqa: N812

        coded = [c for c in df.columns if c in self.tables]
        if not coded:
            return df
        out, order = df, list(df.columns)
        for name in coded:
            code, value = f"__code_{name}", f"__value_{name}"
            mapping = self.tables[name].select(F.col("code").alias(code), F.col("value").alias(value))
            out = out.join(F.broadcast(mapping), F.col(name) == F.col(code), "left")
        return out.select(*[F.col(f"__value_{c}").alias(c) if c in self.tables else F.col(c) for c in order])

    def release(self) -> None:
        for mapping in self.tables.values():
            mapping.unpersist()


# A lookup is coded only if Spark estimates it at most this big: each code table is broadcast.
ENCODE_MAX_BYTES = 256 * 2**20


def _broadcastable(df: DataFrame) -> bool:
    size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    return int(str(size)) <= ENCODE_MAX_BYTES  # a Scala BigInt: py4j may hand over an int or an object


def encodable(model: Model, column_ids: Collection[int], raw_ids: Collection[int]) -> set[int]:
    """Columns worth coding: plain string columns of lookup tables, unless some use needs their
    values in the flat table (`raw_ids`: measure inputs; also join keys, the filter, computed columns)."""
    by_id = {c.id: c for c in model.all_named_columns}
    computed = {f"{cc.table_alias}.{cc.column_name}" for cc in model.computed_columns}
    keys = {k for j in model.join_tables for k in (*j.join.foreign_key, *j.join.primary_key)}
    used = keys | filter_refs_of(model) | computed | {by_id[i].column for i in raw_ids if i in by_id}
    return {
        i
        for i in column_ids
        if i in by_id
        and by_id[i].column.split(".")[0] != model.root_alias
        and by_id[i].column not in used
        and dt.family(by_id[i].datatype) is dt.TypeFamily.STRING
    }


def flat_table(
    spark: SparkSession,
    model: Model,
    tables: Mapping[str, Table],
    column_ids: Collection[int],
    time_range: TimeRange | None,
    encode: Collection[int] = (),
) -> tuple[DataFrame, Codes]:
    """The flat rows of `time_range` (None or the full range: everything) with the given columns;
    those in `encode` (see `encodable`) as codes."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    by_id = {c.id: c for c in model.all_named_columns}
    computed = {f"{cc.table_alias}.{cc.column_name}": cc.inner_expression for cc in model.computed_columns}
    refs = {by_id[i].column for i in column_ids}
    cc_inputs = {r for r in refs if r in computed}
    filter_refs = filter_refs_of(model)
    aliases = _needed_aliases(model, (refs - cc_inputs) | filter_refs)
    alias_table = {model.root_alias: model.fact_table, **{j.alias: j.table for j in model.join_tables}}

    codes = Codes()
    coded = {by_id[i].column: i for i in encode if by_id[i].column in refs}

    def read(alias: str) -> DataFrame:
        table = tables[alias_table[alias].upper()]
        df = source_for(table).read(spark, table.columns)
        own = [(ref.split(".", 1)[1], cid) for ref, cid in coded.items() if ref.split(".", 1)[0] == alias]
        if not own or not _broadcastable(df):  # a big lookup's code tables might be too: keep its values
            return df.alias(alias)
        for column, cid in own:
            order = Window.orderBy(F.col("value").asc_nulls_first())
            mapping = df.select(F.col(column).alias("value")).distinct()
            # cached: the flat table and every root layout's decoding read it
            mapping = mapping.withColumn("code", F.dense_rank().over(order).cast("int")).persist()
            codes.tables[names.column(cid)] = mapping
            pairs = mapping.select(F.col("value").alias("__v"), F.col("code").alias("__c"))
            df = df.join(F.broadcast(pairs), F.col(column).eqNullSafe(F.col("__v")), "left")
            df = df.drop(column, "__v").withColumnRenamed("__c", column)
        # Spark cannot size a lookup joined to cached code tables, and would plan a shuffle of the fact
        # rows for a sort-merge join; it is known to be small enough to broadcast.
        return F.broadcast(df.alias(alias))

    df = read(model.root_alias)
    for join in model.join_tables:
        if join.alias not in aliases:
            continue
        cond = [F.col(fk) == F.col(pk) for fk, pk in zip(join.join.foreign_key, join.join.primary_key, strict=True)]
        how = "left" if join.join.type is JoinType.LEFT else "inner"
        df = df.join(read(join.alias), on=cond, how=how)
    if model.filter_condition:
        df = df.where(F.expr(model.filter_condition))
    partition = model.partition_desc
    if partition is not None and time_range is not None and not time_range.is_full:
        column = partition.partition_date_column
        datatype = model.column_by_ref(column).datatype
        predicate = range_predicate(column, time_range, partition.partition_date_format, datatype)
        if predicate:
            df = df.where(F.expr(predicate))
    selected = [
        (F.expr(computed[by_id[i].column]) if by_id[i].column in computed else F.col(by_id[i].column)).alias(
            names.column(i)
        )
        for i in sorted(column_ids)
    ]
    return df.select(*selected), codes


def filter_refs_of(model: Model) -> set[str]:
    """ALIAS.COLUMN references of the filter condition (it is stored with qualified columns)."""
    if not model.filter_condition:
        return set()
    tree = parse(model.filter_condition, "filter_condition")
    return {f"{c.table.upper()}.{c.name.upper()}" for c in tree.find_all(exp.Column) if c.table}
