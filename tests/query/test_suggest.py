"""`precube model suggest`: on SSB from its 13 queries (the hand-written model's joins, every query answered by a
recommended layout), on a Kylin-sample-shaped snowflake from its queries (a lookup joined twice, a composite
key; built and queried), and on an awkward schema from the data alone (NULLs, orphan and string keys, a lookup
used twice, a composite key, a string date partition)."""

from __future__ import annotations

import datetime as dt
import random
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from precube.cli.app import run
from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import MetadataStore, Project, SourceType, TimeRange, open_store
from precube.metadata.datatypes import TypeFamily
from precube.modeling.model_spec import ModelSpec, load_spec
from precube.modeling.model_store import create_model
from precube.query.project_metadata import read_metadata
from precube.query.session import Session
from precube.query.suggest import _date_format, suggest
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from precube.ssb.queries import SSB_QUERIES
from tests.query.conftest import day
from tests.query.oracle import Case, assert_same, to_duckdb

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _joins(spec: ModelSpec) -> set[tuple[str, str, tuple[str, ...], tuple[str, ...], str]]:
    return {
        (j.table, j.alias, tuple(j.join.foreign_key), tuple(j.join.primary_key), j.join.type.value)
        for j in spec.join_tables
    }


def _project(root: Path, tables: list[Path], database: str) -> MetadataStore:
    store = open_store(f"sqlite:///{root / 'meta.db'}")
    store.create_project(Project(name="p", default_database=database))
    for path in tables:
        load_file_table(store, "p", path, SourceType.PARQUET)
    return store


def _case(sql: str) -> Case:
    return Case("q", "", "layout", False, 1e-9, True, False, sql)


def test_ssb_suggested_from_its_queries_has_the_hand_written_joins(ssb_dir: Path, tmp_path: Path) -> None:
    """From the 13 SSB queries: the hand-written model's joins and partition, every query answered by a
    recommended layout, and `model create` takes the YAML as written. (Building a suggested model and answering
    its queries from layouts, exactly as DuckDB does, is tests/cli/test_tutorial.py's: README's tutorial.)"""
    store = _project(tmp_path, [ssb_dir / t for t in TABLES], "SSB")
    found = suggest(read_metadata(store, "p"), list(SSB_QUERIES.values())[:13], alias="ssb")
    hand = load_spec(Path(str(resources.files("precube").joinpath("resources/ssb_model.yaml"))))
    assert _joins(found.spec) == _joins(hand)
    assert found.spec.partition_desc == hand.partition_desc
    assert "13 of 13 queries answered from layouts" in found.notes
    text = found.to_yaml()
    assert "# DATES: key unique in sample; no orphan keys in sample — LEFT join" in text
    path = tmp_path / "ssb.yaml"
    path.write_text(text)
    create_model(store, "p", load_spec(path))
    store.close()


# --- a Kylin-sample-shaped snowflake ------------------------------------------------------------------------


def _write(root: Path, name: str, columns: dict[str, list[object]], types: dict[str, pa.DataType]) -> Path:
    path = root / name
    path.mkdir(parents=True)
    table = pa.table({c: pa.array(v, type=types.get(c)) for c, v in columns.items()})
    pq.write_table(table, path / "part-0.parquet")
    return path


def _kylin_tables(root: Path) -> list[Path]:
    rnd = random.Random(3)
    countries = ["US", "CN", "DE", "FR", "JP"]
    days = [dt.date(2012, 1, 1) + dt.timedelta(days=i) for i in range(730)]
    accounts = list(range(10_000, 10_200))
    categories = [(c, s) for c in range(100, 130) for s in (0, 3, 15)]
    n = 3_000
    sale_categories = [rnd.choice(categories) for _ in range(n)]
    return [
        _write(
            root,
            "KYLIN_SALES",
            {
                "TRANS_ID": list(range(n)),
                "PART_DT": [rnd.choice(days) for _ in range(n)],
                "LSTG_FORMAT_NAME": [rnd.choice(["Auction", "FP-GTC", "ABIN"]) for _ in range(n)],
                "LEAF_CATEG_ID": [c for c, _ in sale_categories],
                "LSTG_SITE_ID": [s for _, s in sale_categories],
                "PRICE": [round(rnd.uniform(1, 1000), 2) for _ in range(n)],
                "ITEM_COUNT": [rnd.randint(1, 5) for _ in range(n)],
                "SELLER_ID": [rnd.choice(accounts) for _ in range(n)],
                "BUYER_ID": [rnd.choice(accounts) for _ in range(n)],
            },
            {"TRANS_ID": pa.int64(), "LEAF_CATEG_ID": pa.int64(), "LSTG_SITE_ID": pa.int32()},
        ),
        _write(
            root,
            "KYLIN_ACCOUNT",
            {
                "ACCOUNT_ID": accounts,
                "ACCOUNT_BUYER_LEVEL": [rnd.randint(0, 5) for _ in accounts],
                "ACCOUNT_COUNTRY": [rnd.choice(countries) for _ in accounts],
            },
            {"ACCOUNT_ID": pa.int64()},
        ),
        _write(root, "KYLIN_COUNTRY", {"COUNTRY": countries, "NAME": [f"name of {c}" for c in countries]}, {}),
        _write(
            root,
            "KYLIN_CAL_DT",
            {
                "CAL_DT": days,
                "YEAR_BEG_DT": [d.replace(month=1, day=1) for d in days],
                "MONTH_BEG_DT": [d.replace(day=1) for d in days],
            },
            {},
        ),
        _write(
            root,
            "KYLIN_CATEGORY_GROUPINGS",
            {
                "LEAF_CATEG_ID": [c for c, _ in categories],
                "SITE_ID": [s for _, s in categories],
                "META_CATEG_NAME": [f"meta {c % 7}" for c, _ in categories],
            },
            {"LEAF_CATEG_ID": pa.int64(), "SITE_ID": pa.int32()},
        ),
    ]


