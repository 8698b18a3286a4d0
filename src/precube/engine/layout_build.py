"""Computing one layout (seed 003 step 3): aggregate (agg index) or project (table index) its input —
the flat table for a root, else the smallest built parent layout — then sort by its column order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from precube.engine.measures import kind_of
from precube.engine.sort_keys import KEY, Packing
from precube.metadata import Layout, Measure, Model, ParameterType
from precube.metadata.model import MEASURE_ID_BASE
from precube.storage import columns as names

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from precube.engine.code_tables import Codes

ROWS_PER_FILE = 2_000_000  # up to this many input rows a layout is written as one file


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
        return cls(cls.of_dims(layout), measures)

    @staticmethod
    def of_dims(layout: Layout) -> list[int]:
        return layout.dimensions

    def columns(self) -> tuple[list[str], list[str]]:
        """Dimension columns and measure cell columns, in the layout's column order."""
        return [names.column(d) for d in self.dims], [c for m in self.measures for c in kind_of(m).cell_columns(m)]


def measure_inputs(model: Model, measure: Measure) -> list[int]:
    """Model column ids a measure reads from the flat table."""
    return [model.column_by_ref(p.value).id for p in measure.function.parameters if p.type is ParameterType.COLUMN]


def needs_dictionary(measure: Measure) -> bool:
    return measure.function.returntype == "bitmap"


def dictionary_key(measure: Measure, inputs: Sequence[int]) -> int:
    """Whose global dictionary a precise COUNT DISTINCT measure encodes: its column's, or for several
    columns the dictionary of their tuples (`measures.tuple_key`), named by the measure id."""
    return inputs[0] if len(inputs) == 1 else measure.id


def _args(model: Model, measure: Measure) -> list[Column]:
    from pyspark.sql import functions as F  # noqa: N812

    args: list[Column] = []
    if needs_dictionary(measure) and len(measure.function.parameters) > 1:
        return [F.col(names.dict_column(measure.id))]  # the ids of the tuples (`dictionary_key`)
    for p in measure.function.parameters:
        if p.type is ParameterType.CONSTANT:
            args.append(F.lit(int(p.value)) if p.value.lstrip("-").isdigit() else F.lit(p.value))
        else:
            cid = model.column_by_ref(p.value).id
            args.append(F.col(names.dict_column(cid) if needs_dictionary(measure) else names.column(cid)))
    return args


def compute_layout(
    source: DataFrame,
    layout: Layout,
    model: Model,
    from_flat: bool,
    input_rows: int | None,
    same_grain: bool = False,
    codes: Codes | None = None,
) -> DataFrame:
    """The layout's rows from `source` (flat rows when `from_flat`, else a parent layout's cells), sorted, and
    with `codes` (the flat table's) grouped and sorted on a packed key where its dimensions pack, coded columns
    replaced by their values at the end (codes sort like their values; decoding keeps the order).

    `same_grain`: the source already has one row per value of the layout's dimensions (a parent layout
    with the same dimensions in another order), so the rows are only projected and sorted again.
    `input_rows` (None: unknown, as for the flat table) picks one file for small inputs; larger ones keep
    Spark's post-shuffle partitions (adaptive execution sizes them), a file each.
    """
    shape = LayoutShape.of(layout, model)
    dims, _ = shape.columns()
    packed = codes.packing(dims) if codes is not None else None
    if layout.is_table_index or same_grain:
        df = source
    elif not shape.measures:
        df = source.select(*dims).dropDuplicates()
    else:
        aggs: list[Column] = []
        for m in shape.measures:
            kind = kind_of(m)
            aggs += kind.build(m, _args(model, m)) if from_flat else kind.merge(m)
        if packed is not None and packed.complete:  # one long to hash, the dimensions unpacked from it
            df = source.groupBy(packed.key().alias(KEY)).agg(*aggs)
        else:
            df = source.groupBy(*dims).agg(*aggs) if dims else source.agg(*aggs)
        for m in shape.measures:
            df = kind_of(m).finish(df, m)
    df = finish_layout(df, layout, model, input_rows, packed)
    return codes.decode(df) if codes is not None else df


