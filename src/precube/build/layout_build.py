"""Computing one layout (seed 003 step 3): aggregate (agg index) or project (table index) its input —
the flat table for a root, else the smallest built parent layout — then sort by its column order."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from precube.build import columns as names
from precube.build.measures import kind_of
from precube.metadata import Layout, Measure, Model, ParameterType
from precube.metadata.model import MEASURE_ID_BASE

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

ROWS_PER_FILE = 2_000_000  # above this a layout is range-partitioned into several sorted files


@dataclass(frozen=True)
class LayoutShape:
    dims: list[int]
    measures: list[Measure]

    @classmethod
    def of(cls, layout: Layout, model: Model) -> LayoutShape:
        measures = []
        for i in layout.col_order:
            if i >= MEASURE_ID_BASE:
                m = model.measure_by_id(i)
                if m is None:
                    raise ValueError(f"layout {layout.id} refers to measure {i}, which model {model.alias} lacks")
                measures.append(m)
        return cls([i for i in layout.col_order if i < MEASURE_ID_BASE], measures)


def measure_inputs(model: Model, measure: Measure) -> list[int]:
    """Model column ids a measure reads from the flat table."""
    return [model.column_by_ref(p.value).id for p in measure.function.parameters if p.type is ParameterType.COLUMN]


def needs_dictionary(measure: Measure) -> bool:
    return measure.function.returntype == "bitmap"


def _args(model: Model, measure: Measure) -> list[Column]:
    from pyspark.sql import functions as F  # noqa: N812

    args: list[Column] = []
    for p in measure.function.parameters:
        if p.type is ParameterType.CONSTANT:
            args.append(F.lit(int(p.value)) if p.value.lstrip("-").isdigit() else F.lit(p.value))
        else:
            cid = model.column_by_ref(p.value).id
            args.append(F.col(names.dict_column(cid) if needs_dictionary(measure) else names.column(cid)))
    return args


def compute_layout(source: DataFrame, layout: Layout, model: Model, from_flat: bool, input_rows: int) -> DataFrame:
    """The layout's rows from `source` (flat rows when `from_flat`, else a parent layout's cells)."""
    from pyspark.sql import functions as F  # noqa: N812

    shape = LayoutShape.of(layout, model)
    dims = [names.column(d) for d in shape.dims]
    if layout.is_table_index:
        df = source.select(*dims)
    elif not shape.measures:
        df = source.select(*dims).dropDuplicates()
    else:
        aggs: list[Column] = []
        for m in shape.measures:
            kind = kind_of(m)
            aggs += kind.build(m, _args(model, m)) if from_flat else kind.merge(m)
        df = source.groupBy(*dims).agg(*aggs) if dims else source.agg(*aggs)
        for m in shape.measures:
            df = kind_of(m).finish(df, m)
    ordered = dims + [c for m in shape.measures for c in kind_of(m).cell_columns(m)]
    df = df.select(*ordered)
    if not dims:
        return df.coalesce(1)
    files = max(1, math.ceil(input_rows / ROWS_PER_FILE))
    # Sorted by the layout's column order so Parquet row-group statistics prune well (DESIGN §4).
    sort = [F.col(d).asc_nulls_first() for d in dims]
    if files == 1:
        return df.coalesce(1).sortWithinPartitions(*sort)
    return df.repartitionByRange(files, *sort).sortWithinPartitions(*sort)
