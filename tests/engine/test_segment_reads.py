"""What a segment's build reads and computes once (issue 24), on real Spark against the oracle: the fact
table's files and row groups pruned by the segment's range for every partition column format and for
Hive-style partition directories; small segments' layouts in one job equal to the layered build's, file by
file; code tables and lookup dictionaries reused until their lookup's files change; join statistics counted
on the flat table's own pass equal to the job that counts them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from precube.engine import layers, operations
from precube.engine.context import BuildContext, BuildReport, built_layouts
from precube.engine.dictionary import dictionary_path, latest_version
from precube.engine.join_stats import duplicate_keys, join_stats
from precube.engine.operations import build_segment
from precube.engine.source_reads import SourceReads
from precube.metadata import IndexPlan, MetadataStore, Project, SourceType, Table, TimeRange, open_store
from precube.modeling.index_plan import add_agg_index
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model, model_dims, model_measures, require_model
from precube.modeling.spanning_tree import fully_derives
from precube.sources.source import FileSource
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES, generate
from precube.storage import columns as names
from precube.storage.paths import layout_path
from tests.engine.conftest import JOINS, SPEC
from tests.engine.test_operations import _comparable, _views, check_segment, day

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

# The partition column in every way a column holds dates: (column, format, Arrow values from a date array).
FORMATS: dict[str, tuple[str, Any]] = {
    "D_INT": ("yyyyMMdd", lambda d: pc.cast(pc.strftime(d, "%Y%m%d"), pa.int32())),
    "D_TEXT8": ("yyyyMMdd", lambda d: pc.strftime(d, "%Y%m%d")),
    "D_TEXT10": ("yyyy-MM-dd", lambda d: pc.strftime(d, "%Y-%m-%d")),
    "D_SLASH": ("yyyy/MM/dd", lambda d: pc.strftime(d, "%Y/%m/%d")),
    "D_TS": ("yyyy-MM-dd HH:mm:ss", lambda d: pc.cast(pc.cast(d, pa.timestamp("s")), pa.timestamp("us", tz="UTC"))),
    "LO_ORDERDATE": ("yyyy-MM-dd", lambda d: d),
}
ROWS_PER_GROUP = 2_000  # ~80 days of SF 0.01 per row group


@pytest.fixture(autouse=True)
def raw_views(spark: SparkSession, ssb_dir: Path) -> None:
    _views(spark, ssb_dir)  # the oracle's raw tables


@pytest.fixture(scope="module")
def fact_dirs(ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """LINEORDER sorted by order date in small row groups, with the date in every format as columns; and a
    copy partitioned Hive-style by month (`D_MONTH=1995-03/`)."""
    out = tmp_path_factory.mktemp("facts")
    table = pq.read_table(ssb_dir / "LINEORDER").sort_by("LO_ORDERDATE")
    for column, (_, make) in FORMATS.items():
        if column != "LO_ORDERDATE":
            table = table.append_column(column, make(table["LO_ORDERDATE"]))
    sorted_dir = out / "sorted"
    sorted_dir.mkdir()
    for n, start in enumerate(range(0, table.num_rows, 20_000)):  # three files
        pq.write_table(table.slice(start, 20_000), sorted_dir / f"part-{n}.parquet", row_group_size=ROWS_PER_GROUP)
    months = pc.strftime(table["LO_ORDERDATE"], "%Y-%m")
    hive = out / "hive"
    for month in sorted(set(months.to_pylist())):
        part = hive / f"D_MONTH={month}"
        part.mkdir(parents=True)
        rows = table.filter(pc.equal(months, month)).select(["LO_ORDERDATE", "LO_CUSTKEY", "LO_REVENUE"])
        pq.write_table(rows, part / "part.parquet")
    return {"sorted": sorted_dir, "hive": hive}


def _store(tmp_path: Path, ssb_dir: Path, fact: Path) -> MetadataStore:
    store = open_store(f"sqlite:///{tmp_path / 'meta.db'}")
    store.create_project(Project(name="p", default_database="SSB"))
    for name in TABLES:
        load_file_table(store, "p", fact if name == "LINEORDER" else ssb_dir / name, SourceType.PARQUET, name=name)
    return store


def _model(store: MetadataStore, alias: str, column: str, fmt: str) -> None:
    spec = {
        "alias": alias,
        "fact_table": "SSB.LINEORDER",
        "join_tables": [JOINS[1]],  # CUSTOMER
        "partition_desc": {"partition_date_column": f"LINEORDER.{column}", "partition_date_format": fmt},
        "simplified_dimensions": ["CUSTOMER.C_REGION"],
        "simplified_measures": [
            {"name": "COUNT_ALL", "expression": "COUNT"},
            {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
        ],
        "aggregation_groups": [{"includes": ["C_REGION"]}],
    }
    create_model(store, "p", parse_spec(spec))


def _by_region(spark: SparkSession, ssb_dir: Path, start: str, end: str) -> dict[str, tuple[int, int]]:
    """The oracle on the raw (unsorted) tables: rows and revenue per region of orders in [start, end)."""
    rows = spark.sql(
        f"""SELECT c.C_REGION, count(*) AS n, sum(l.LO_REVENUE) AS revenue
            FROM parquet.`{ssb_dir / "LINEORDER"}` l LEFT JOIN parquet.`{ssb_dir / "CUSTOMER"}` c
            ON l.LO_CUSTKEY = c.C_CUSTKEY
            WHERE l.LO_ORDERDATE >= DATE '{start}' AND l.LO_ORDERDATE < DATE '{end}' GROUP BY 1"""
    ).collect()
    return {r[0]: (r[1], r[2]) for r in rows}


def _built_by_region(ctx: BuildContext, alias: str, segment_id: str) -> dict[str, tuple[int, int]]:
    with ctx.store.read(ctx.project) as tx:
        model = require_model(tx, alias)
        plan = tx.require(IndexPlan, model.uuid)
    region = model.column_by_name("C_REGION")
    assert region is not None
    [layout] = [lay for lay in plan.all_layouts() if lay.dimensions == [region.id]]
    count = next(m for m in model.measures() if m.name == "COUNT_ALL")
    revenue = next(m for m in model.measures() if m.name == "REVENUE")
    rows = pq.read_table(layout_path(ctx.warehouse_root, ctx.project, model.uuid, segment_id, layout.id)).to_pylist()
    return {
        r[names.column(region.id)]: (r[names.measure_column(count.id)], r[names.measure_column(revenue.id)])
        for r in rows
    }


@pytest.mark.parametrize("column", list(FORMATS))
def test_a_segment_reads_only_the_row_groups_of_its_range(
    spark: SparkSession, ssb_dir: Path, fact_dirs: dict[str, Path], tmp_path: Path, column: str
) -> None:
    fmt = FORMATS[column][0]
    with _store(tmp_path, ssb_dir, fact_dirs["sorted"]) as store:
        _model(store, "m", column, fmt)
        ctx = BuildContext(spark, store, "p", str(tmp_path / "wh"))
        # three days near a row-group boundary, then a month across one
        for start, end in (("1995-03-01", "1995-03-04"), ("1995-04-01", "1995-05-01")):
            ctx.report = BuildReport()
            segment = build_segment(ctx, "m", TimeRange.of(day(start), day(end)))
            assert _built_by_region(ctx, "m", segment.id) == _by_region(spark, ssb_dir, start, end)
            [scan] = ctx.report.scans
            assert scan.table == "SSB.LINEORDER" and scan.column == column
            assert scan.files_read == 1 and scan.files_total == 3
            assert 1 <= scan.row_groups_read <= 2 and scan.row_groups_total == 30
            assert scan.bytes_read < scan.bytes_total / 10
            assert scan.rows_read >= segment.source_count
            assert "of 3 files" in scan.describe() and "skipped by" in scan.describe()
            # read on the driver, but for a timestamp range, which pyarrow does not compare as Spark does
            assert bool(ctx.report.read_on_driver) == (column != "D_TS")
            assert "layouts / read on driver" in ctx.report.steps  # tried (timed as a part) even where Spark reads


def test_hive_partition_directories_are_pruned(
    spark: SparkSession, ssb_dir: Path, fact_dirs: dict[str, Path], tmp_path: Path
) -> None:
    with _store(tmp_path, ssb_dir, fact_dirs["hive"]) as store:
        with store.read("p") as tx:
            fact = tx.require(Table, "SSB.LINEORDER")
        assert [c.name for c in fact.columns][-1] == "D_MONTH"  # the directories' column, a string
        _model(store, "m", "D_MONTH", "yyyy-MM")
        ctx = BuildContext(spark, store, "p", str(tmp_path / "wh"))
        segment = build_segment(ctx, "m", TimeRange.of(day("1995-03-01"), day("1995-05-01")))
        assert _built_by_region(ctx, "m", segment.id) == _by_region(spark, ssb_dir, "1995-03-01", "1995-05-01")
        [scan] = ctx.report.scans
        assert scan.by_directory and scan.files_read == 2 and scan.files_total > 70
        assert "partition directories" in scan.describe()


def _layout_files(ctx: BuildContext, alias: str, segment_id: str) -> dict[int, list[pa.Table]]:
    with ctx.store.read(ctx.project) as tx:
        model = require_model(tx, alias)
    found = {}
    for i in built_layouts(ctx, model, segment_id):
        path = Path(layout_path(ctx.warehouse_root, ctx.project, model.uuid, segment_id, i))
        found[i] = [pq.read_table(f) for f in sorted(path.glob("*.parquet"))]
    return found


def _null_first(value: Any) -> tuple[bool, Any]:
    return value is not None, value


# The measures whose merge Arrow computes exactly (`arrow_merge`): a model of only these merges on the driver.
ARROW_MEASURES = ["ROWS", "REVENUE", "MIN_DISCOUNT", "MAX_DATE", "TAXED"]


@pytest.mark.parametrize(
    ("measures", "base"),
    [(None, True), (ARROW_MEASURES, True), (ARROW_MEASURES, False)],
    ids=["spark-merges", "arrow-merges", "arrow-merges-several-roots"],
)
def test_a_small_segment_writes_what_the_layered_build_writes(
    ctx: BuildContext, measures: list[str] | None, base: bool
) -> None:
    """Every layout of a small segment (all from its flat table in one job, or merged on the driver: several
    roots from their union, collected; the rest from them) holds what the layered build writes: the same
    columns and types, the same rows, each file sorted by the layout's column order (NULLs first), every
    measure kind's cells counting the same. With measures Arrow merges, the layered build's layouts that have a
    built parent are merged from it on the driver; with the others (COUNT DISTINCT, TOP_N, percentiles), by
    Spark. Without the rule's base layout the plan has several roots."""
    spec = dict(SPEC)
    if measures is not None:
        spec["simplified_measures"] = [m for m in SPEC["simplified_measures"] if m["name"] in measures]
    if not base:  # two groups, neither deriving the other, and no base layout: two roots
        spec["base_layout_enabled"] = False
        spec["base_index_type"] = ["BASE_TABLE_INDEX"]
        spec["aggregation_groups"] = [
            {"includes": ["D_YEAR", "C_REGION", "LO_SHIPMODE"]},
            {"includes": ["D_YEAR", "S_REGION"]},
        ]
    create_model(ctx.store, "ssb", parse_spec({**spec, "alias": "small"}))
    create_model(ctx.store, "ssb", parse_spec({**spec, "alias": "layered"}))
    rng = TimeRange.of(day("1996-05-01"), day("1996-05-08"))
    small_report = BuildReport()
    small = build_segment(dataclasses.replace(ctx, report=small_report), "small", rng)
    report = BuildReport()
    layered = build_segment(dataclasses.replace(ctx, small_segment_rows=0, report=report), "layered", rng)
    assert small.source_count == layered.source_count
    with ctx.store.read("ssb") as tx:
        model = require_model(tx, "small")
        plan = tx.require(IndexPlan, model.uuid)
    ours, theirs = _layout_files(ctx, "small", small.id), _layout_files(ctx, "layered", layered.id)
    assert ours.keys() == theirs.keys() and len(ours) >= 8
    comparable = _comparable(model)
    for layout_id, files in ours.items():
        layout = plan.layout(layout_id)
        assert layout is not None
        dims = [names.column(d) for d in layout.dimensions]
        for f in [*files, *theirs[layout_id]]:
            keys = [tuple(_null_first(r[d]) for d in dims) for r in f.to_pylist()]
            assert keys == sorted(keys), (
                f"layout {layout_id} {dims} {f in files}: a file not sorted by its column order"
            )
        schemas = {tuple((c.name, c.type) for c in f.schema) for f in [*files, *theirs[layout_id]]}
        assert len(schemas) == 1, layout_id
        rows = [sorted(comparable(r) for f in fs for r in f.to_pylist()) for fs in (files, theirs[layout_id])]
        assert rows[0] == rows[1], layout_id
    tables = [i for i in ours if (lay := plan.layout(i)) is not None and lay.is_table_index]
    assert tables and all(len(ours[i]) == 1 for i in tables)  # a small segment's table index: one file
    assert small.join_stats == layered.join_stats and small.column_null_counts == layered.column_null_counts
    check_segment(ctx, "small", small.id, "1996-05-01", "1996-05-08")
    check_segment(ctx, "layered", layered.id, "1996-05-01", "1996-05-08")
    layouts = [lay for i in theirs if (lay := plan.layout(i)) is not None and not lay.is_table_index]
    derived = [lay.id for lay in layouts if any(fully_derives(o, lay) for o in layouts)]
    assert len(layouts) - len(derived) == (1 if base else 2)  # the roots: the base layout, or the two groups
    assert sorted(report.merged_on_driver) == (sorted(derived) if measures else [])
    assert sorted(small_report.merged_on_driver) == (
        sorted(lay.id for lay in layouts) if measures and not base else sorted(derived) if measures else []
    )


