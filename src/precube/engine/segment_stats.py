"""A segment's stats (seed 003 step 4): its source rows and each dimension's min/max, read from the
layouts just built instead of from a pass over the flat table of their own (which cost a build
about as much as a small layer). A layout holds exactly the dimension values of the flat rows, so a
dimension's extremes are those of the smallest built layout that has it, read from the Parquet
footers of local files (no data read); the source rows are the total of a COUNT(*) measure, or the
rows of a table index. What the layouts cannot tell comes from Spark: a column without usable footer
statistics, or remote files, from the chosen layouts in one job; the source rows, when no built
layout counts them, from the flat table (`count_flat`). The NULLs of each measure input column come
from the flat table too (one aggregate over the cached frame): a query's COUNT(col) and AVG(col) are
answered from COUNT(*) and SUM(col) where they are 0 in every segment it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from precube.engine.measures import kind_of
from precube.engine.storage import local_files
from precube.metadata import Layout, LayoutInstance, Measure, Model, ParameterType
from precube.metadata.dataflow import DimensionRange
from precube.metadata.model import MEASURE_ID_BASE
from precube.sources.sampling import to_text
from precube.storage import columns as names
from precube.storage.footers import footer_ranges

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Built = Mapping[int, tuple[Layout, LayoutInstance]]


@dataclass(frozen=True)
class SegmentStats:
    source_rows: int
    ranges: dict[str, DimensionRange]  # model column id (text) → min/max; absent: no built layout has it
    null_counts: dict[str, int] = field(default_factory=dict)  # measure input column id (text) → NULLs


def _counts_rows(m: Measure) -> bool:
    return m.function.expression == "COUNT" and all(p.type is ParameterType.CONSTANT for p in m.function.parameters)


def segment_stats(
    spark: SparkSession,
    model: Model,
    built: Built,
    path: Callable[[int], str],
    count_flat: Callable[[], int],
    null_counts: Callable[[], dict[str, int]] = dict,
) -> SegmentStats:
    """Stats of a segment from its `built` layouts (`path`: a layout's directory); `null_counts` counts
    the NULLs of the measure input columns on the flat table (no layout tells them)."""
    smallest = sorted(built.values(), key=lambda b: (b[1].rows, len(b[0].col_order), b[0].id))
    rows = _source_rows(spark, model, smallest, path)
    return SegmentStats(count_flat() if rows is None else rows, _ranges(spark, model, smallest, path), null_counts())


def _source_rows(
    spark: SparkSession, model: Model, smallest: list[tuple[Layout, LayoutInstance]], path: Callable[[int], str]
) -> int | None:
    for layout, instance in smallest:
        if layout.is_table_index:  # a projection of every flat row
            return instance.rows
        counter = next(
            (m for i in layout.col_order if i >= MEASURE_ID_BASE and (m := model.measure_by_id(i)) and _counts_rows(m)),
            None,
        )
        if counter is not None:
            [cell] = kind_of(counter).cell_columns(counter)
            files = local_files(path(layout.id))
            if files is not None:
                return sum(pc.sum(pq.read_table(f, columns=[cell])[cell]).as_py() or 0 for f in files)
            return int(spark.read.parquet(path(layout.id)).agg({cell: "sum"}).first()[0] or 0)  # type: ignore[index]
    return None


def _ranges(
    spark: SparkSession, model: Model, smallest: list[tuple[Layout, LayoutInstance]], path: Callable[[int], str]
) -> dict[str, DimensionRange]:
    chosen: dict[int, list[int]] = {}  # layout id → the dimensions read from it
    for dim in sorted(c.id for c in model.dimensions()):
        layout = next((lay for lay, _ in smallest if dim in lay.col_order), None)
        if layout is not None:
            chosen.setdefault(layout.id, []).append(dim)
    found: dict[int, tuple[Any, Any]] = {}
    todo: dict[int, list[int]] = {}  # what the footers cannot tell: Spark reads it
    for layout_id, dims in chosen.items():
        files = local_files(path(layout_id))
        ends = footer_ranges(files, [names.column(d) for d in dims]) if files is not None else {}
        for d in dims:
            if names.column(d) in ends:
                found[d] = ends[names.column(d)]
            else:
                todo.setdefault(layout_id, []).append(d)
    if todo:
        found.update(_spark_ranges(spark, todo, path))
    return {
        str(dim): DimensionRange(min=to_text(lo), max=to_text(hi)) for dim, (lo, hi) in found.items() if lo is not None
    }


def _spark_ranges(
    spark: SparkSession, todo: dict[int, list[int]], path: Callable[[int], str]
) -> dict[int, tuple[Any, Any]]:
    """Min/max of some dimensions of some layouts, in one Spark job (one-row aggregates cross-joined)."""
    from pyspark.sql import functions as F  # noqa: N812

    parts = [
        spark.read.parquet(path(layout_id)).agg(
            *[f(names.column(d)).alias(f"{k}{d}") for d in dims for k, f in (("lo", F.min), ("hi", F.max))]
        )
        for layout_id, dims in todo.items()
    ]
    row = reduce(lambda a, b: a.crossJoin(b), parts).first()
    assert row is not None
    return {d: (row[f"lo{d}"], row[f"hi{d}"]) for dims in todo.values() for d in dims}