KYLIN_QUERIES = [
    "select part_dt, sum(price) as total, count(*) as n from kylin_sales group by part_dt",
    "select c.meta_categ_name, sum(s.price) as total from kylin_sales s left join kylin_category_groupings c "
    "on s.leaf_categ_id = c.leaf_categ_id and s.lstg_site_id = c.site_id group by c.meta_categ_name",
    "select buyer_country.name, count(distinct s.seller_id) as sellers, sum(s.item_count) as items "
    "from kylin_sales s left join kylin_account buyer_account on s.buyer_id = buyer_account.account_id "
    "left join kylin_country buyer_country on buyer_account.account_country = buyer_country.country "
    "group by buyer_country.name",
    "select seller_country.country, d.year_beg_dt, sum(s.price) as total from kylin_sales s "
    "left join kylin_account seller_account on s.seller_id = seller_account.account_id "
    "left join kylin_country seller_country on seller_account.account_country = seller_country.country "
    "left join kylin_cal_dt d on s.part_dt = d.cal_dt "
    "where s.lstg_format_name = 'Auction' group by seller_country.country, d.year_beg_dt",
]


@pytest.mark.spark
def test_kylin_sample_schema_from_its_queries_is_built_and_answers_them(spark: SparkSession, tmp_path: Path) -> None:
    paths = _kylin_tables(tmp_path / "data")
    store = _project(tmp_path, paths, "DEFAULT")
    found = suggest(read_metadata(store, "p"), KYLIN_QUERIES, alias="kylin")
    spec = found.spec
    s = "KYLIN_SALES"
    assert spec.fact_table == "DEFAULT.KYLIN_SALES"
    assert _joins(spec) == {
        ("DEFAULT.KYLIN_CATEGORY_GROUPINGS", "KYLIN_CATEGORY_GROUPINGS", (f"{s}.LEAF_CATEG_ID", f"{s}.LSTG_SITE_ID"),
         ("KYLIN_CATEGORY_GROUPINGS.LEAF_CATEG_ID", "KYLIN_CATEGORY_GROUPINGS.SITE_ID"), "LEFT"),
        ("DEFAULT.KYLIN_ACCOUNT", "BUYER_ACCOUNT", (f"{s}.BUYER_ID",), ("BUYER_ACCOUNT.ACCOUNT_ID",), "LEFT"),
        ("DEFAULT.KYLIN_COUNTRY", "BUYER_COUNTRY", ("BUYER_ACCOUNT.ACCOUNT_COUNTRY",), ("BUYER_COUNTRY.COUNTRY",),
         "LEFT"),
        ("DEFAULT.KYLIN_ACCOUNT", "SELLER_ACCOUNT", (f"{s}.SELLER_ID",), ("SELLER_ACCOUNT.ACCOUNT_ID",), "LEFT"),
        ("DEFAULT.KYLIN_COUNTRY", "SELLER_COUNTRY", ("SELLER_ACCOUNT.ACCOUNT_COUNTRY",), ("SELLER_COUNTRY.COUNTRY",),
         "LEFT"),
        ("DEFAULT.KYLIN_CAL_DT", "KYLIN_CAL_DT", (f"{s}.PART_DT",), ("KYLIN_CAL_DT.CAL_DT",), "LEFT"),
    }  # fmt: skip
    assert spec.partition_desc is not None and spec.partition_desc.partition_date_column == f"{s}.PART_DT"
    bitmap = [m for m in spec.simplified_measures if m.expression == "COUNT_DISTINCT"]
    assert [(m.column, m.return_type) for m in bitmap] == [(f"{s}.SELLER_ID", "bitmap")]
    assert "4 of 4 queries answered from layouts" in found.notes
    path = tmp_path / "kylin.yaml"
    path.write_text(found.to_yaml())
    create_model(store, "p", load_spec(path).model_copy(update={"base_index_type": []}))  # (a cheaper build)
    ctx = BuildContext(spark, store, "p", str(tmp_path / "warehouse"), writer="test")
    build_segment(ctx, "kylin", TimeRange.of(day("2012-01-01"), day("2014-01-01")))
    con = duckdb.connect()
    for p in paths:
        con.execute(f"CREATE VIEW {p.name} AS SELECT * FROM read_parquet('{p}/*.parquet')")
    with Session(store, "p", str(tmp_path / "warehouse")) as session:
        for sql in KYLIN_QUERIES:
            result = session.sql(sql, pushdown=False)
            expected = con.sql(to_duckdb(sql.replace("kylin_", "KYLIN_"))).to_arrow_table()
            assert_same(_case(sql), expected, result.table)
    con.close()
    store.close()