@pytest.mark.parametrize(
    ("small", "bounded"), [(False, False), (False, True), (True, False)], ids=["large", "large-bounded", "small"]
)
def test_roots_come_from_one_pass(
    ctx: BuildContext, small: bool, bounded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Aggregate layouts no other layout derives (explicit indexes, no rule) and one each derives: one job over
    the flat table computes the roots, unless the flat rows times the roots pass `BATCH_MAX_ROWS` (the Expand
    of a GROUPING SETS job: SSB SF 10's ran out of heap), when each root is a plain aggregation of its own. In
    a small segment whose measures Arrow merges, that job is one aggregation by every dimension of the roots,
    collected and never written; every layout is merged from it on the driver. Each layout equals the oracle."""
    batches: list[int] = []  # the layouts of each batch job over the flat table
    build_batch = layers._Segment.build_batch

    def counted(seg: Any, batch: list[Any], parent: Any, *rest: Any) -> None:
        batches.extend([len(batch)] if parent is None else [])
        build_batch(seg, batch, parent, *rest)

    monkeypatch.setattr(layers._Segment, "build_batch", counted)
    if bounded:
        monkeypatch.setattr(layers, "BATCH_MAX_ROWS", 1)
    spec = {**SPEC, "alias": "roots", "aggregation_groups": [], "base_index_type": []}
    if small:
        spec["simplified_measures"] = [m for m in SPEC["simplified_measures"] if m["name"] in ARROW_MEASURES]
    create_model(ctx.store, "ssb", parse_spec(spec))
    with ctx.store.transaction("ssb", "test") as tx:
        model = require_model(tx, "roots")
        plan = tx.require(IndexPlan, model.uuid)
        dims = {c.name: c.id for c in model.all_named_columns}
        measures = [m.id for m in model.measures()]
        for names_ in (["C_REGION", "D_YEAR"], ["S_REGION", "D_YEAR"], ["D_YEAR"]):
            plan, _ = add_agg_index(
                plan,
                [dims[d] for d in names_],
                measures,
                model_dims=model_dims(model),
                model_measures=model_measures(model),
            )
        tx.update(plan)
    report = BuildReport()
    run = dataclasses.replace(ctx, small_segment_rows=10**9 if small else 0, report=report)
    segment = build_segment(run, "roots", TimeRange.of(day("1994-01-01"), day("1995-01-01")))
    assert check_segment(ctx, "roots", segment.id, "1994-01-01", "1995-01-01") == 3
    assert batches == ([] if small or bounded else [2])  # bounded: each root a plain aggregation
    # large: every measure kind (COUNT DISTINCT, TOP_N, ...): Spark merges D_YEAR from a root
    assert len(report.merged_on_driver) == (3 if small else 0)


def _rewrite(path: Path, change: Any) -> None:
    """Rewrite a Parquet directory's rows through `change`, with a later modification time."""
    for f in sorted(path.glob("*.parquet")):
        table = change(pq.read_table(f))
        pq.write_table(table, f)
        stat = f.stat()
        os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))


