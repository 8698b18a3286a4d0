"""The flat table of one segment (seed 003 step 1): the fact table joined to the lookups the build
needs, computed columns evaluated, the model filter and the segment's range applied, and only the
needed columns kept, each named by its model column id (`columns.column`).

String dimensions of lookup tables can come out as integer codes instead (`encodable`, `code_tables`).
Layout files always hold raw values. The tables are read through the build's `SourceReads`: the fact
table from the files that can hold the segment's range only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from precube.engine.code_tables import Codes, CodeTable, CodeTables
from precube.engine.source_reads import SourceReads
from precube.metadata import JoinType, Model, Table, TimeRange
from precube.metadata import datatypes as dt
from precube.modeling.expressions import parse
from precube.modeling.partition_format import range_predicate
from precube.storage import columns as names

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from precube.engine.local_rows import LocalRows


def _needed_aliases(model: Model, refs: Collection[str]) -> list[str]:
    """Lookups to join: those whose columns are needed, every INNER lookup (it filters rows), and the
    lookups on the path from those to the fact table (snowflakes). LEFT lookups nobody reads are
    skipped: a many-to-one LEFT join cannot change the fact rows."""
    parent = {j.alias: j.parent for j in model.join_tables}
    wanted = {r.split(".")[0] for r in refs} | {j.alias for j in model.join_tables if j.join.type is JoinType.INNER}
    closure: set[str] = set()
    for alias in wanted:
        while alias in parent and alias not in closure:
            closure.add(alias)
            alias = parent[alias]
    return [j.alias for j in model.join_tables if j.alias in closure]


# A lookup is coded only if Spark estimates it at most this big: each code table is broadcast.
ENCODE_MAX_BYTES = 256 * 2**20


def _broadcastable(df: DataFrame) -> bool:
    size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    return int(str(size)) <= ENCODE_MAX_BYTES  # a Scala BigInt: py4j may hand over an int or an object


def encodable(model: Model, column_ids: Collection[int], raw_ids: Collection[int]) -> set[int]:
    """Columns worth coding: plain string columns of lookup tables, unless some use needs their
    values in the flat table (`raw_ids`: measure inputs; also join keys, the filter, computed columns)."""
    by_id = {c.id: c for c in model.all_named_columns}
    computed = computed_inputs(model)
    keys = {k for j in model.join_tables for k in (*j.join.foreign_key, *j.join.primary_key)}
    used = keys | filter_refs_of(model) | set(computed).union(*computed.values())
    used |= {by_id[i].column for i in raw_ids if i in by_id}
    return {
        i
        for i in column_ids
        if i in by_id
        and by_id[i].column.split(".")[0] != model.root_alias
        and by_id[i].column not in used
        and dt.family(by_id[i].datatype) is dt.TypeFamily.STRING
    }


def joined_marker(alias: str) -> str:
    """A column that is true in a lookup's rows, so NULL after a LEFT join where no lookup row matched."""
    return f"__joined_{alias}"


def orphan_count(model: Model, alias: str) -> Column:
    """The rows (of a frame joined with `joined_marker`s) that found no row of lookup `alias`; at a snowflake
    edge, of the rows that reached its parent lookup."""
    from pyspark.sql import functions as F  # noqa: N812

    parent = next(j for j in model.join_tables if j.alias == alias).parent
    missing = F.col(joined_marker(alias)).isNull()
    if parent != model.root_alias:
        missing = missing & F.col(joined_marker(parent)).isNotNull()
    return F.coalesce(F.sum(missing.cast("long")), F.lit(0)).alias(f"orphans_{alias}")


class FlatMetrics:
    """What the flat table's first full pass counts on the way, with no job of its own (a Spark
    `Observation`): its rows, the non-NULL values of some columns (model column ids), and, when every join
    of the model is LEFT and made, each join's orphan rows as `join_stats` counts them."""

    def __init__(self, columns: Collection[int]) -> None:
        self.columns = sorted(columns)
        self.orphans: list[str] = []  # the joins whose orphans are counted
        self._observation: Any = None

    def observe(self, df: DataFrame, values: dict[int, Column], model: Model) -> DataFrame:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F  # noqa: N812

        self._observation = Observation()
        counts = [F.count(values[c]).alias(f"c{c}") for c in self.columns]
        orphans = [orphan_count(model, alias) for alias in self.orphans]
        return df.observe(self._observation, F.count(F.lit(1)).alias("rows"), *counts, *orphans)

    def result(self) -> dict[str, int] | None:
        """The counts, once an action has read the whole flat table (None before)."""
        observation = self._observation
        if observation is None or not observation._jo.future().isCompleted():  # get() would wait
            return None
        # Spark completes an observation whose metrics no finished query carried (its plan cut short, or
        # run from a cache another query filled) with an empty row: unknown, not zero
        if observation._jo.getRow().length() == 0:
            return None
        return {key: int(value) for key, value in observation.get.items()}


