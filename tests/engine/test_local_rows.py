"""A tiny segment's source rows read on the driver (`local_rows`, issue 24), on real Spark: pyarrow reads a
table's rows as Spark's reader does, or declines; a lookup is narrowed only to rows its joins can match; and a
segment built from local rows writes what the same segment read by Spark writes, file by file, for a model
with a snowflake, an INNER join that drops rows, LEFT joins with orphans, a filter and a computed column, and
counts the rows the raw tables' SQL counts."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from precube.engine import local_rows
from precube.engine.context import BuildContext, BuildReport
from precube.engine.local_rows import _index_pairs, _joined_rows
from precube.engine.operations import build_segment
from precube.metadata import MetadataStore, Project, Segment, SourceType, Table, TimeRange, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.sources.scan_plan import ColumnRange
from precube.sources.source import FileSource
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from tests.engine.test_operations import day
from tests.engine.test_segment_reads import _layout_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

UTC = dt.UTC


def _mixed(n: int) -> pa.Table:
    """Rows of every plain column type, NULLs among them, keyed by K (0..n-1)."""
    k = list(range(n))
    some = [None if i % 7 == 3 else i for i in k]
    return pa.table(
        {
            "K": pa.array(k, pa.int32()),
            "Big": pa.array([None if v is None else v * 10**12 for v in some], pa.int64()),
            "S": pa.array([None if v is None else f"é{v % 5}✓" for v in some], pa.string()),
            "D": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i % 40) for i in k], pa.date32()),
            "DEC": pa.array([None if v is None else Decimal(v) / 100 for v in some], pa.decimal128(12, 2)),
            "F": pa.array([float("nan") if i % 11 == 0 else -0.0 if i % 13 == 0 else i / 3 for i in k]),
            "TS": pa.array(
                [dt.datetime(1900, 1, 1, tzinfo=UTC) + dt.timedelta(hours=i) for i in k], pa.timestamp("us", tz="UTC")
            ),
            "NTZ": pa.array([dt.datetime(2020, 3, 8) + dt.timedelta(minutes=i) for i in k], pa.timestamp("ms")),
            "B": pa.array([i % 2 == 0 for i in k]),
            "BIN": pa.array([bytes([i % 256]) for i in k], pa.binary()),
        }
    )


def _spark_rows(df: object) -> list[tuple[object, ...]]:
    rows = df.selectExpr(
        "K", "Big", "S", "D", "DEC", "cast(F AS string)", "unix_micros(TS)", "cast(NTZ AS string)", "B", "BIN"
    ).collect()  # type: ignore[attr-defined]
    return sorted(tuple(r) for r in rows)


@pytest.mark.parametrize(
    ("column", "low", "high"),
    [("K", 120, 300), ("S", "é1✓", "é3✓"), ("D", dt.date(2000, 1, 10), dt.date(2000, 1, 12)), ("K", 5, None)],
)
def test_pyarrow_reads_the_rows_spark_reads(
    spark: SparkSession, tmp_path: Path, column: str, low: object, high: object
) -> None:
    """Rows read on the driver hold every row of the range Spark's reader finds, with the schema Spark's reader
    gives (every value equal, NaN, -0.0, decimals, both kinds of timestamp and bytes included); Spark's own
    predicate over them then leaves exactly Spark's rows."""
    from pyspark.sql.types import StructField, StructType

    table = _mixed(500)
    for n, start in enumerate((0, 250)):  # two files of small row groups
        pq.write_table(table.slice(start, 250), tmp_path / f"part-{n}.parquet", row_group_size=40)
    source = FileSource(SourceType.PARQUET, str(tmp_path), {})
    read = source.read_arrow(None, ColumnRange(column, low, high))
    assert read is not None
    rows, schema = read
    spark_df = source.read(spark, [])
    assert schema == spark_df.schema
    predicate = f"{column} >= {_literal(low)}" + (f" AND {column} < {_literal(high)}" if high is not None else "")
    local_df = spark.createDataFrame(rows, schema=schema)
    assert _spark_rows(local_df.where(predicate)) == _spark_rows(spark_df.where(predicate))
    assert rows.num_rows == spark_df.where(predicate).count()  # for these types, the bounds are the predicate
    every = source.read_arrow(None, None)
    assert every is not None and _spark_rows(spark.createDataFrame(every[0], schema=every[1])) == _spark_rows(spark_df)
    # the same values as a struct column, as rows joined on the driver hold each table's (`LocalRows.joined`)
    nested = pa.table({"T": every[0].to_struct_array()})
    joined = spark.createDataFrame(nested, schema=StructType([StructField("T", every[1])]))
    assert _spark_rows(joined.select("T.*")) == _spark_rows(spark_df)


