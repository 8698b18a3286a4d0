"""Measure kinds (reference §4.2, §4.3): how each measure's cell is built from flat-table rows and merged
from stored cells (child layouts, segment merge, query-time roll-up).

Every kind works inside one `groupBy(dims).agg(...)` together with the other measures of the layout,
then `finish`. Hence only built-in aggregates, with scalar pandas UDFs on top of them: Spark refuses to
mix grouped-aggregate pandas UDFs with other aggregates. pyspark is imported inside functions only.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from precube.engine.errors import BuildError
from precube.metadata import FunctionExpression, Measure
from precube.metadata import datatypes as dt
from precube.storage import cells
from precube.storage import columns as names

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

TOPN_SCHEMA = "array<struct<key:string,value:double>>"


class MeasureKind(Protocol):
    """One measure function's storage, build (rows → cell) and merge (cells → cell)."""

    storage: str  # the Parquet type of the cell, for docs

    def cell_columns(self, m: Measure) -> list[str]:
        """Layout columns holding the measure's cell."""
        ...

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        """Aggregates over flat-table rows; `args` are the measure's inputs in parameter order."""
        ...

    def merge(self, m: Measure) -> list[Column]:
        """Aggregates over stored cells (columns named by `cell_columns`); associative."""
        ...

    def finish(self, df: DataFrame, m: Measure) -> DataFrame:
        """Derived cell columns after `build` or `merge`."""
        ...


def _cell(m: Measure) -> str:
    return names.measure_column(m.id)


class _OneColumn:
    """A kind whose cell is one column and needs no finishing."""

    storage = ""

    def cell_columns(self, m: Measure) -> list[str]:
        return [_cell(m)]

    def finish(self, df: DataFrame, m: Measure) -> DataFrame:
        return df


class SumKind(_OneColumn):
    storage = "the measure's return type: bigint, double or decimal(p,s)"

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [_as_return_type(F.sum(args[0]), m).alias(_cell(m))]

    def merge(self, m: Measure) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        # Cast back: Spark widens sum(decimal(p,s)) to decimal(p+10,s) at every level.
        return [_as_return_type(F.sum(_cell(m)), m).alias(_cell(m))]


class CountKind(_OneColumn):
    storage = "bigint"

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [F.count(args[0]).cast("bigint").alias(_cell(m))]  # COUNT(*) arrives as count(lit(1))

    def merge(self, m: Measure) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        # coalesce: a grand total over no cells is 0, as count() over no rows.
        return [F.coalesce(F.sum(_cell(m)), F.lit(0)).cast("bigint").alias(_cell(m))]


class MinMaxKind(_OneColumn):
    storage = "the source column's type"

    def __init__(self, smallest: bool) -> None:
        self.smallest = smallest

    def _agg(self, c: Column | str) -> Column:
        from pyspark.sql import functions as F  # noqa: N812

        return F.min(c) if self.smallest else F.max(c)

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        return [self._agg(args[0]).alias(_cell(m))]

    def merge(self, m: Measure) -> list[Column]:
        return [self._agg(_cell(m)).alias(_cell(m))]


class BitmapKind:
    """Precise COUNT DISTINCT: a Roaring bitmap of global-dictionary ids plus its cardinality."""

    storage = "binary: portable serialized 32-bit Roaring bitmap of dictionary ids; `{id}_count` bigint"

    def cell_columns(self, m: Measure) -> list[str]:
        return [_cell(m), names.count_column(m.id)]

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        ids = F.collect_set(args[0])  # Spark computes this once for both outputs
        return [
            _udfs().bitmap_of_ids(ids).alias(_cell(m)),
            F.size(ids).cast("bigint").alias(names.count_column(m.id)),
        ]

    def merge(self, m: Measure) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [_udfs().bitmap_or(F.collect_list(_cell(m))).alias(_cell(m))]

    def finish(self, df: DataFrame, m: Measure) -> DataFrame:
        count = names.count_column(m.id)
        if count in df.columns:  # `build` got it from the id set's size for free
            return df
        return df.withColumn(count, _udfs().bitmap_count(_cell(m)))


