"""The flat table of one segment (seed 003 step 1): the fact table joined to the lookups the build
needs, computed columns evaluated, the model filter and the segment's range applied, and only the
needed columns kept, each named by its model column id (`columns.column`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from sqlglot import exp

from precube.build import columns as names
from precube.metadata import JoinType, Model, Table, TimeRange
from precube.modeling.expressions import parse
from precube.modeling.partition_format import range_predicate
from precube.sources.source import source_for

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


def flat_table(
    spark: SparkSession,
    model: Model,
    tables: Mapping[str, Table],
    column_ids: Collection[int],
    time_range: TimeRange | None,
) -> DataFrame:
    """The flat rows of `time_range` (None or the full range: everything) with the given columns."""
    from pyspark.sql import functions as F  # noqa: N812

    by_id = {c.id: c for c in model.all_named_columns}
    computed = {f"{cc.table_alias}.{cc.column_name}": cc.inner_expression for cc in model.computed_columns}
    refs = {by_id[i].column for i in column_ids}
    cc_inputs = {r for r in refs if r in computed}
    filter_refs = _filter_refs(model)
    aliases = _needed_aliases(model, (refs - cc_inputs) | filter_refs)
    alias_table = {model.root_alias: model.fact_table, **{j.alias: j.table for j in model.join_tables}}

    def read(alias: str) -> DataFrame:
        table = tables[alias_table[alias].upper()]
        return source_for(table).read(spark, table.columns).alias(alias)

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
    return df.select(*selected)


def _filter_refs(model: Model) -> set[str]:
    """ALIAS.COLUMN references of the filter condition (it is stored with qualified columns)."""
    if not model.filter_condition:
        return set()
    tree = parse(model.filter_condition, "filter_condition")
    return {f"{c.table.upper()}.{c.name.upper()}" for c in tree.find_all(exp.Column) if c.table}
