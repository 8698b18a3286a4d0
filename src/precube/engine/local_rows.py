"""A tiny segment's source rows read on the driver and handed to Spark as local relations (seed 003 step 1 for
a day of a few thousand rows): the fact rows the plan's row groups hold within the range's bounds, and of each
lookup only the rows whose keys those rows join.

Spark then plans the flat table as before (the same joins, computed columns, filter and range predicate, so
the same results), but over rows it already holds: no Parquet scan, no broadcast of a whole lookup (each build
built PART's 200,000-row hash relation again), and the range predicate folded into the local rows while
planning, so the code Spark generates no longer holds each day's dates and is compiled once, not per day.

Only rows read exactly as Spark's reader reads them are read here (`TableSource.read_arrow`), at most
`LOCAL_MAX_VALUES` of the fact's; a lookup's rows are narrowed by key only where its keys and the joining
columns are of one Arrow type that compares as Spark compares (integers, strings, dates), so no row a join
would match is dropped. Anything else is read by Spark as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from precube.engine.kept_lookups import ArrowRows
from precube.engine.source_reads import SourceReads
from precube.metadata import Model

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# A segment's fact rows are read on the driver only up to this many values (rows times columns): a local
# relation travels inside Spark's plan and tasks.
LOCAL_MAX_VALUES = 1_000_000


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


@dataclass
class LocalRows:
    """Local relations by model alias, and what they hold (for the build's report)."""

    frames: dict[str, DataFrame] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # by model alias

    def add(self, alias: str, reads: SourceReads, rows: ArrowRows) -> None:
        table, schema = rows
        self.frames[alias] = reads.spark.createDataFrame(table, schema=schema)
        self.rows[alias] = table.num_rows

    def describe(self) -> str:
        return ", ".join(f"{alias} {n:,} rows" for alias, n in self.rows.items())


def local_rows(reads: SourceReads, model: Model, aliases: list[str]) -> LocalRows:
    """Local relations for the fact table and the joined lookups (`aliases`) that can be read on the driver;
    none when the fact's rows cannot (every table is then read by Spark)."""
    estimate, columns = reads.estimated_rows, len(reads.fact.columns)
    if estimate is None or estimate * columns > LOCAL_MAX_VALUES:
        return LocalRows()
    fact = reads.fact_arrow()
    if fact is None or fact[0].num_rows * fact[0].num_columns > LOCAL_MAX_VALUES:
        return LocalRows()
    rows: dict[str, pa.Table] = {model.root_alias: fact[0]}
    local = LocalRows()
    local.add(model.root_alias, reads, fact)
    for join in model.join_tables:
        parent = join.join.foreign_key[0].split(".", 1)[0]
        if join.alias not in aliases or parent not in rows:
            continue
        whole = reads.lookup_arrow(join.table)
        if whole is None:
            continue
        joining = rows[parent]
        pairs = []
        for fk, pk in zip(join.join.foreign_key, join.join.primary_key, strict=True):
            fk_column = fk.split(".", 1)[1].upper()
            if fk_column not in joining.column_names:
                break
            pairs.append((joining[fk_column], pk.split(".", 1)[1].upper()))
        else:
            narrowed = _joined_rows(whole[0], pairs)
            if narrowed is not None:
                rows[join.alias] = narrowed
                local.add(join.alias, reads, (narrowed, whole[1]))
    return local