def _literal(value: object) -> str:
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return f"'{value}'" if isinstance(value, str) else str(value)


def test_what_pyarrow_might_read_otherwise_is_left_to_spark(tmp_path: Path) -> None:
    """CSV files, partition directories, INT96 timestamps and a range whose bounds pyarrow compares otherwise
    (a timestamp's, or a string bound on an integer column) are not read on the driver."""
    table = _mixed(50)
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(table, plain / "a.parquet")
    source = FileSource(SourceType.PARQUET, str(plain), {})
    assert source.read_arrow(None, ColumnRange("K", 1, 3)) is not None
    assert source.read_arrow(None, None, max_values=50 * 10) is not None  # 50 rows of 10 columns
    assert source.read_arrow(None, None, max_values=50 * 10 - 1) is None  # too many: not read at all
    assert source.read_arrow(None, ColumnRange("TS", dt.datetime(1900, 1, 1), None)) is None
    assert source.read_arrow(None, ColumnRange("K", "1", "3")) is None
    assert source.read_arrow(None, ColumnRange("MISSING", 1, 3)) is None
    int96 = tmp_path / "int96"
    int96.mkdir()
    pq.write_table(table, int96 / "a.parquet", use_deprecated_int96_timestamps=True)
    assert FileSource(SourceType.PARQUET, str(int96), {}).read_arrow(None, None) is None
    hive = tmp_path / "hive" / "P=1"
    hive.mkdir(parents=True)
    pq.write_table(table, hive / "a.parquet")
    assert FileSource(SourceType.PARQUET, str(tmp_path / "hive"), {}).read_arrow(None, None) is None
    csv = tmp_path / "t.csv"
    csv.write_text("K\n1\n")
    assert FileSource(SourceType.CSV, str(csv), {}).read_arrow(None, None) is None


def test_a_lookup_keeps_every_row_its_join_can_match() -> None:
    """Narrowed by each key column's values among the joining rows (NULL matches nothing); keys of other
    types, or floating point (Spark equates NaNs and signed zeros), leave the lookup whole to Spark."""
    lookup = pa.table({"A": pa.array([1, 2, 2, None, 4], pa.int32()), "B": ["x", "y", "z", "x", None]})
    joining = pa.table({"FA": pa.array([2, None, 4, 9], pa.int32()), "FB": ["y", "x", None, "z"]})
    one = _joined_rows(lookup, [(joining["FA"], "A")])
    assert one is not None and one.to_pydict() == {"A": [2, 2, 4], "B": ["y", "z", None]}
    both = _joined_rows(lookup, [(joining["FA"], "A"), (joining["FB"], "B")])
    assert both is not None and both.to_pydict() == {"A": [2, 2], "B": ["y", "z"]}  # a superset of (2, y)
    assert _joined_rows(lookup, [(joining["FA"].cast(pa.int64()), "A")]) is None
    floats = pa.table({"A": [0.0, float("nan")]})
    assert _joined_rows(floats, [(pa.chunked_array([[-0.0]]), "A")]) is None
    assert _joined_rows(lookup, [(joining["FA"], "NOPE")]) is None


@pytest.mark.parametrize("how", ["inner", "left outer"])
def test_rows_joined_on_the_driver_pair_as_sql_joins_them(how: str) -> None:
    """Arrow's join of two-column keys (NULLs on both sides, keys held by several rows, rows with no match, an
    empty side) gives exactly the row pairs DuckDB's SQL join gives, in the left rows' order."""
    rng = random.Random(24)
    pick = lambda values, n: [rng.choice(values) for _ in range(n)]  # noqa: E731
    numbers, words = [1, 2, 3, 4, None], ["a", "b", "é", None]
    for rows, lookup_rows in ((200, 60), (50, 0), (0, 10)):
        left = [
            pa.chunked_array([pa.array(pick(numbers, rows), pa.int32())]),
            pa.chunked_array([pa.array(pick(words, rows), pa.string())]),
        ]
        right = [pa.chunked_array([pa.array(pick(numbers[1:], lookup_rows), pa.int32())])]
        right.append(pa.chunked_array([pa.array(pick(words, lookup_rows), pa.string())]))
        on_left, on_right = _index_pairs(left, right, how)
        con = duckdb.connect()
        con.register("f", pa.table({"k0": left[0], "k1": left[1], "i": pa.array(range(rows), pa.int64())}))
        con.register("d", pa.table({"k0": right[0], "k1": right[1], "j": pa.array(range(lookup_rows), pa.int64())}))
        sql = f"SELECT i, j FROM f {how.split()[0]} JOIN d ON f.k0 = d.k0 AND f.k1 = d.k1"
        expected = sorted(con.execute(sql).fetchall(), key=lambda p: (p[0], -1 if p[1] is None else p[1]))
        assert list(zip(on_left.to_pylist(), on_right.to_pylist(), strict=True)) == expected
        assert how == "inner" or sorted(set(on_left.to_pylist())) == list(range(rows))  # no left row lost


