"""Table sampling on Spark: an exact row count, then per-column stats in one aggregation pass → `TableExt`.

Cardinality is approximate (HyperLogLog++, `approx_count_distinct`, ~5 % relative standard error;
at 2 % the pass took twice as long on SSB LINEORDER); null
counts, min and max are exact over the rows examined. A table larger than `max_rows` is examined
through a Bernoulli sample of about `max_rows` rows (spread over the whole table and every core,
unlike a LIMIT); its row count stays exact and `sampled_rows` says how many rows the stats cover.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from precube.metadata import ColumnStats, MetadataStore, Table, TableExt
from precube.metadata.entity import now_ms
from precube.metadata.table import RowCountStatus
from precube.sources.source import source_for

if TYPE_CHECKING:
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import SparkSession

_NUMERIC = ("tinyint", "smallint", "integer", "bigint", "float", "double", "decimal")
_ORDERED = (*_NUMERIC, "varchar", "char", "string", "date", "timestamp", "boolean")
RELATIVE_ERROR = 0.05
SAMPLE_SEED = 42  # the same table samples the same rows


def _base(datatype: str) -> str:
    return datatype.split("(", 1)[0].strip().lower()


def to_text(value: Any) -> str | None:
    """A sampled value as Kylin stores it: a string, ISO dates, None for NULL."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return str(value)


def sample_table(spark: SparkSession, table: Table, max_rows: int, sample_rows: int = 10) -> TableExt:
    """Read up to `max_rows` rows of `table` and compute its `TableExt`."""
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    df = source_for(table).read(spark, table.columns)
    total = df.count()  # cheap for Parquet: row-group metadata
    if total > max_rows:
        df = df.sample(fraction=max_rows / total, seed=SAMPLE_SEED)
    exprs: list[SparkColumn] = [F.count(F.lit(1)).alias("__rows")]
    for i, col in enumerate(table.columns):
        c, base = F.col(f"`{col.name}`"), _base(col.datatype)
        exprs += [F.count(c).alias(f"n{i}"), F.approx_count_distinct(c, RELATIVE_ERROR).alias(f"d{i}")]
        if base in _ORDERED:
            exprs += [F.min(c).alias(f"lo{i}"), F.max(c).alias(f"hi{i}")]
        if base in ("varchar", "char", "string"):
            length = F.length(c)
            exprs += [
                F.min(length).alias(f"ll{i}"),
                F.max(length).alias(f"hl{i}"),
                F.min_by(c, length).alias(f"lv{i}"),
                F.max_by(c, length).alias(f"hv{i}"),
            ]
    row = df.agg(*exprs).first()
    assert row is not None  # a global aggregate always returns one row
    got = row.asDict()
    examined = int(got["__rows"])
    stats = []
    for i, col in enumerate(table.columns):
        base = _base(col.datatype)
        lo, hi = got.get(f"lo{i}"), got.get(f"hi{i}")
        stats.append(
            ColumnStats(
                column_name=col.name,
                cardinality=min(int(got[f"d{i}"]), int(got[f"n{i}"])),  # an estimate past the values it counted
                null_count=examined - int(got[f"n{i}"]),
                min_value=to_text(lo),
                max_value=to_text(hi),
                min_numeral=float(lo) if base in _NUMERIC and lo is not None else None,
                max_numeral=float(hi) if base in _NUMERIC and hi is not None else None,
                min_length=got.get(f"ll{i}"),
                max_length=got.get(f"hl{i}"),
                min_length_value=got.get(f"lv{i}"),
                max_length_value=got.get(f"hv{i}"),
            )
        )
    examples = [[to_text(v) for v in r] for r in df.limit(sample_rows).collect()] if sample_rows else []
    return TableExt(
        table_name=table.identity,
        columns_stats=stats,
        sample_rows=examples,
        total_rows=total,
        sampled_rows=examined,
        last_modified_time=now_ms(),
        row_count_status=RowCountStatus.OK,
    )


def sample_and_store(
    store: MetadataStore,
    project: str,
    identity: str,
    spark: SparkSession,
    max_rows: int,
    sample_rows: int = 10,
    writer: str = "precube",
) -> TableExt:
    """Sample a registered table and save its `TableExt` (replacing an earlier one)."""
    with store.read(project) as tx:
        table = tx.require(Table, identity.upper())
    ext = sample_table(spark, table, max_rows, sample_rows)
    with store.transaction(project, writer) as tx:
        return tx.replace(ext)