def finish_layout(
    df: DataFrame, layout: Layout, model: Model, rows: int | None, packed: Packing | None = None
) -> DataFrame:
    """A layout's computed rows as written: its columns in order, one file when `rows` (an upper bound;
    None: unknown) is small, each file sorted by the column order — on the `packed` key of its leading
    dimensions when given (the column `KEY` when the rows were grouped on it, else computed here)."""
    from pyspark.sql import functions as F  # noqa: N812

    dims, cells = LayoutShape.of(layout, model).columns()
    if packed is None:
        df = df.select(*dims, *cells)
        order = [F.col(d).asc_nulls_first() for d in dims]
    else:
        if KEY not in df.columns:
            df = df.withColumn(KEY, packed.key())
        df = df.select(KEY, *packed.rest, *cells)
        order = packed.order()
    if not dims or (rows is not None and rows <= ROWS_PER_FILE):
        df = df.coalesce(1)
    # Each file sorted by the layout's column order, so Parquet row-group statistics prune well (DESIGN §4).
    # Kylin sorts within partitions too: a global range sort would cost a sampling pass and a shuffle more.
    df = df.sortWithinPartitions(*order) if dims else df
    return df if packed is None else df.select(*packed.unpacked(), *packed.rest, *cells)


GROUPING_ID = "__grouping_id"


def grouping_id(layout: Layout, all_dims: list[int]) -> int:
    """Spark's `grouping_id()` of the layout's grouping set: one bit per dimension of `all_dims`
    (first = highest), set when the dimension is not grouped."""
    own = set(LayoutShape.of_dims(layout))
    return sum(1 << (len(all_dims) - 1 - i) for i, d in enumerate(all_dims) if d not in own)


def grouping_sets(layouts: Sequence[Layout], model: Model) -> list[tuple[int, ...]]:
    """The distinct dimension sets of some layouts (layouts with the same dimensions share one)."""
    return list({tuple(sorted(LayoutShape.of_dims(layout))): None for layout in layouts})


def compute_batch(
    source: DataFrame, layouts: Sequence[Layout], model: Model, from_flat: bool = False
) -> tuple[DataFrame, list[int]]:
    """Several agg layouts from one source in one job (GROUPING SETS): from a built parent with each
    measure's merge, from the flat table (`from_flat`) with its build. Returns the rows of every layout, told
    apart by `GROUPING_ID` (see `grouping_id`), and the dimensions used."""
    from pyspark.sql import functions as F  # noqa: N812

    shapes = [LayoutShape.of(layout, model) for layout in layouts]
    all_dims = sorted({d for shape in shapes for d in shape.dims})
    measures = {m.id: m for shape in shapes for m in shape.measures}
    sets = grouping_sets(layouts, model)
    aggs = [
        agg
        for m in measures.values()
        for agg in (kind_of(m).build(m, _args(model, m)) if from_flat else kind_of(m).merge(m))
    ]
    cols = {d: F.col(names.column(d)) for d in all_dims}  # made once: each name given would cost a py4j call
    # One set of every dimension: no Expand, and a one-partition source needs no shuffle. (Not the grand total:
    # over no rows, GROUPING SETS (()) gives none and a global aggregate one.)
    if len(sets) == 1 and sets[0]:
        df = source.groupBy(*cols.values()).agg(*aggs, F.lit(0).cast("long").alias(GROUPING_ID))
    else:
        grouped = source.groupingSets([[cols[d] for d in s] for s in sets], *cols.values())
        df = grouped.agg(*aggs, F.grouping_id().alias(GROUPING_ID))
    for m in measures.values():
        df = kind_of(m).finish(df, m)
    return df, all_dims
