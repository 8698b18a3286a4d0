"""Measure kinds: cells built from rows and merged (child layouts, segment merge) against plain-Python oracles."""

from __future__ import annotations

import bisect
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyroaring import BitMap

from precube.engine.errors import BuildError
from precube.engine.measures import BitmapKind, HllKind, MinMaxKind, PercentileKind, SumKind, TopNKind, kind_of
from precube.metadata import Function, FunctionExpression, Measure, Parameter, ParameterType
from precube.storage import cells

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

pytestmark = pytest.mark.spark


Key = tuple[Any, ...]
Row = dict[str, Any]


def measure(mid: int, expression: str, returntype: str, n_params: int = 1) -> Measure:
    params = [Parameter(type=ParameterType.COLUMN, value=f"T.C{i}") for i in range(n_params)]
    return Measure(
        id=mid,
        name=f"M{mid}",
        function=Function(expression=FunctionExpression(expression), parameters=params, returntype=returntype),
    )


def build(rows: DataFrame, dims: list[str], spec: Sequence[tuple[Measure, list[str]]]) -> DataFrame:
    """What the layout builder does from the flat table."""
    from pyspark.sql import functions as F  # noqa: N812

    aggs: list[Column] = []
    for m, args in spec:
        aggs += kind_of(m).build(m, [F.lit(1) if a == "*" else F.col(a) for a in args])
    df = rows.groupBy(*dims).agg(*aggs) if dims else rows.agg(*aggs)
    for m, _ in spec:
        df = kind_of(m).finish(df, m)
    return df.select(*dims, *[c for m, _ in spec for c in kind_of(m).cell_columns(m)])


def merge(cells_df: DataFrame, dims: list[str], ms: Sequence[Measure]) -> DataFrame:
    """What the layout builder does from a parent layout, and segment merge."""
    aggs = [c for m in ms for c in kind_of(m).merge(m)]
    df = cells_df.groupBy(*dims).agg(*aggs) if dims else cells_df.agg(*aggs)
    for m in ms:
        df = kind_of(m).finish(df, m)
    return df.select(*dims, *[c for m in ms for c in kind_of(m).cell_columns(m)])


ALL_DIMS = ("e", "d1", "d2")  # e: which generated row set (several are checked in one Spark job)


def collect_levels(levels: dict[str, DataFrame]) -> dict[str, dict[Key, Row]]:
    """All levels in one Spark job: rows keyed by (e, d1, d2) with absent dims as None."""
    from pyspark.sql import functions as F  # noqa: N812

    tagged = [df.withColumn("_level", F.lit(name)) for name, df in levels.items()]
    union = tagged[0]
    for df in tagged[1:]:
        union = union.unionByName(df, allowMissingColumns=True)
    out: dict[str, dict[Key, Row]] = defaultdict(dict)
    for r in union.collect():
        d = r.asDict()
        out[d["_level"]][tuple(d.get(c) for c in ALL_DIMS)] = d
    return out


def group(rows: Iterable[Row], dims: Sequence[str]) -> dict[Key, list[Row]]:
    groups: dict[Key, list[Row]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[c] if c in dims else None for c in ALL_DIMS)].append(r)
    return groups


def covers(coarse: Key, fine: Key) -> bool:
    return all(a is None or a == b for a, b in zip(coarse, fine, strict=True))


def nonnull(rows: list[Row], col: str) -> list[Any]:
    return [r[col] for r in rows if r[col] is not None]


def opt(f: Callable[[list[Any]], Any], values: list[Any]) -> Any:
    return f(values) if values else None


def exact_topn(rows: list[Row], key_cols: list[str]) -> list[tuple[str, float]]:
    totals: dict[str, float] = defaultdict(float)
    for r in rows:
        if r["v"] is not None:
            totals[cells.encode_key([None if r[c] is None else str(r[c]) for c in key_cols])] += r["v"]
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))


# -- exact kinds: SUM, COUNT, COUNT(*), MIN, MAX, bitmap, TOP_N below capacity -------------------------

