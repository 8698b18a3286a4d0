"""Every layout of every segment equals the same GROUP BY over the raw tables (Spark SQL oracle)."""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from precube.engine import segment_stats as segment_stats_module
from precube.engine.context import BuildContext, built_layouts
from precube.engine.flat_table import encodable
from precube.engine.join_stats import merged_join_stats
from precube.engine.operations import build_layouts, build_segment, merge_segments, refresh_segment
from precube.engine.segment_stats import SegmentStats, segment_stats
from precube.metadata import Dataflow, IndexPlan, Layout, Model, SegmentDetails, SegmentStatus, TimeRange
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.measure_rules import count_star
from precube.modeling.model_spec import AggregationGroupSpec, RulesSpec, parse_spec
from precube.modeling.model_store import create_model, require_model, set_model_rules
from precube.modeling.partition_format import to_epoch_ms
from precube.sources.sampling import to_text
from precube.storage import columns as names
from precube.storage.cells import (
    bitmap_cardinality,
    encode_key,
    hll_estimate,
    kll_k,
    kll_merged,
    kll_quantile,
    kll_rank_error,
)
from precube.storage.paths import layout_path
from tests.engine.conftest import SPEC

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

DIM_SQL = {"D_YEAR": "d.D_YEAR", "C_REGION": "c.C_REGION", "S_REGION": "s.S_REGION", "LO_SHIPMODE": "l.LO_SHIPMODE"}
MEASURE_SQL = {
    "ROWS": "count(*)",
    "REVENUE": "sum(l.LO_REVENUE)",
    "V_REVENUE": "sum(l.LO_EXTENDEDPRICE * l.LO_DISCOUNT)",
    "MIN_DISCOUNT": "min(l.LO_DISCOUNT)",
    "MAX_DATE": "max(l.LO_ORDERDATE)",
    "TAXED": "count(l.LO_TAX)",
    "CUSTOMERS": "count(DISTINCT l.LO_CUSTKEY)",
    "CUSTOMERS_HLL": "count(DISTINCT l.LO_CUSTKEY)",
    "TOP_SUPPLIERS": "collect_list(struct(l.LO_SUPPKEY AS key, l.LO_REVENUE AS value))",
    "DISCOUNT_MEDIAN": "collect_list(l.LO_DISCOUNT)",
}
FLAT_SQL = """
    FROM raw_LINEORDER l
    LEFT JOIN raw_DATES d ON l.LO_ORDERDATE = d.D_DATEKEY
    LEFT JOIN raw_CUSTOMER c ON l.LO_CUSTKEY = c.C_CUSTKEY
    LEFT JOIN raw_SUPPLIER s ON l.LO_SUPPKEY = s.S_SUPPKEY
    WHERE l.LO_ORDERDATE >= DATE '{start}' AND l.LO_ORDERDATE < DATE '{end}'
"""
HLL_BOUND = 3 * 1.04 / math.sqrt(2**12)  # 3 standard errors at lgConfigK 12


def day(text: str) -> int:
    return to_epoch_ms(text, "yyyy-MM-dd")


def _views(spark: SparkSession, ssb_dir: Path) -> None:
    for name in ("LINEORDER", "DATES", "CUSTOMER", "SUPPLIER"):
        spark.read.parquet(str(ssb_dir / name)).createOrReplaceTempView(f"raw_{name}")


def oracle(
    spark: SparkSession, dims: list[str], measures: list[str], start: str, end: str
) -> dict[tuple[Any, ...], dict[str, Any]]:
    select = [f"{DIM_SQL[d]} AS {d}" for d in dims] + [f"{MEASURE_SQL[m]} AS {m}" for m in measures]
    sql = f"""
        SELECT {", ".join(select)} {FLAT_SQL.format(start=start, end=end)}
        {"GROUP BY " + ", ".join(DIM_SQL[d] for d in dims) if dims else ""}
    """
    return {tuple(r[d] for d in dims): r.asDict() for r in spark.sql(sql).collect()}


def exact_topn(pairs: list[Any]) -> list[tuple[str, float]]:
    """TOP_N's cell from raw (key, value) rows: sums per key, value desc then key asc."""
    totals: dict[str, float] = defaultdict(float)
    for p in pairs:
        totals[encode_key([str(p["key"])])] += p["value"]
    return sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))