# --- an awkward schema, from the data alone -----------------------------------------------------------------


def _awkward_tables(root: Path) -> list[Path]:
    rnd = random.Random(5)
    airports = [f"A{i:02d}" for i in range(40)]
    airlines = ["AA", "DL", "UA", "WN"]
    aircraft = [(a, f"N{i}") for a in airlines for i in range(10)]  # tail numbers repeat across airlines
    n = 2_000
    planes = [rnd.choice(aircraft) for _ in range(n)]
    origin: list[str | None] = [rnd.choice(airports) if rnd.random() > 0.05 else None for _ in range(n)]
    dest = [rnd.choice(airports) if rnd.random() > 0.03 else "ZZZ" for _ in range(n)]  # orphan keys
    return [
        _write(
            root,
            "FLIGHTS",
            {
                "FL_DATE": [
                    (dt.date(2015, 1, 1) + dt.timedelta(days=rnd.randrange(120))).isoformat() for _ in range(n)
                ],
                "AIRLINE": [a for a, _ in planes],
                "TAIL_NUM": [t for _, t in planes],
                "ORIGIN_AIRPORT": origin,
                "DEST_AIRPORT": dest,
                "DEP_DELAY": [rnd.choice([None, rnd.uniform(-10, 90)]) for _ in range(n)],
                "DISTANCE": [rnd.randint(100, 3000) for _ in range(n)],
            },
            {},
        ),
        _write(root, "AIRPORTS", {"AIRPORT": airports, "STATE": [f"S{i % 9}" for i in range(40)]}, {}),
        _write(root, "AIRLINES", {"AIRLINE": airlines, "AIRLINE_NAME": [f"{a} air" for a in airlines]}, {}),
        _write(
            root,
            "AIRCRAFT",
            {
                "AIRLINE": [a for a, _ in aircraft],
                "TAIL_NUM": [t for _, t in aircraft],
                "SEATS": [rnd.randint(50, 300) for _ in aircraft],
            },
            {},
        ),
    ]