EXACT: list[tuple[Measure, list[str]]] = [
    (measure(100001, "SUM", "bigint"), ["v"]),
    (measure(100002, "SUM", "double"), ["w"]),
    (measure(100003, "SUM", "decimal(20,2)"), ["dec"]),
    (measure(100004, "COUNT", "bigint"), ["v"]),
    (measure(100005, "COUNT", "bigint"), ["*"]),
    (measure(100006, "MIN", "integer"), ["v"]),
    (measure(100007, "MAX", "integer"), ["v"]),
    (measure(100008, "MIN", "varchar(4096)"), ["s"]),
    (measure(100009, "MAX", "varchar(4096)"), ["s"]),
    (measure(100010, "COUNT_DISTINCT", "bitmap"), ["id"]),
    (measure(100011, "TOP_N", "topn(3)", 2), ["v", "s"]),
    (measure(100012, "TOP_N", "topn(2)", 3), ["v", "s", "id"]),
]
COLUMNS = ("d1", "d2", "v", "w", "dec", "s", "id")
SCHEMA = "d1 int, d2 string, v int, w double, dec decimal(10,2), s string, id bigint"


def oracle(rows: list[Row]) -> dict[str, Any]:
    vs, ws, decs, ss = nonnull(rows, "v"), nonnull(rows, "w"), nonnull(rows, "dec"), nonnull(rows, "s")
    return {
        "100001": opt(sum, vs),
        "100002": opt(lambda x: float(sum(x)), ws),
        "100003": opt(lambda x: sum(x, Decimal(0)), decs),
        "100004": len(vs),
        "100005": len(rows),
        "100006": opt(min, vs),
        "100007": opt(max, vs),
        "100008": opt(min, ss),
        "100009": opt(max, ss),
        "100010": set(nonnull(rows, "id")),
        "100010_count": len(set(nonnull(rows, "id"))),
        "100011": exact_topn(rows, ["s"]),
        "100012": exact_topn(rows, ["s", "id"]),
    }


def stored(row: Row) -> dict[str, Any]:
    out = {k: row[k] for k in oracle([]) if k in row}
    out["100010"] = set(BitMap.deserialize(row["100010"]))
    for topn in ("100011", "100012"):
        out[topn] = [(e["key"], e["value"]) for e in row[topn]]
    return out


row_strategy = st.fixed_dictionaries(
    {
        "d1": st.integers(0, 2),
        "d2": st.sampled_from(["a", "b", None]),
        "v": st.none() | st.integers(-20, 20),
        "w": st.none() | st.integers(-5, 5).map(float),
        "dec": st.none() | st.decimals(-100, 100, places=2),
        "s": st.none() | st.text(alphabet="ab|\\N", max_size=2),
        "id": st.none() | st.integers(0, 40),
        "segment": st.booleans(),
    }
)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row_sets=st.lists(st.lists(row_strategy, max_size=30), min_size=1, max_size=8))
def test_exact_kinds_build_and_merge_match_oracle(spark: SparkSession, row_sets: list[list[Row]]) -> None:
    rows = [{**r, "e": e} for e, row_set in enumerate(row_sets) for r in row_set]

    def frame(part: list[Row]) -> DataFrame:
        return spark.createDataFrame([tuple(r[c] for c in ("e", *COLUMNS)) for r in part], "e int, " + SCHEMA)

    ms = [m for m, _ in EXACT]
    dims = list(ALL_DIMS)
    segments = [build(frame([r for r in rows if r["segment"] is seg]), dims, EXACT) for seg in (False, True)]
    both = segments[0].unionByName(segments[1]).localCheckpoint()  # two segments built separately, "stored"
    per_set = merge(both, ["e", "d1"], ms)
    got = collect_levels(
        {
            "direct": build(frame(rows), dims, EXACT),
            "segment_merge": merge(both, dims, ms),
            "d1": per_set,
            "e": merge(per_set, ["e"], ms),  # a child of a child: each row set's grand total
            "total": merge(both, [], ms),
        }
    )
    for level, by in [("direct", dims), ("segment_merge", dims), ("d1", ["e", "d1"]), ("e", ["e"])]:
        want = {k: oracle(g) for k, g in group(rows, by).items()}
        assert {k: stored(r) for k, r in got[level].items()} == want, level
    assert stored(got["total"][(None, None, None)]) == oracle(rows)  # one row even over no input