def assert_median_within_bound(cell: bytes, values: list[float]) -> None:
    """The sketch's median has a rank among the raw values within the KLL sketch's rank error."""
    median = kll_quantile([cell], 0.5)
    ordered, eps = sorted(values), kll_rank_error(kll_k(100))
    low, high = bisect.bisect_left(ordered, median) / len(ordered), bisect.bisect_right(ordered, median) / len(ordered)
    assert low - eps <= 0.5 <= high + eps, (median, low, high)


def read_layout(ctx: BuildContext, model: Model, segment_id: str, layout: Layout) -> list[dict[str, Any]]:
    path = layout_path(ctx.warehouse_root, ctx.project, model.uuid, segment_id, layout.id)
    return pq.read_table(path).to_pylist()


def check_segment(ctx: BuildContext, model_alias: str, segment_id: str, start: str, end: str) -> int:
    """Compare every layout built in the segment with the oracle; returns how many were checked."""
    with ctx.store.read(ctx.project) as tx:
        model = require_model(tx, model_alias)
        plan = tx.require(IndexPlan, model.uuid)
        details = tx.require(SegmentDetails, model.uuid, segment_id)
    checked = 0
    for instance in details.layout_instances:
        layout = plan.layout(instance.layout_id)
        assert layout is not None
        rows = read_layout(ctx, model, segment_id, layout)
        assert len(rows) == instance.rows
        if layout.is_table_index:
            expected = oracle(ctx.spark, [], ["ROWS"], start, end)
            assert len(rows) == expected[()]["ROWS"]
            continue
        dims = [model.column_by_id(i).name for i in layout.col_order if i < MEASURE_ID_BASE]  # type: ignore[union-attr]
        measures = [model.measure_by_id(i).name for i in layout.col_order if i >= MEASURE_ID_BASE]  # type: ignore[union-attr]
        expected = oracle(ctx.spark, dims, measures, start, end)
        assert len(rows) == len(expected), f"layout {layout.id}"
        by_name = {c.name: names.column(c.id) for c in model.all_named_columns} | {
            m.name: names.measure_column(m.id) for m in model.measures()
        }
        for row in rows:
            want = expected[tuple(row[by_name[d]] for d in dims)]
            for m in measures:
                cell = row[by_name[m]]
                if m == "CUSTOMERS":
                    assert bitmap_cardinality(cell) == want[m] == row[names.count_column(int(by_name[m]))]
                elif m == "CUSTOMERS_HLL":
                    assert abs(hll_estimate([cell]) - want[m]) <= max(2, HLL_BOUND * want[m])
                elif m == "TOP_SUPPLIERS":  # fewer suppliers than the capacity: exact
                    assert [(e["key"], e["value"]) for e in cell] == exact_topn(want[m]), f"layout {layout.id}"
                elif m == "DISCOUNT_MEDIAN":
                    assert_median_within_bound(cell, want[m])
                else:
                    assert cell == want[m], f"layout {layout.id} {m} {row}"
        checked += 1
    return checked


@pytest.fixture(autouse=True)
def raw_views(spark: SparkSession, ssb_dir: Path) -> None:
    _views(spark, ssb_dir)