def test_awkward_schema_from_the_data_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No query: joins from key overlaps (a string key with orphans and NULLs, a lookup used twice, a composite
    key), a string column of dates as the partition; `model create` takes the YAML unchanged."""
    paths = _awkward_tables(tmp_path / "data")
    args = ["--home", str(tmp_path / "home")]
    assert run([*args, "project", "create", "p", "-d", "AIR"]) == 0
    assert run([*args, "table", "load", "-p", "p", *map(str, paths)]) == 0
    out = tmp_path / "flights.yaml"
    assert run([*args, "model", "suggest", "-p", "p", "-o", str(out)]) == 0
    spec = load_spec(out)
    joins = {(j.table, tuple(j.join.foreign_key), tuple(j.join.primary_key)) for j in spec.join_tables}
    aliases = {j.join.foreign_key[0]: j.alias for j in spec.join_tables if len(j.join.foreign_key) == 1}
    assert spec.fact_table == "AIR.FLIGHTS"
    f, o, d = "FLIGHTS", aliases["FLIGHTS.ORIGIN_AIRPORT"], aliases["FLIGHTS.DEST_AIRPORT"]
    assert o != d  # one lookup under two aliases
    assert {
        ("AIR.AIRPORTS", (f"{f}.ORIGIN_AIRPORT",), (f"{o}.AIRPORT",)),
        ("AIR.AIRPORTS", (f"{f}.DEST_AIRPORT",), (f"{d}.AIRPORT",)),
        ("AIR.AIRLINES", (f"{f}.AIRLINE",), (f"{aliases['FLIGHTS.AIRLINE']}.AIRLINE",)),
    } <= joins
    [composite] = [j for j in spec.join_tables if j.table == "AIR.AIRCRAFT"]
    assert composite.join.foreign_key == [f"{f}.AIRLINE", f"{f}.TAIL_NUM"]
    assert all(j.join.type.value == "LEFT" for j in spec.join_tables)
    assert spec.partition_desc is not None
    assert (spec.partition_desc.partition_date_column, spec.partition_desc.partition_date_format) == (
        f"{f}.FL_DATE",
        "yyyy-MM-dd",
    )
    assert len(joins) == 4  # (AIRCRAFT.AIRLINE is the fact's AIRLINE: AIRLINES is not joined through it again)
    measures = {(m.expression, m.column) for m in spec.simplified_measures}
    assert {("COUNT", None), ("SUM", f"{f}.DEP_DELAY"), ("SUM", f"{f}.DISTANCE")} <= measures
    text = out.read_text()
    dest_comment = next(line for line in text.splitlines() if line.strip().startswith(f"# {d}:"))
    assert re.search(r"orphan keys [1-5] % — LEFT join", dest_comment)  # (3 % of the rows; of the values, fewer)
    origin_comment = next(line for line in text.splitlines() if line.strip().startswith(f"# {o}:"))
    assert "% NULL keys" in origin_comment
    capsys.readouterr()
    assert run([*args, "model", "create", "-p", "p", str(out)]) == 0
    assert "created model flights" in capsys.readouterr().out
    assert yaml.safe_load(text)["alias"] == "flights"


AWKWARD_QUERIES = [
    "select airline, sum(distance) as miles from flights group by airline order by sum(distance) desc limit 3",
    "select origin.state, percentile_approx(dep_delay, 0.9) as p90, approx_count_distinct(tail_num) as planes, "
    "count(distinct f.airline) as airlines from flights f "
    "left join airports origin on f.origin_airport = origin.airport "
    "left join airports dest on f.dest_airport = dest.airport where dest.state = 'S1' group by origin.state",
]


def test_awkward_schema_from_queries_proposes_their_measures(tmp_path: Path) -> None:
    """Queries name the lookup's two aliases and ask a top N, a percentile and distinct counts (approximate and
    exact): the measures are proposed, and every query is answered by a recommended layout."""
    store = _project(tmp_path, _awkward_tables(tmp_path / "data"), "AIR")
    found = suggest(read_metadata(store, "p"), AWKWARD_QUERIES)
    spec = found.spec
    assert {(j.alias, j.join.foreign_key[0]) for j in spec.join_tables} == {
        ("ORIGIN_AIRPORTS", "FLIGHTS.ORIGIN_AIRPORT"),
        ("DEST_AIRPORTS", "FLIGHTS.DEST_AIRPORT"),
    }  # (not ORIGIN and DEST: the model would name ORIGIN.AIRPORT as the fact's ORIGIN_AIRPORT is named)
    measures = {(m.expression, tuple(p.value for p in m.parameters()), m.return_type) for m in spec.simplified_measures}
    assert {
        ("TOP_N", ("FLIGHTS.DISTANCE", "FLIGHTS.AIRLINE"), "topn(100)"),
        ("PERCENTILE_APPROX", ("FLIGHTS.DEP_DELAY",), "percentile(100)"),
        ("COUNT_DISTINCT", ("FLIGHTS.TAIL_NUM",), "hllc(14)"),
        ("COUNT_DISTINCT", ("FLIGHTS.AIRLINE",), "bitmap"),
    } <= measures
    assert "2 of 2 queries answered from layouts" in found.notes
    assert len(spec.aggregation_groups) == 2
    path = tmp_path / "flights.yaml"
    path.write_text(found.to_yaml())
    create_model(store, "p", load_spec(path))
    store.close()


@pytest.mark.parametrize(
    ("low", "high", "family", "expected"),
    [
        (20150101, 20151231, TypeFamily.INTEGER, "yyyyMMdd"),
        (20150101, 20151232, TypeFamily.INTEGER, None),  # no 32nd day
        (1, 20151231, TypeFamily.INTEGER, None),
        ("2015-01-01", "2015-12-31", TypeFamily.STRING, "yyyy-MM-dd"),
        ("20150101", "20151231", TypeFamily.STRING, "yyyyMMdd"),
        ("AA", "ZZ", TypeFamily.STRING, None),
    ],
)
def test_a_partition_column_of_integers_or_strings_reads_as_dates(
    low: object, high: object, family: TypeFamily, expected: str | None
) -> None:
    assert _date_format(low, high, family) == expected
