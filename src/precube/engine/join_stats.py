"""A segment's join statistics (issue 18): for every lookup join of the model, how many fact rows of the
segment found no lookup row, and how many key values the lookup holds more than once. They let the query
path prove that a query's INNER join equals the model's LEFT one (or that a left-out INNER join dropped
nothing), segment by segment.

One small Spark job, apart from the layouts: the fact rows of the segment (range and model filter
applied) are joined to every lookup with LEFT joins, whatever the model's join types, reading only the
key columns (the lookups are small, so Spark broadcasts them and the job is one streaming scan of the
fact's key columns with a global sum); each lookup row carries a marker, and a join's orphans are the
rows whose joined-from row is there (the fact's, or the parent lookup's in a snowflake) and whose
marker is NULL. An INNER model's build drops exactly these rows. Each lookup's duplicate keys are a
group-by of its key columns; all the counts come back in one row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING

from precube.engine.flat_table import filter_refs_of
from precube.metadata import Model, Table, TimeRange
from precube.metadata.dataflow import JoinStat
from precube.modeling.partition_format import range_predicate
from precube.sources.source import source_for

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


def _marker(alias: str) -> str:
    return f"__joined_{alias}"


def join_stats(
    spark: SparkSession, model: Model, tables: Mapping[str, Table], time_range: TimeRange | None
) -> dict[str, JoinStat]:
    """Lookup alias (upper case) → its join's stat over the fact rows of `time_range` (None: all)."""
    from pyspark.sql import functions as F  # noqa: N812

    if not model.join_tables:
        return {}
    alias_table = {model.root_alias: model.fact_table, **{j.alias: j.table for j in model.join_tables}}
    partition = model.partition_desc
    # only keys (and what the filter and the partition range read) are read, unless the filter reads an
    # unqualified column (whose table is unknown): then whole rows
    refs = {k for j in model.join_tables for k in (*j.join.foreign_key, *j.join.primary_key)}
    filter_refs = filter_refs_of(model)
    whole = bool(model.filter_condition) and (
        not filter_refs or any(r.split(".", 1)[0] not in alias_table for r in filter_refs)
    )
    refs |= filter_refs
    if partition is not None:
        refs.add(partition.partition_date_column)

    def read(alias: str) -> DataFrame:
        table = tables[alias_table[alias].upper()]
        df = source_for(table).read(spark, table.columns)
        if not whole:
            wanted = {r.split(".", 1)[1].upper() for r in refs if r.split(".", 1)[0].upper() == alias.upper()}
            df = df.select(*[c for c in df.columns if c.upper() in wanted])
        return df

    df = read(model.root_alias).alias(model.root_alias)
    for jt in model.join_tables:
        lookup = read(jt.alias).withColumn(_marker(jt.alias), F.lit(True)).alias(jt.alias)
        cond = [F.col(fk) == F.col(pk) for fk, pk in zip(jt.join.foreign_key, jt.join.primary_key, strict=True)]
        df = df.join(lookup, on=cond, how="left")
    if model.filter_condition:
        df = df.where(F.expr(model.filter_condition))
    if partition is not None and time_range is not None and not time_range.is_full:
        column = partition.partition_date_column
        predicate = range_predicate(
            column, time_range, partition.partition_date_format, model.column_by_ref(column).datatype
        )
        if predicate:
            df = df.where(F.expr(predicate))

    def orphan(alias: str) -> Column:
        parent = next(j for j in model.join_tables if j.alias == alias).join.foreign_key[0].split(".", 1)[0]
        missing = F.col(_marker(alias)).isNull()
        if parent != model.root_alias:  # a snowflake edge: only rows that reached its parent lookup
            missing = missing & F.col(_marker(parent)).isNotNull()
        return F.coalesce(F.sum(missing.cast("long")), F.lit(0)).alias(f"orphans_{alias}")

    parts = [df.agg(*[orphan(j.alias) for j in model.join_tables])]
    for jt in model.join_tables:
        keys = [F.col(pk.split(".", 1)[1]) for pk in jt.join.primary_key]
        not_null = reduce(lambda a, b: a & b, [k.isNotNull() for k in keys])
        grouped = read(jt.alias).where(not_null).groupBy(*keys).count().where(F.col("count") > 1)
        parts.append(grouped.agg(F.count(F.lit(1)).alias(f"duplicates_{jt.alias}")))
    row = reduce(lambda a, b: a.crossJoin(b), parts).first()
    assert row is not None
    return {
        j.alias.upper(): JoinStat(
            orphans=int(row[f"orphans_{j.alias}"]), duplicate_keys=int(row[f"duplicates_{j.alias}"])
        )
        for j in model.join_tables
    }


def merged_join_stats(stats: Iterable[dict[str, JoinStat] | None]) -> dict[str, JoinStat] | None:
    """The stats of a segment merged from segments with these stats: per join, the sums (None if any
    segment's are unknown; a join some segment has no stat for is left out, i.e. unknown)."""
    found: Sequence[dict[str, JoinStat] | None] = list(stats)
    if not found or any(s is None for s in found):
        return None
    known = [s for s in found if s is not None]
    aliases = set.intersection(*(set(s) for s in known))
    return {
        alias: JoinStat(
            orphans=sum(s[alias].orphans for s in known), duplicate_keys=sum(s[alias].duplicate_keys for s in known)
        )
        for alias in sorted(aliases)
    }