def test_full_build_equals_oracle(ctx: BuildContext, monkeypatch: pytest.MonkeyPatch) -> None:
    segment = build_segment(ctx, "sales", TimeRange.of(day("1992-01-01"), day("1999-01-01")))
    assert segment.status is SegmentStatus.READY and segment.source_count > 0
    assert check_segment(ctx, "sales", segment.id, "1992-01-01", "1999-01-01") >= 8
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        df = tx.require(Dataflow, model.uuid)
        plan = tx.require(IndexPlan, model.uuid)
    assert df.status.value == "ONLINE"
    rows = oracle(ctx.spark, [], ["ROWS"], "1992-01-01", "1999-01-01")[()]["ROWS"]
    assert segment.source_count == rows
    # each dimension's range, read from the built layouts, equals the raw tables' min/max; C_REGION is
    # built as integer codes (a lookup's string dimension), yet its range is in values
    region = model.column_by_name("C_REGION")
    assert region is not None and region.id in encodable(model, [region.id], [])
    ranges = df.segments[0].dimension_range_info_map
    for name, sql in DIM_SQL.items():
        column = model.column_by_name(name)
        assert column is not None
        flat = FLAT_SQL.format(start="1992-01-01", end="1999-01-01")
        [want] = ctx.spark.sql(f"SELECT min({sql}), max({sql}) {flat}").collect()
        assert ranges[str(column.id)].model_dump() == {"min": to_text(want[0]), "max": to_text(want[1])}, name
    # a remote warehouse's stats come from Spark instead of the footers: the same figures
    built = {i: (plan.layout(i), li) for i, li in built_layouts(ctx, model, segment.id).items()}
    path = functools.partial(layout_path, ctx.warehouse_root, ctx.project, model.uuid, segment.id)
    monkeypatch.setattr(segment_stats_module, "local_files", lambda _: None)
    assert segment_stats(ctx.spark, model, built, path, lambda: -1) == SegmentStats(rows, ranges)
    # without a built layout that counts rows, the flat table does
    counting = {m.id for m in model.measures() if m.function == count_star()}
    uncounted = {
        i: (lay.model_copy(update={"col_order": [c for c in lay.col_order if c not in counting]}), li)
        for i, (lay, li) in built.items()
        if not lay.is_table_index
    }
    assert counting and segment_stats(ctx.spark, model, uncounted, path, lambda: -1).source_rows == -1


def test_daily_segments_merged_equal_one_full_build(ctx: BuildContext) -> None:
    days = ["1995-03-01", "1995-03-02", "1995-03-03", "1995-03-04"]
    daily = [build_segment(ctx, "sales", TimeRange.of(day(a), day(b))) for a, b in itertools.pairwise(days)]
    for seg, (a, b) in zip(daily, itertools.pairwise(days), strict=True):
        check_segment(ctx, "sales", seg.id, a, b)
    merged = merge_segments(ctx, "sales", [s.id for s in daily])
    assert merged.range == TimeRange.of(day(days[0]), day(days[-1]))
    assert merged.source_count == sum(s.source_count for s in daily)
    check_segment(ctx, "sales", merged.id, days[0], days[-1])
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        assert [s.id for s in tx.require(Dataflow, model.uuid).segments] == [merged.id]
        assert tx.get(SegmentDetails, model.uuid, daily[0].id) is None
    # the same range built at once gives the same cells (HLL unions of disjoint days are exact)
    create_model(ctx.store, "ssb", parse_spec({**SPEC, "alias": "sales_once"}))
    once = build_segment(ctx, "sales_once", merged.range)
    # the NULLs of measure inputs: summed over the merged segments, as counted at once
    assert merged.column_null_counts and merged.column_null_counts == once.column_null_counts
    with ctx.store.read("ssb") as tx:
        a, b = require_model(tx, "sales"), require_model(tx, "sales_once")
        plan = tx.require(IndexPlan, a.uuid)
    for layout in plan.all_layouts():
        left = sorted(map(_comparable(a), read_layout(ctx, a, merged.id, layout)))
        right = sorted(map(_comparable(b), read_layout(ctx, b, once.id, layout)))
        assert left == right, f"layout {layout.id}"
    # join stats: the merge sums the days' orphan rows, as many as one build of the range finds
    assert merged.join_stats is not None and once.join_stats is not None
    assert merged.join_stats == merged_join_stats(s.join_stats for s in daily)
    assert {k: v.orphans for k, v in merged.join_stats.items()} == {k: v.orphans for k, v in once.join_stats.items()}


def _comparable(model: Model) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """A layout row with its cells as values: bitmaps and sketches by what they count (their bytes may be
    laid out differently); a KLL sketch by its exact parts (count, min, max), top-n lists as tuples."""
    returns = {names.measure_column(m.id): m.function.returntype for m in model.measures()}

    def value(key: str, cell: Any) -> Any:
        kind = returns.get(key, "")
        if cell is None or not kind.startswith(("bitmap", "hllc", "percentile", "topn")):
            return cell
        if kind == "bitmap":
            return bitmap_cardinality(cell)
        if kind.startswith("hllc"):
            return round(hll_estimate([cell]), 6)
        if kind.startswith("topn"):
            return tuple((e["key"], e["value"]) for e in cell)
        sketch = kll_merged([cell])
        assert sketch is not None
        return sketch.n, sketch.get_min_value(), sketch.get_max_value()

    return lambda row: tuple((key, value(key, row[key])) for key in sorted(row))