def _snowflake_store(tmp_path: Path, ssb_dir: Path, supplier_join: str = "INNER") -> MetadataStore:
    """SSB with a REGIONS lookup joined from CUSTOMER (one region missing: orphans at the snowflake edge; one
    twice: its rows joined twice) and a SUPPLIER lookup missing a quarter of its rows (joined INNER, it drops
    fact rows; LEFT, every join is LEFT and the build counts each join's orphans on the way)."""
    store = open_store(f"sqlite:///{tmp_path / 'meta.db'}")
    store.create_project(Project(name="p", default_database="SSB"))
    for name in TABLES:
        if name != "SUPPLIER":
            load_file_table(store, "p", ssb_dir / name, SourceType.PARQUET, name=name)
    suppliers = pq.read_table(ssb_dir / "SUPPLIER")
    (tmp_path / "SUPPLIER").mkdir()
    pq.write_table(
        suppliers.filter(pc.not_equal(pc.bit_wise_and(suppliers["S_SUPPKEY"], 3), 0)),
        tmp_path / "SUPPLIER" / "s.parquet",
    )
    regions = pa.table(
        {"R_REGION": ["AMERICA", "ASIA", "EUROPE", "MIDDLE EAST", "ASIA"], "R_NAME": ["am", "as", "eu", "me", "asia"]}
    )
    (tmp_path / "REGIONS").mkdir()
    pq.write_table(regions, tmp_path / "REGIONS" / "r.parquet")
    for name in ("SUPPLIER", "REGIONS"):
        load_file_table(store, "p", tmp_path / name, SourceType.PARQUET, name=name)
    join = lambda table, fk, pk, how="LEFT": {  # noqa: E731
        "table": f"SSB.{table}",
        "alias": table,
        "join": {"type": how, "foreign_key": [fk], "primary_key": [f"{table}.{pk}"]},
    }
    spec = {
        "alias": "snow",
        "fact_table": "SSB.LINEORDER",
        "join_tables": [
            join("CUSTOMER", "LINEORDER.LO_CUSTKEY", "C_CUSTKEY"),
            join("REGIONS", "CUSTOMER.C_REGION", "R_REGION"),
            join("SUPPLIER", "LINEORDER.LO_SUPPKEY", "S_SUPPKEY", supplier_join),
            join("DATES", "LINEORDER.LO_ORDERDATE", "D_DATEKEY"),
        ],
        "computed_columns": [
            {"column_name": "V_REVENUE", "expression": "LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT"},
            # over a snowflake's lookup and over a lookup: their tables are joined for them alone
            {"column_name": "V_REGION_REVENUE", "expression": "LINEORDER.LO_REVENUE * LENGTH(REGIONS.R_NAME)"},
            {"column_name": "V_NATION_CODE", "expression": "SUBSTR(SUPPLIER.S_NATION, 1, 3)"},
        ],
        "filter_condition": "LINEORDER.LO_QUANTITY > 10",
        "partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE", "partition_date_format": "yyyy-MM-dd"},
        "simplified_dimensions": [
            "REGIONS.R_NAME",
            "SUPPLIER.S_NATION",
            "LINEORDER.LO_SHIPMODE",
            "DATES.D_YEAR",
            "LINEORDER.V_NATION_CODE",
        ],
        "simplified_measures": [
            {"name": "ROWS", "expression": "COUNT"},
            {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
            {"name": "V_REVENUE", "expression": "SUM", "column": "LINEORDER.V_REVENUE"},
            {"name": "REGION_REVENUE", "expression": "SUM", "column": "LINEORDER.V_REGION_REVENUE"},
            {"name": "MIN_DISCOUNT", "expression": "MIN", "column": "LINEORDER.LO_DISCOUNT"},
            {
                "name": "CUSTOMERS",
                "expression": "COUNT_DISTINCT",
                "column": "LINEORDER.LO_CUSTKEY",
                "return_type": "bitmap",
            },
        ],
        "aggregation_groups": [
            {"includes": ["R_NAME", "S_NATION", "LO_SHIPMODE"]},
            {"includes": ["LO_SHIPMODE", "V_NATION_CODE"], "select_rule": {"mandatory_dims": ["LO_SHIPMODE"]}},
        ],
    }
    create_model(store, "p", parse_spec(spec))
    create_model(store, "p", parse_spec({**spec, "alias": "spark_read"}))
    create_model(store, "p", parse_spec({**spec, "alias": "spark_joins"}))
    return store