class HllKind(_OneColumn):
    """Approximate COUNT DISTINCT (`hllc(p)`): a DataSketches HLL sketch with lgConfigK = p."""

    storage = "binary: DataSketches HLL sketch (Spark's hll_sketch_agg, lgConfigK = p)"

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        lg_k = cells.return_parameter(m.function.returntype, "hllc")
        # Argument types are unknown here (unresolved columns), so every input is hashed as its string
        # form: stable across an int → bigint reload. Several columns: one 64-bit hash, NULL if any is NULL
        # (as Kylin's multi-column approximate count distinct).
        texts = [a.cast("string") for a in args]
        if len(texts) == 1:
            value = texts[0]
        else:
            any_null = functools.reduce(lambda a, b: a | b, [t.isNull() for t in texts])
            value = F.when(~any_null, F.xxhash64(*texts))
        return [F.hll_sketch_agg(value, lg_k).alias(_cell(m))]

    def merge(self, m: Measure) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [F.hll_union_agg(_cell(m), False).alias(_cell(m))]


class PercentileKind(_OneColumn):
    """PERCENTILE_APPROX (`percentile(c)`): a DataSketches KLL doubles sketch with k = 2c."""

    storage = "binary: DataSketches KLL doubles sketch (Spark's kll_sketch_agg_double, k = 2c)"

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [F.kll_sketch_agg_double(args[0].cast("double"), _kll_k(m)).alias(_cell(m))]

    def merge(self, m: Measure) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [F.kll_merge_agg_double(_cell(m), _kll_k(m)).alias(_cell(m))]


class TopNKind:
    """TOP_N (`topn(n)`): the `50 n` keys with the largest summed ranking value, sorted desc.

    `build` collects (key, value) pairs and `merge` concatenates cells; `finish` sums per key and keeps
    the largest `50 n`, so it is required after both.
    """

    storage = f"{TOPN_SCHEMA}, at most 50 n entries, value desc then key asc"

    def cell_columns(self, m: Measure) -> list[str]:
        return [_cell(m)]

    def build(self, m: Measure, args: Sequence[Column]) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        value = args[0].cast("double")
        pair = F.struct(_topn_key(args[1:]).alias("key"), value.alias("value"))
        # Rows with a NULL ranking value add nothing (collect_list skips the NULL struct).
        return [F.collect_list(F.when(value.isNotNull(), pair)).alias(_cell(m))]

    def merge(self, m: Measure) -> list[Column]:
        from pyspark.sql import functions as F  # noqa: N812

        return [F.flatten(F.collect_list(_cell(m))).alias(_cell(m))]

    def finish(self, df: DataFrame, m: Measure) -> DataFrame:
        from pyspark.sql import functions as F  # noqa: N812

        # SQL text: one parse instead of dozens of py4j calls per plan through the Column API.
        return df.withColumn(_cell(m), F.expr(_COMPACT_TOPN.format(cell=_cell(m), capacity=_capacity(m))))


# Sum an array<struct<key, value>> per key, keep the `capacity` largest: value desc, key asc. Linear
# after one sort, all built-ins: sort by key, find where each run of equal keys starts, sum each run
# over its slice. `get(transform(array(v), x -> f(x)), 0)` evaluates v once (lambdas share no
# subexpressions); the run totals are negated so an ascending struct sort gives value desc, key asc.
_COMPACT_TOPN = """
transform(slice(sort_array(
  get(transform(array(array_sort(`{cell}`)), s ->
    get(transform(array(filter(transform(s, (x, i) -> i), i -> i = 0 OR get(s, i).key != get(s, i - 1).key)), st ->
      transform(st, (b, j) -> named_struct(
        'neg', -aggregate(slice(s, b + 1, coalesce(get(st, j + 1), size(s)) - b), 0D, (acc, x) -> acc + x.value),
        'key', get(s, b).key))
    ), 0)
  ), 0)
), 1, {capacity}), x -> named_struct('key', x.key, 'value', -x.neg))
"""