def flat_table(
    reads: SourceReads,
    model: Model,
    column_ids: Collection[int],
    time_range: TimeRange | None,
    encode: Collection[int] = (),
    code_tables: CodeTables | None = None,
    metrics: FlatMetrics | None = None,
    local: Callable[[list[str]], LocalRows] | None = None,
) -> tuple[DataFrame, Codes]:
    """The flat rows of `time_range` (None or the full range: everything) with the given columns;
    those in `encode` (see `encodable`) as codes, from `code_tables` (a new holder when None); `metrics`
    are counted on the way; `local`: the rows read on the driver given the aliases to join (`local_rows`),
    joined there when they are all of them and nothing is coded, else the rows of the others read through
    `reads`."""
    from pyspark.sql import functions as F  # noqa: N812

    by_id = {c.id: c for c in model.all_named_columns}
    refs = {by_id[i].column for i in column_ids}
    inputs = computed_inputs(model)
    cc_refs = {r for r in refs if r in inputs}
    filter_refs = filter_refs_of(model)
    aliases = _needed_aliases(model, (refs - cc_refs).union(filter_refs, *(inputs[r] for r in cc_refs)))
    alias_table = {model.root_alias: model.fact_table, **{j.alias: j.table for j in model.join_tables}}
    holder = code_tables or CodeTables()
    rows = local(aliases) if local is not None else None

    codes = Codes()
    coded = {by_id[i].column: i for i in encode if by_id[i].column in refs}
    if metrics is not None and all(j.join.type is JoinType.LEFT and j.alias in aliases for j in model.join_tables):
        metrics.orphans = [j.alias for j in model.join_tables]
    marked = set(metrics.orphans if metrics is not None else [])
    joined = rows.joined(model, aliases, marked) if rows is not None and not coded else None
    if joined is not None:
        return _finish(joined, model, column_ids, time_range, metrics), codes

    def lookup(alias: str) -> tuple[Table, DataFrame]:
        table = reads.tables[alias_table[alias].upper()]
        frame = rows.frame(alias) if rows is not None else None
        return table, frame if frame is not None else reads.table(table.identity)

    # the coded columns of each lookup small enough to broadcast (its code tables might be big too otherwise),
    # their code tables made side by side on a first build
    wanted: list[tuple[str, str, int]] = []  # (alias, column, column id)
    for alias in aliases:
        own = [(ref.split(".", 1)[1], cid) for ref, cid in coded.items() if ref.split(".", 1)[0] == alias]
        if own and _broadcastable(lookup(alias)[1]):
            wanted += [(alias, column, cid) for column, cid in own]
    sources = {alias: lookup(alias) for alias, _, _ in wanted}
    made = holder.get_all(reads.spark, [(sources[a][0], column, sources[a][1]) for a, column, _ in wanted])
    code_joins: dict[str, list[tuple[str, int, CodeTable]]] = {}
    for (alias, column, cid), table_codes in zip(wanted, made, strict=True):
        if table_codes is not None:  # None: too many values, kept as they are
            code_joins.setdefault(alias, []).append((column, cid, table_codes))

    def read(alias: str) -> DataFrame:
        _, df = lookup(alias)
        if alias in marked:
            df = df.withColumn(joined_marker(alias), F.lit(True))
        if alias not in code_joins:
            return df.alias(alias)
        for column, cid, table_codes in code_joins[alias]:
            codes.add(names.column(cid), table_codes)
            pairs = table_codes.mapping.select(F.col("value").alias("__v"), F.col("code").alias("__c"))
            df = df.join(F.broadcast(pairs), F.col(column).eqNullSafe(F.col("__v")), "left")
            df = df.drop(column, "__v").withColumnRenamed("__c", column)
        # the lookup was found small enough to broadcast before its code tables were joined
        return F.broadcast(df.alias(alias))

    df = read(model.root_alias)
    for join in model.join_tables:
        if join.alias not in aliases:
            continue
        cond = [F.col(fk) == F.col(pk) for fk, pk in zip(join.join.foreign_key, join.join.primary_key, strict=True)]
        how = "left" if join.join.type is JoinType.LEFT else "inner"
        df = df.join(read(join.alias), on=cond, how=how)
    return _finish(df, model, column_ids, time_range, metrics), codes


def _finish(
    df: DataFrame, model: Model, column_ids: Collection[int], time_range: TimeRange | None, metrics: FlatMetrics | None
) -> DataFrame:
    """The joined rows `df` filtered by the model's filter and the range, counted by `metrics`, and the given
    columns (computed ones evaluated) named by their ids."""
    from pyspark.sql import functions as F  # noqa: N812

    by_id = {c.id: c for c in model.all_named_columns}
    computed = {f"{cc.table_alias}.{cc.column_name}": cc.inner_expression for cc in model.computed_columns}
    if model.filter_condition:
        df = df.where(F.expr(model.filter_condition))
    partition = model.partition_desc
    if partition is not None and time_range is not None and not time_range.is_full:
        column = partition.partition_date_column
        datatype = model.column_by_ref(column).datatype
        predicate = range_predicate(column, time_range, partition.partition_date_format, datatype)
        if predicate:
            df = df.where(F.expr(predicate))
    values = {
        i: F.expr(computed[by_id[i].column]) if by_id[i].column in computed else F.col(by_id[i].column)
        for i in column_ids
    }
    if metrics is not None:
        df = metrics.observe(df, values, model)
    return df.select(*[values[i].alias(names.column(i)) for i in sorted(column_ids)])


def computed_inputs(model: Model) -> dict[str, set[str]]:
    """Each computed column's `ALIAS.COLUMN` → the `ALIAS.COLUMN` references of its expression (its tables
    must be joined before it is computed)."""
    found = {}
    for cc in model.computed_columns:
        tree = parse(cc.inner_expression or cc.expression, f"computed column {cc.column_name}")
        found[f"{cc.table_alias}.{cc.column_name}"] = {
            f"{c.table.upper()}.{c.name.upper()}" for c in tree.find_all(exp.Column) if c.table
        }
    return found


def filter_refs_of(model: Model) -> set[str]:
    """ALIAS.COLUMN references of the filter condition (it is stored with qualified columns)."""
    if not model.filter_condition:
        return set()
    tree = parse(model.filter_condition, "filter_condition")
    return {f"{c.table.upper()}.{c.name.upper()}" for c in tree.find_all(exp.Column) if c.table}