@pytest.mark.parametrize("supplier_join", ["INNER", "LEFT"])
def test_a_tiny_segment_read_on_the_driver_writes_what_spark_reads(
    spark: SparkSession, ssb_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, supplier_join: str
) -> None:
    """The tables read and joined on the driver, or read there and joined by Spark (past `JOINED_MAX_VALUES`):
    the same layout files, join stats (each join's orphans when all are LEFT) and NULL counts as Spark's joins
    of the tables it reads."""
    with _snowflake_store(tmp_path, ssb_dir, supplier_join) as store:
        ctx = BuildContext(spark, store, "p", str(tmp_path / "wh"))
        rng = TimeRange.of(day("1996-05-01"), day("1996-05-08"))

        def build(model: str) -> tuple[Segment, list[str]]:
            report = BuildReport()
            return build_segment(dataclasses.replace(ctx, report=report), model, rng), report.read_on_driver

        local, [read] = build("snow")
        assert all(alias in read for alias in ("LINEORDER", "CUSTOMER", "REGIONS", "SUPPLIER", "DATES")), read
        assert "joined there" in read, read
        monkeypatch.setattr(local_rows, "JOINED_MAX_VALUES", 0)
        spark_joins, [read] = build("spark_joins")
        assert "LINEORDER" in read and "joined there" not in read, read
        monkeypatch.setattr(local_rows, "LOCAL_MAX_VALUES", 0)
        theirs, read_there = build("spark_read")
        assert read_there == []
        files = _layout_files(ctx, "spark_read", theirs.id)
        for model, segment in (("snow", local), ("spark_joins", spark_joins)):
            ours = _layout_files(ctx, model, segment.id)
            assert ours.keys() == files.keys() and len(ours) >= 8
            for layout_id, tables in ours.items():
                assert [t.to_pylist() for t in tables] == [t.to_pylist() for t in files[layout_id]], layout_id
                assert [t.schema for t in tables] == [t.schema for t in files[layout_id]], layout_id
            assert segment.join_stats == theirs.join_stats
            assert segment.column_null_counts == theirs.column_null_counts
        if supplier_join == "LEFT":
            assert local.join_stats is not None and set(local.join_stats) >= {"SUPPLIER", "REGIONS"}, local.join_stats
        [[count]] = spark.sql(
            f"""SELECT count(*) FROM parquet.`{ssb_dir / "LINEORDER"}` l
                LEFT JOIN parquet.`{ssb_dir / "CUSTOMER"}` c ON l.LO_CUSTKEY = c.C_CUSTKEY
                LEFT JOIN parquet.`{tmp_path / "REGIONS"}` r ON c.C_REGION = r.R_REGION
                {supplier_join} JOIN parquet.`{tmp_path / "SUPPLIER"}` s ON l.LO_SUPPKEY = s.S_SUPPKEY
                WHERE l.LO_QUANTITY > 10 AND l.LO_ORDERDATE >= DATE '1996-05-01' AND l.LO_ORDERDATE < DATE '1996-05-08'"""
        ).collect()
        assert local.source_count == count > 0


def test_a_lookup_kept_on_the_driver_is_read_again_when_its_files_change(
    spark: SparkSession, ssb_dir: Path, tmp_path: Path
) -> None:
    """Two tiny segments share the kept REGIONS rows; once its file changes, the next segment joins the new
    rows."""
    with _snowflake_store(tmp_path, ssb_dir) as store:
        ctx = BuildContext(spark, store, "p", str(tmp_path / "wh"))

        def names_in(start: str, end: str) -> set[str]:
            segment = build_segment(ctx, "snow", TimeRange.of(day(start), day(end)))
            found = set()
            for tables in _layout_files(ctx, "snow", segment.id).values():
                for t in tables:
                    found |= {v for c in t.column_names if t[c].type == pa.string() for v in t[c].to_pylist()}
            return found

        assert {"am", "as", "eu"} <= names_in("1996-05-01", "1996-05-08")
        with store.read("p") as tx:
            regions = tx.require(Table, "SSB.REGIONS")
        kept = ctx.lookups.arrow(regions, lambda: None)
        assert kept is not None and kept[0].num_rows == 5  # kept by the first build, not read again here
        renamed = pa.table({"R_REGION": ["AMERICA", "ASIA", "EUROPE"], "R_NAME": ["americas", "asia", "europe"]})
        pq.write_table(renamed, tmp_path / "REGIONS" / "r.parquet")
        found = names_in("1996-05-08", "1996-05-15")
        assert {"americas", "asia", "europe"} <= found and not {"am", "as", "eu"} & found