def test_refresh_swaps_in_a_new_segment(ctx: BuildContext) -> None:
    first = build_segment(ctx, "sales", TimeRange.of(day("1996-01-01"), day("1996-02-01")))
    refreshed = refresh_segment(ctx, "sales", first.name)
    assert refreshed.id != first.id and refreshed.range == first.range
    check_segment(ctx, "sales", refreshed.id, "1996-01-01", "1996-02-01")
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        assert [s.id for s in tx.require(Dataflow, model.uuid).segments] == [refreshed.id]


class KilledError(Exception):
    """Stands for the process dying in the middle of a layer."""


def _kill_after(n: int) -> Callable[[str, int, int], None]:
    def progress(stage: str, done: int, total: int) -> None:
        if stage.startswith("layer") and done >= n:
            raise KilledError

    return progress


@pytest.mark.parametrize("small_segment_rows", [1_000_000, 0], ids=["small", "layered"])
def test_killed_build_leaves_old_segments_and_resumes(ctx: BuildContext, small_segment_rows: int) -> None:
    """Killed after its second layout: the layouts recorded by then (a small segment records its batch of
    layouts together, a layered build each as it ends) are kept and not rebuilt."""
    ctx.small_segment_rows, ctx.parallel_layouts = small_segment_rows, 1  # one work item after the other
    old = build_segment(ctx, "sales", TimeRange.of(day("1997-01-01"), day("1997-02-01")))
    ctx.progress, ctx.job_id = _kill_after(2), "first-attempt"
    with pytest.raises(KilledError):
        build_segment(ctx, "sales", TimeRange.of(day("1997-02-01"), day("1997-03-01")))
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "sales")
        segments = tx.require(Dataflow, model.uuid).segments
        assert [(s.id, s.status) for s in segments if s.status is not SegmentStatus.NEW] == [
            (old.id, SegmentStatus.READY)
        ]
        [new] = [s for s in segments if s.status is SegmentStatus.NEW]
        recorded = tx.require(SegmentDetails, model.uuid, new.id).layout_instances
        planned = len(tx.require(IndexPlan, model.uuid).all_layouts())
    assert 2 <= len(recorded) < planned if small_segment_rows else len(recorded) == 2
    ctx.progress, ctx.job_id = (lambda *_: None), "second-attempt"
    resumed = build_segment(ctx, "sales", TimeRange.of(day("1997-02-01"), day("1997-03-01")))
    assert resumed.id == new.id and resumed.status is SegmentStatus.READY
    with ctx.store.read("ssb") as tx:
        final = tx.require(SegmentDetails, model.uuid, new.id).layout_instances
    jobs = {li.layout_id: li.build_job_id for li in final}
    assert [jobs[li.layout_id] for li in recorded] == ["first-attempt"] * len(recorded)  # not rebuilt
    assert sorted(jobs.values()).count("second-attempt") == len(final) - len(recorded) > 0
    check_segment(ctx, "sales", new.id, "1997-02-01", "1997-03-01")


def test_new_layouts_are_built_from_parents(ctx: BuildContext) -> None:
    segment = build_segment(ctx, "sales", TimeRange.of(day("1993-01-01"), day("1994-01-01")))
    group = AggregationGroupSpec(includes=["D_YEAR", "C_REGION", "S_REGION", "LO_SHIPMODE"])
    set_model_rules(ctx.store, "ssb", "sales", RulesSpec(aggregation_groups=[group]))
    stages: list[str] = []
    ctx.progress = lambda stage, done, total: stages.append(stage)
    built = build_layouts(ctx, "sales")
    assert len(built[segment.id]) > 0
    assert "flat table" not in stages  # every new layout had a parent in the segment
    check_segment(ctx, "sales", segment.id, "1993-01-01", "1994-01-01")