def test_code_tables_and_lookup_dictionaries_are_kept_until_the_lookup_changes(
    spark: SparkSession, ssb_dir: Path, tmp_path: Path
) -> None:
    customer = tmp_path / "CUSTOMER"
    shutil.copytree(ssb_dir / "CUSTOMER", customer)
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="ssb", default_database="SSB"))
        for name in TABLES:
            load_file_table(store, "ssb", customer if name == "CUSTOMER" else ssb_dir / name, SourceType.PARQUET)
        cities = {
            "name": "CITIES",
            "expression": "COUNT_DISTINCT",
            "column": "CUSTOMER.C_CITY",
            "return_type": "bitmap",
        }
        spec = {**SPEC, "simplified_measures": [*SPEC["simplified_measures"], cities]}
        spec["simplified_dimensions"] = [*SPEC["simplified_dimensions"], "CUSTOMER.C_NATION"]
        spec["aggregation_groups"] = [{"includes": ["D_YEAR", "C_REGION", "C_NATION"]}]
        create_model(store, "ssb", parse_spec(spec))
        ctx = BuildContext(spark, store, "ssb", str(tmp_path / "wh"), small_segment_rows=0)  # codes are used
        with store.read("ssb") as tx:
            model = require_model(tx, "sales")
        city = model.column_by_name("C_CITY")
        assert city is not None
        path = dictionary_path(ctx.warehouse_root, "ssb", model.uuid, city.id)

        first = build_segment(ctx, "sales", TimeRange.of(day("1993-01-01"), day("1993-07-01")))
        held = ctx.code_tables.fingerprints()
        assert held and {t for t, _ in held} == {"SSB.CUSTOMER", "SSB.SUPPLIER"}
        version = latest_version(spark, path)
        second = build_segment(ctx, "sales", TimeRange.of(day("1993-07-01"), day("1994-01-01")))
        assert ctx.code_tables.fingerprints() == held  # the same code tables
        assert latest_version(spark, path) == version  # the dictionary was not touched
        assert second.additional_info[f"dict.{city.id}"] == first.additional_info[f"dict.{city.id}"]

        # the lookup changes: a region renamed, a new city
        def change(table: pa.Table) -> pa.Table:
            regions = pc.if_else(pc.equal(table["C_REGION"], "ASIA"), "ASIA PACIFIC", table["C_REGION"])
            cities = pc.if_else(pc.equal(table["C_CUSTKEY"], 1), "NEW CITY 0", table["C_CITY"])
            table = table.set_column(table.schema.get_field_index("C_REGION"), "C_REGION", regions)
            return table.set_column(table.schema.get_field_index("C_CITY"), "C_CITY", cities)

        _rewrite(customer, change)
        third = build_segment(ctx, "sales", TimeRange.of(day("1994-01-01"), day("1994-07-01")))
        changed = ctx.code_tables.fingerprints()
        assert changed[("SSB.CUSTOMER", "C_REGION")] != held[("SSB.CUSTOMER", "C_REGION")]
        assert changed[("SSB.SUPPLIER", "S_REGION")] == held[("SSB.SUPPLIER", "S_REGION")]
        assert latest_version(spark, path) == (version or 0) + 1  # the new city's value added
        layouts = _layout_files(ctx, "sales", third.id)
        region = names.column(model.column_by_name("C_REGION").id)  # type: ignore[union-attr]
        found = {v for fs in layouts.values() for t in fs if region in t.column_names for v in t[region].to_pylist()}
        assert "ASIA PACIFIC" in found and "ASIA" not in found  # decoded with the new lookup's codes