def test_topn_keeps_capacity_and_exact_top_at_build(spark: SparkSession) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    m = measure(100020, "TOP_N", "topn(1)", 2)  # capacity 50
    # 2 cells of 80 keys; key k has value k (+ the cell number, so cells disagree on order).
    rows = spark.range(160).select((F.col("id") % 2).alias("d1"), (F.col("id") / 2).cast("int").alias("k"))
    rows = rows.withColumn("v", F.col("k") + F.col("d1"))
    cells_df = build(rows.withColumn("d2", F.lit("x")), ["d1", "d2"], [(m, ["v", "k"])])
    got = {r["d1"]: [(e["key"], e["value"]) for e in r["100020"]] for r in cells_df.collect()}
    for d1 in (0, 1):
        assert got[d1] == [(str(k), float(k + d1)) for k in range(79, 29, -1)]  # exactly the top 50
    [total] = merge(cells_df, [], [m]).collect()
    merged = [(e["key"], e["value"]) for e in total["100020"]]
    assert len(merged) == 50
    assert merged[0] == ("79", 79.0 + 80.0)  # keys kept by every cell are exact
    assert merged == cells.topn_merge([got[0], got[1]], 50)  # the Python merge agrees with Spark's


# -- sketches --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sketch_rows(spark: SparkSession) -> DataFrame:
    from pyspark.sql import functions as F  # noqa: N812

    df = spark.range(40_000).select(
        (F.col("id") % 4).cast("int").alias("d1"),
        (F.col("id") / 4 % 5).cast("int").cast("string").alias("d2"),
        (F.abs(F.xxhash64("id", F.lit(1))) % 100_000).alias("x"),
        F.when(F.col("id") % 7 != 0, (F.col("id") % 13).cast("string")).alias("y"),
        (F.abs(F.xxhash64("id", F.lit(2))) % 1_000_000 / 1000.0).alias("p"),
    )
    return df.cache()


def test_hll_estimates_within_three_standard_errors(spark: SparkSession, sketch_rows: DataFrame) -> None:
    spec = [
        (measure(100030, "COUNT_DISTINCT", "hllc(12)"), ["x"]),
        (measure(100031, "COUNT_DISTINCT", "hllc(14)"), ["x"]),
        (measure(100032, "COUNT_DISTINCT", "hllc(12)", 2), ["x", "y"]),  # multi-column, NULL if any is NULL
    ]
    ms = [m for m, _ in spec]
    raw = [r.asDict() for r in sketch_rows.collect()]
    base = build(sketch_rows, ["d1", "d2"], spec)
    got = collect_levels({"base": base, "d1": merge(base, ["d1"], ms), "total": merge(base, [], ms)})
    children = {k: r for k, r in got["base"].items()}
    for level, dims in [("base", ["d1", "d2"]), ("d1", ["d1"]), ("total", [])]:
        for key, grp in group(raw, dims).items():
            exact = {
                "100030": len({r["x"] for r in grp}),
                "100031": len({r["x"] for r in grp}),
                "100032": len({(r["x"], r["y"]) for r in grp if r["y"] is not None}),
            }
            for m in ms:
                p = cells.return_parameter(m.function.returntype, "hllc")
                want, estimate = exact[str(m.id)], cells.hll_estimate([got[level][key][str(m.id)]])
                assert abs(estimate - want) <= 3 * cells.hll_standard_error(p) * want, (level, m.id)
                # Reading side: a union of the children in Python gives the same answer as Spark's merge.
                kids = [r[str(m.id)] for k, r in children.items() if covers(key, k)]
                assert cells.hll_estimate(kids) == pytest.approx(estimate, rel=1e-9)
    assert cells.hll_estimate([]) == 0.0