_KINDS: dict[tuple[FunctionExpression, str], MeasureKind] = {
    (FunctionExpression.SUM, ""): SumKind(),
    (FunctionExpression.COUNT, ""): CountKind(),
    (FunctionExpression.MIN, ""): MinMaxKind(smallest=True),
    (FunctionExpression.MAX, ""): MinMaxKind(smallest=False),
    (FunctionExpression.COUNT_DISTINCT, "bitmap"): BitmapKind(),
    (FunctionExpression.COUNT_DISTINCT, "hllc"): HllKind(),
    (FunctionExpression.TOP_N, ""): TopNKind(),
    (FunctionExpression.PERCENTILE_APPROX, ""): PercentileKind(),
}


def kind_of(measure: Measure) -> MeasureKind:
    """The kind that stores `measure` (COUNT_DISTINCT: `bitmap` is precise, `hllc(p)` approximate)."""
    f = measure.function
    variant = ""
    if f.expression is FunctionExpression.COUNT_DISTINCT:
        variant = "bitmap" if f.returntype.strip().lower() in ("", "bitmap") else f.returntype.split("(")[0].strip()
    kind = _KINDS.get((f.expression, variant.lower()))
    if kind is None:
        raise BuildError(f"measure {measure.name} ({measure.id}): no storage for {f.expression}({f.returntype!r})")
    return kind


# -- helpers ---------------------------------------------------------------------------------------------


def _as_return_type(c: Column, m: Measure) -> Column:
    rt = m.function.returntype
    return c.cast(dt.to_spark(rt)) if rt else c


def _kll_k(m: Measure) -> int:
    return cells.kll_k(cells.return_parameter(m.function.returntype, "percentile"))


def _capacity(m: Measure) -> int:
    return cells.topn_capacity(cells.return_parameter(m.function.returntype, "topn"))


def tuple_key(cols: Sequence[Column]) -> Column:
    """One string per tuple of values (`cells.encode_key`), NULL when one of them is NULL: SQL's
    COUNT(DISTINCT a, b) skips those rows (the precise multi-column COUNT DISTINCT's dictionary values)."""
    from pyspark.sql import functions as F  # noqa: N812

    present = functools.reduce(lambda a, b: a & b, [c.isNotNull() for c in cols])
    return F.when(present, _topn_key(cols))


def _topn_key(cols: Sequence[Column]) -> Column:
    """`cells.encode_key` in Spark: escaped string forms joined by `|`, NULL as `\\N`."""
    from pyspark.sql import functions as F  # noqa: N812

    esc, sep = F.lit(cells.KEY_ESCAPE), F.lit(cells.KEY_SEPARATOR)
    parts = []
    for c in cols:
        text = F.replace(F.replace(c.cast("string"), esc, F.lit(cells.KEY_ESCAPE * 2)), sep, F.concat(esc, sep))
        parts.append(F.coalesce(text, F.lit(cells.KEY_NULL)))
    return parts[0] if len(parts) == 1 else F.concat_ws(cells.KEY_SEPARATOR, *parts)


class _Udfs:
    """Vectorized pandas UDFs over Roaring bitmaps; created on first use (they need a JVM)."""

    def __init__(self) -> None:
        import pandas as pd
        from pyspark.sql.pandas.functions import pandas_udf

        # Unannotated lambdas are scalar Series → Series UDFs (annotations would need pandas imported at
        # module level to resolve); pyspark's overloads only type annotated functions, hence Any.
        udf: Any = pandas_udf
        self.bitmap_of_ids: Any = udf(
            lambda ids: pd.Series(cells.bitmaps_from_id_lists(list(ids)), dtype=object), "binary"
        )
        self.bitmap_or: Any = udf(
            lambda lists: pd.Series([cells.bitmap_union(b) for b in lists], dtype=object), "binary"
        )
        self.bitmap_count: Any = udf(lambda blobs: pd.Series([cells.bitmap_cardinality(b) for b in blobs]), "bigint")


def _udfs() -> _Udfs:
    # Not cached: a UDF object keeps the Java function of the SparkContext it was first used with.
    return _Udfs()
