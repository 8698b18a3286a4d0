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

from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING

from precube.engine.flat_table import filter_refs_of, joined_marker, orphan_count
from precube.engine.source_reads import SourceReads
from precube.metadata import JoinTable, Model, Segment, SegmentStatus, Table, TimeRange
from precube.metadata.dataflow import JoinStat
from precube.modeling.partition_format import range_predicate
from precube.storage.snapshots import source_fingerprint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def join_stats(
    reads: SourceReads,
    model: Model,
    time_range: TimeRange | None,
    orphans: Mapping[str, int] | None = None,
    duplicates: Mapping[str, int] | None = None,
) -> dict[str, JoinStat]:
    """Lookup alias (upper case) → its join's stat over the fact rows of `time_range` (None: all); the
    tables are read through the build's `reads` (the fact table's planned files only). `orphans` and
    `duplicates` (by alias as the model spells it) are counts already known — from the flat table's own pass
    (`FlatMetrics`), from an earlier segment over the same lookup files (`known_duplicates`): only the
    others are counted, in one job (none when all are known)."""
    from pyspark.sql import functions as F  # noqa: N812

    if not model.join_tables:
        return {}
    known_orphans, duplicate_counts = dict(orphans or {}), dict(duplicates or {})
    aliases_all = [j.alias for j in model.join_tables]
    if all(a in known_orphans and a in duplicate_counts for a in aliases_all):
        return {a.upper(): JoinStat(orphans=known_orphans[a], duplicate_keys=duplicate_counts[a]) for a in aliases_all}
    aliases = {model.root_alias, *(j.alias for j in model.join_tables)}
    partition = model.partition_desc
    # only keys (and what the filter and the partition range read) are read, unless the filter reads an
    # unqualified column (whose table is unknown): then whole rows
    refs = {k for j in model.join_tables for k in (*j.join.foreign_key, *j.join.primary_key)}
    filter_refs = filter_refs_of(model)
    whole = bool(model.filter_condition) and (
        not filter_refs or any(r.split(".", 1)[0] not in aliases for r in filter_refs)
    )
    refs |= filter_refs
    if partition is not None:
        refs.add(partition.partition_date_column)

    def read(alias: str) -> DataFrame:
        df = reads.alias(alias)
        if not whole:
            wanted = {r.split(".", 1)[1].upper() for r in refs if r.split(".", 1)[0].upper() == alias.upper()}
            df = df.select(*[c for c in df.columns if c.upper() in wanted])
        return df

    df = read(model.root_alias).alias(model.root_alias)
    for jt in model.join_tables:
        lookup = read(jt.alias).withColumn(joined_marker(jt.alias), F.lit(True)).alias(jt.alias)
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

    parts = [_duplicates(reads, jt) for jt in model.join_tables if jt.alias not in duplicate_counts]
    if not all(a in known_orphans for a in aliases_all):
        parts.insert(0, df.agg(*[orphan_count(model, a) for a in aliases_all]))
    row = reduce(lambda a, b: a.crossJoin(b), parts).first()
    assert row is not None
    found = row.asDict()
    return {
        a.upper(): JoinStat(
            orphans=int(found[f"orphans_{a}"] if f"orphans_{a}" in found else known_orphans[a]),
            duplicate_keys=int(found[f"duplicates_{a}"] if f"duplicates_{a}" in found else duplicate_counts[a]),
        )
        for a in aliases_all
    }


def duplicate_keys(reads: SourceReads, model: Model, aliases: Collection[str]) -> dict[str, int]:
    """Key values held more than once by each lookup of `aliases` (as the model spells them), in one job (none
    for no alias): they depend on the lookup alone, so a build counts them beside its layouts."""
    joins = [jt for jt in model.join_tables if jt.alias in aliases]
    if not joins:
        return {}
    row = reduce(lambda a, b: a.crossJoin(b), [_duplicates(reads, jt) for jt in joins]).first()
    assert row is not None  # global aggregates have one row
    return {jt.alias: int(row[f"duplicates_{jt.alias}"]) for jt in joins}


def _duplicates(reads: SourceReads, jt: JoinTable) -> DataFrame:
    """One row: how many key values lookup `jt` holds more than once (`duplicates_{alias}`)."""
    from pyspark.sql import functions as F  # noqa: N812

    keys = [F.col(pk.split(".", 1)[1]) for pk in jt.join.primary_key]
    not_null = reduce(lambda a, b: a & b, [k.isNotNull() for k in keys])
    grouped = reads.alias(jt.alias).where(not_null).groupBy(*keys).count().where(F.col("count") > 1)
    return grouped.agg(F.count(F.lit(1)).alias(f"duplicates_{jt.alias}"))


def known_duplicates(model: Model, tables: Mapping[str, Table], segments: Iterable[Segment]) -> dict[str, int]:
    """Duplicate keys per lookup join (by alias as the model spells it) that an earlier READY segment built
    from source (`segments`: no merged ones, whose counts are sums) counted over the same state of the
    lookup's files (its snapshot's fingerprint is the source's now): they depend on the lookup alone."""
    newest: dict[str, Segment] = {}
    for segment in segments:
        if segment.status is SegmentStatus.READY and segment.join_stats:
            for identity, snap in segment.lookup_snapshots.items():
                if identity not in newest or snap.create_time > newest[identity].lookup_snapshots[identity].create_time:
                    newest[identity] = segment
    found = {}
    for jt in model.join_tables:
        identity = jt.table.upper()
        source = newest.get(identity)
        if source is None or source.join_stats is None or jt.alias.upper() not in source.join_stats:
            continue
        table = tables.get(identity)
        fingerprint = source_fingerprint(table) if table is not None else None
        if fingerprint is not None and source.lookup_snapshots[identity].fingerprint == fingerprint:
            found[jt.alias] = source.join_stats[jt.alias.upper()].duplicate_keys
    return found


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