def test_kll_quantiles_within_documented_rank_error(spark: SparkSession, sketch_rows: DataFrame) -> None:
    m = measure(100040, "PERCENTILE_APPROX", "percentile(100)")
    assert cells.kll_k(100) == 200
    eps = cells.kll_rank_error(200)
    raw = [r.asDict() for r in sketch_rows.select("d1", "d2", "p").collect()]
    base = build(sketch_rows, ["d1", "d2"], [(m, ["p"])])  # 2000 values per cell: the sketch compacts
    got = collect_levels({"base": base, "d1": merge(base, ["d1"], [m]), "total": merge(base, [], [m])})
    children = [r["100040"] for r in got["base"].values()]
    for level, dims in [("base", ["d1", "d2"]), ("d1", ["d1"]), ("total", [])]:
        for key, grp in group(raw, dims).items():
            values = sorted(r["p"] for r in grp)
            readings = [[got[level][key]["100040"]]] + ([children] if level == "total" else [])  # + Python merge
            for blobs in readings:
                for q in (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
                    estimate = cells.kll_quantile(blobs, q)
                    assert estimate is not None
                    rank = bisect.bisect_right(values, estimate) / len(values)
                    assert abs(rank - q) <= eps, (level, key, q)
    assert cells.kll_quantile([], 0.5) is None


# -- registry, errors, helpers ---------------------------------------------------------------------------


def test_kind_of_registry_and_cell_columns() -> None:
    assert isinstance(kind_of(measure(100001, "SUM", "bigint")), SumKind)
    assert isinstance(kind_of(measure(100001, "MAX", "date")), MinMaxKind)
    assert isinstance(kind_of(measure(100001, "COUNT_DISTINCT", "bitmap")), BitmapKind)
    assert isinstance(kind_of(measure(100001, "COUNT_DISTINCT", "hllc(10)")), HllKind)
    assert isinstance(kind_of(measure(100001, "TOP_N", "topn(10)", 2)), TopNKind)
    assert isinstance(kind_of(measure(100001, "PERCENTILE_APPROX", "percentile(1000)")), PercentileKind)
    bitmap = measure(100003, "COUNT_DISTINCT", "bitmap")
    assert kind_of(bitmap).cell_columns(bitmap) == ["100003", "100003_count"]
    hll = measure(100001, "COUNT_DISTINCT", "hllc(12)")
    assert kind_of(hll).cell_columns(hll) == ["100001"]
    with pytest.raises(BuildError, match="no storage"):
        kind_of(measure(100001, "COUNT_DISTINCT", "theta(12)"))
    assert all(kind_of(m).storage for m, _ in EXACT)


def test_bitmap_ids_beyond_32_bits_fail_clearly(spark: SparkSession) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    with pytest.raises(ValueError, match=r"outside 0\.\.4294967295"):
        cells.bitmaps_from_id_lists([[1, 2], [2**32]])
    m = measure(100050, "COUNT_DISTINCT", "bitmap")
    with pytest.raises(Exception, match=r"4294967296 is outside"):
        build(spark.range(1).select(F.lit(2**32).alias("i")), [], [(m, ["i"])]).collect()


def test_bitmap_helpers() -> None:
    a, b = cells.bitmap_from_ids([1, 5, 7]), cells.bitmap_from_ids([7, 2**32 - 1])
    assert cells.bitmap_cardinality(cells.bitmap_union([a, None, b])) == 4
    assert cells.bitmap_cardinality(cells.bitmap_union([])) == 0
    assert cells.bitmaps_from_id_lists([[], [3, 3]]) == [cells.bitmap_from_ids([]), cells.bitmap_from_ids([3])]


@given(st.lists(st.none() | st.text(alphabet="ab|\\N", max_size=4), min_size=1, max_size=4))
def test_topn_key_encoding_round_trips(values: list[str | None]) -> None:
    assert cells.decode_key(cells.encode_key(values)) == values


def test_topn_merge_resums_and_orders() -> None:
    merged = cells.topn_merge([[("a", 3.0), ("b", 2.0)], None, [("b", 2.0), ("c", 4.0)]], 2)
    assert merged == [("b", 4.0), ("c", 4.0)]  # ties: smaller key first


def test_import_starts_no_jvm() -> None:
    code = "import sys, precube.engine.measures, precube.storage.cells; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tuple_keys_count_distinct_tuples_as_sql_does(spark: SparkSession) -> None:
    """A precise COUNT DISTINCT of several columns counts the distinct keys of their tuples: NULL when one
    value is NULL (SQL skips such rows), and distinct tuples never share a key (values are escaped)."""
    from pyspark.sql import functions as F  # noqa: N812

    from precube.engine.measures import tuple_key

    rows = [("x|", "y"), ("x", "|y"), ("x", "|y"), ("a\\", "b"), ("a", "\\b"), (None, "b"), ("a", None), ("\\N", "b")]
    df = spark.createDataFrame(rows, "a string, b string")
    keys = [r[0] for r in df.select(tuple_key([F.col("a"), F.col("b")])).collect()]
    expected = {t for t in rows if None not in t}
    assert len({k for k in keys if k is not None}) == len(expected)
    assert [k is None for k in keys] == [None in t for t in rows]