def test_join_stats_counted_on_the_way_equal_the_join_stats_job(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Orphans and NULL counts come from the flat table's own pass, duplicate keys from the last segment over
    the same lookup files: what they give equals what the join statistics job counts on its own."""
    data = tmp_path / "ssb"
    generate(0.01, data, seed=3, orphans=30)  # fact rows whose customer, supplier or part is missing
    told: list[tuple[Any, Any]] = []
    counted_beside: list[list[str]] = []

    def spy(reads: SourceReads, model: Any, rng: Any, orphans: Any = None, duplicates: Any = None) -> Any:
        told.append((orphans, duplicates))
        return join_stats(reads, model, rng, orphans, duplicates)

    def spy_duplicates(reads: SourceReads, model: Any, aliases: Any) -> dict[str, int]:
        counted_beside.append(sorted(aliases))
        return duplicate_keys(reads, model, aliases)

    monkeypatch.setattr(operations, "join_stats", spy)
    monkeypatch.setattr(operations, "duplicate_keys", spy_duplicates)
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="ssb", default_database="SSB"))
        for name in TABLES:
            load_file_table(store, "ssb", data / name, SourceType.PARQUET)
        ctx = BuildContext(spark, store, "ssb", str(tmp_path / "wh"))
        for alias, small in (("small", 1_000_000), ("layered", 0)):
            create_model(store, "ssb", parse_spec({**SPEC, "alias": alias}))
            build = dataclasses.replace(ctx, small_segment_rows=small)
            for start, end in (("1992-01-01", "1995-01-01"), ("1995-01-01", "1999-01-01")):
                rng = TimeRange.of(day(start), day(end))
                segment = build_segment(build, alias, rng)
                with store.read("ssb") as tx:
                    model = require_model(tx, alias)
                    tables = {t.identity: t for t in tx.list(Table)}
                counted = join_stats(SourceReads(spark, model, tables, rng), model, rng)  # all by the job
                assert segment.join_stats == counted, alias
                assert any(s.orphans for s in counted.values())
                orphans, duplicates = told[-1]
                assert orphans is not None  # counted on the flat table's pass
                assert set(duplicates) == {j["alias"] for j in JOINS}
                # counted beside the layouts for the first segment, known from it afterwards
                assert bool(counted_beside[-1]) is (start == "1992-01-01")
            nulls = {str(c): 0 for c in segment.column_null_counts}
            assert segment.column_null_counts == nulls  # SSB has no NULL measure inputs


def test_parquet_reads_give_spark_the_schema_it_would_infer(spark: SparkSession, tmp_path: Path) -> None:
    """A Parquet source is read with the schema of its footer (no inference job), which is what Spark
    infers; columns Spark types its own way (unsigned, nested, nanoseconds) are left to its inference."""
    ts = dt.datetime(2024, 1, 2, 3, 4, 5)
    plain = pa.table(
        {
            "i": pa.array([1], pa.int32()),
            "l": pa.array([1], pa.int64()),
            "f": pa.array([1.5], pa.float32()),
            "d": pa.array([dt.date(2024, 1, 2)]),
            "t": pa.array([ts], pa.timestamp("us", tz="UTC")),
            "n": pa.array([ts], pa.timestamp("ms")),
            "m": pa.array([Decimal("1.25")], pa.decimal128(10, 2)),
            "s": pa.array(["x"]),
            "b": pa.array([b"x"]),
            "o": pa.array([True]),
        }
    )
    other = pa.table({"u": pa.array([1], pa.uint32()), "k": pa.array([[1, 2]])})
    for name, table in (("plain", plain), ("other", other)):
        pq.write_table(table, tmp_path / f"{name}.parquet")
        source = FileSource(SourceType.PARQUET, str(tmp_path / f"{name}.parquet"), {})
        df = source.read(spark, [])
        inferred = spark.read.parquet(str(tmp_path / f"{name}.parquet"))
        assert [(f.name, f.dataType) for f in df.schema] == [(f.name.upper(), f.dataType) for f in inferred.schema]
        assert df.collect() == inferred.collect()
