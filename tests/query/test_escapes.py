"""Nothing outside the project is read, written or fetched (issue 17 §1): every escape attempt is a one-line
QueryError before any engine sees it, a canary file outside the project keeps its access time, nothing
appears under HOME; the DuckDB engine itself refuses files outside the project, applies its memory limit
and stops a statement at the time limit."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from precube.query import guard
from precube.query.duckdb_engine import DuckDBEngine
from precube.query.errors import (
    EngineError,
    ForbiddenSqlError,
    QueryError,
    QueryTimeoutError,
    SqlSyntaxError,
    UnknownObjectError,
)
from precube.query.project_metadata import MetadataReader
from precube.query.session import Session
from precube.settings import QuerySettings
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same

CANARY = "{canary}"  # each attempt names the canary file outside the project
LO = "ssb.lineorder"

# (attempt, the error it must raise): table functions, file paths as tables, URLs, extension scans, engine
# catalogs and settings, internal functions, statements, in every position a table or function can take.
ESCAPES: list[tuple[str, type[QueryError]]] = [
    (f"select * from read_text('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_blob('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_csv('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_csv_auto('{CANARY}')", ForbiddenSqlError),
    (f"select * from sniff_csv('{CANARY}')", ForbiddenSqlError),
    (f"select * from parquet_metadata('{CANARY}')", ForbiddenSqlError),
    (f"select * from parquet_schema('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_json('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_ndjson('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_json_auto('{CANARY}')", ForbiddenSqlError),
    (f"select * from glob('{CANARY}')", QueryError),  # sqlglot cannot parse DuckDB's glob() as a table
    (f"select * from '{CANARY}'", ForbiddenSqlError),
    (f'select * from "{CANARY}"', ForbiddenSqlError),
    (f"select * from `{CANARY}`", ForbiddenSqlError),
    (f"select * from csv.`{CANARY}`", ForbiddenSqlError),
    (f"select * from parquet.`{CANARY}`", ForbiddenSqlError),
    ("select * from '/proc/self/environ'", ForbiddenSqlError),
    ("select * from read_text('/proc/self/environ')", ForbiddenSqlError),
    (f"select * from {LO} l join read_csv('{CANARY}') c on true", ForbiddenSqlError),
    (f"select * from {LO} l, '{CANARY}' c", ForbiddenSqlError),
    (f"with c as (select * from read_text('{CANARY}')) select * from c", ForbiddenSqlError),
    (f"with c as (select * from '{CANARY}') select count(*) from {LO}, c", ForbiddenSqlError),
    (f"select * from (select * from read_text('{CANARY}')) t", ForbiddenSqlError),
    (f"select (select content from read_text('{CANARY}')) from {LO} limit 1", ForbiddenSqlError),
    (f"select lo_revenue from {LO} where exists (select 1 from read_csv('{CANARY}'))", ForbiddenSqlError),
    (f"select lo_revenue from {LO} where lo_revenue in (select 1 from '{CANARY}')", ForbiddenSqlError),
    (f"select lo_revenue from {LO} union all select content from read_text('{CANARY}')", ForbiddenSqlError),
    (f"select 1 from {LO} union select 2 from '{CANARY}'", ForbiddenSqlError),
    (f"select * from {LO}, lateral (select * from read_text('{CANARY}'))", ForbiddenSqlError),
    (f"select * from table(read_text('{CANARY}'))", ForbiddenSqlError),
    (f"select * from {LO} lateral view explode(array(1, 2)) x as y", ForbiddenSqlError),
    ("select * from unnest(array(1, 2))", ForbiddenSqlError),
    ("select explode(array(1, 2))", ForbiddenSqlError),
    ("select * from range(10)", ForbiddenSqlError),
    ("select * from query('select 1')", ForbiddenSqlError),
    ("select * from read_parquet('https://example.com/x.parquet')", ForbiddenSqlError),
    ("select * from 'https://example.com/x.parquet'", ForbiddenSqlError),
    ("select * from read_csv('s3://bucket/x.csv')", ForbiddenSqlError),
    ("select * from iceberg_scan('/tmp/iceberg')", ForbiddenSqlError),
    ("select * from delta_scan('/tmp/delta')", ForbiddenSqlError),
    ("select * from postgres_scan('host=localhost', 'public', 't')", ForbiddenSqlError),
    ("select * from sqlite_scan('/tmp/x.db', 't')", ForbiddenSqlError),
    ("select * from mysql_query('x', 'select 1')", ForbiddenSqlError),
    ("select * from duckdb_tables()", ForbiddenSqlError),
    ("select * from duckdb_settings()", ForbiddenSqlError),
    ("select * from duckdb_extensions()", ForbiddenSqlError),
    ("select * from duckdb_tables", ForbiddenSqlError),
    ("select * from pragma_database_list()", ForbiddenSqlError),
    # information_schema.schemata/tables/columns are precube's own views (query.catalog); the engine's are not
    ("select * from information_schema.views", ForbiddenSqlError),
    ("select * from SYSTEM.INFORMATION_SCHEMA.COLUMNS", ForbiddenSqlError),
    ("select * from pg_catalog.pg_class", ForbiddenSqlError),
    ("select * from sqlite_master", ForbiddenSqlError),
    ("select * from system.main.duckdb_tables", ForbiddenSqlError),
    ('select * from "memory"."main"."lineorder"', ForbiddenSqlError),
    ("select current_setting('home_directory')", ForbiddenSqlError),
    ("select getenv('HOME')", ForbiddenSqlError),
    ("select version()", ForbiddenSqlError),
    ("select 'HOME'.getenv()", ForbiddenSqlError),
    (f"select lo_revenue from {LO} where current_setting('threads') = '1'", ForbiddenSqlError),
    (f"select sum(lo_revenue) over (partition by current_setting('threads')) from {LO}", ForbiddenSqlError),
    (f"select precube_bitmap_count(list(lo_custkey::binary)) from {LO}", ForbiddenSqlError),
    (f"select precube_hll_count(null) from {LO}", ForbiddenSqlError),
    (f"select precube_kll_quantile(null, 0.5) from {LO}", ForbiddenSqlError),
    (f"SeLeCt * FrOm ReAd_TeXt('{CANARY}')", ForbiddenSqlError),
    (f"select * from \"READ_TEXT\"('{CANARY}')", ForbiddenSqlError),
    (f"select * from read_text /* a comment */ ('{CANARY}')", ForbiddenSqlError),
    (f"select * from -- a line comment\n read_text('{CANARY}')", ForbiddenSqlError),
    (f"select * from {LO} /* ; select * from read_text('{CANARY}') */ limit 1; select 1", SqlSyntaxError),
    (f"select 1; select * from read_text('{CANARY}')", SqlSyntaxError),
    ("ATTACH '/tmp/precube-escape.db' AS x", SqlSyntaxError),
    (f"COPY (select 1) TO '{CANARY}.out'", SqlSyntaxError),
    ("INSTALL httpfs", SqlSyntaxError),
    ("LOAD httpfs", SqlSyntaxError),
    ("PRAGMA database_list", SqlSyntaxError),
    ("SET enable_external_access = true", SqlSyntaxError),
    ("CREATE TABLE x AS SELECT 1", SqlSyntaxError),
    (f"CREATE VIEW v AS SELECT * FROM read_text('{CANARY}')", SqlSyntaxError),
    (f"INSERT INTO {LO} SELECT * FROM {LO}", SqlSyntaxError),
    (f"select * into x from {LO}", ForbiddenSqlError),
    ("select * from (with a as (select 1 x) select * from a) b, a", UnknownObjectError),
    (f'with a as (select * from "{CANARY}"), "{CANARY}" as (select 1) select * from a', ForbiddenSqlError),
    (f'with "{CANARY}" as (select * from "{CANARY}") select * from "{CANARY}"', ForbiddenSqlError),
    ("with b as (select * from a), a as (select 1 x) select * from b", UnknownObjectError),
    (f"select transform(array(1), x -> read_text('{CANARY}'))", ForbiddenSqlError),
    (f"select * from {LO} l join lateral read_text('{CANARY}') t on true", ForbiddenSqlError),
    (f"from read_text('{CANARY}') select *", ForbiddenSqlError),
    (f"select * from {LO} where lo_revenue = any(select 1 from read_text('{CANARY}'))", ForbiddenSqlError),
    (f"select * from {LO} pivot (sum(lo_revenue) for lo_tax in (select 1 from '{CANARY}'))", ForbiddenSqlError),
    (f"select * from read_text(['{CANARY}', '/etc/hostname'])", ForbiddenSqlError),
]


@dataclass
class Escapes:
    session: Session
    canary: Path
    home: Path
    engine_calls: list[str]


def _atime(path: Path) -> float:
    return path.stat().st_atime


def _age(path: Path) -> None:
    """Make the canary's times days old, so a read updates its access time even under `relatime`."""
    old = time.time() - 3 * 86_400
    os.utime(path, (old, old))


@pytest.fixture(scope="module")
def escapes(query_model: QueryModel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Escapes]:
    outside = tmp_path_factory.mktemp("outside")
    canary = outside / "canary.csv"
    canary.write_text("secret,value\nhunter2,42\n")
    home = tmp_path_factory.mktemp("home")
    settings = QuerySettings(timeout_s=30, memory_limit="1GB")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        with Session(*query_model.session_args, settings=settings) as session:
            calls: list[str] = []
            run = session.duckdb.execute

            def spy(sql: str, *args: Any) -> Any:
                calls.append(sql)
                return run(sql, *args)

            patch.setattr(session.duckdb, "execute", spy)
            yield Escapes(session, canary, home, calls)


def test_canary_shows_a_read(escapes: Escapes) -> None:
    """The canary's access time moves when it is read (so the escape tests' atime check can fail)."""
    _age(escapes.canary)
    before = _atime(escapes.canary)
    escapes.canary.read_bytes()
    if _atime(escapes.canary) == before:
        pytest.skip("the file system does not record access times (noatime)")
    assert _atime(escapes.canary) > before


@pytest.mark.spark
@pytest.mark.parametrize(("attempt", "error"), ESCAPES, ids=[f"{i:02d}" for i in range(len(ESCAPES))])
def test_escape_is_refused(attempt: str, error: type[QueryError], escapes: Escapes) -> None:
    sql = attempt.replace(CANARY, str(escapes.canary))
    _age(escapes.canary)
    before = _atime(escapes.canary)
    real_duckdb_dir = (Path.home() / ".duckdb").exists()
    escapes.engine_calls.clear()
    for call in (
        lambda: escapes.session.sql(sql, pushdown=True),
        lambda: escapes.session.sql(sql, force_pushdown=True),
        lambda: escapes.session.explain(sql, pushdown=True),
    ):
        with pytest.raises(error) as raised:
            call()
        message = str(raised.value)
        assert message and "\n" not in message, f"not one line: {message!r}"
    assert escapes.engine_calls == [], "the attempt reached the engine"
    assert _atime(escapes.canary) == before, "the canary file was read"
    assert not list(escapes.canary.parent.iterdir())[1:], "a file appeared beside the canary"
    assert list(escapes.home.iterdir()) == [], "something was written under HOME"
    assert (Path.home() / ".duckdb").exists() == real_duckdb_dir


def test_refusal_names_what_is_refused() -> None:
    from precube.query.frontend import Catalog, parse

    catalog = Catalog("ssb", {"ssb": {"lineorder": {"lo_revenue": "int"}}})
    for sql, named in [
        ("select * from read_text('/etc/passwd')", "READ_TEXT"),
        ("select getenv('HOME') from lineorder", "GETENV"),
        ("select * from '/etc/passwd'", "/etc/passwd"),
        ("select * from information_schema.tables", "information_schema"),
        ("select precube_bitmap_count(lo_revenue) from lineorder", "PRECUBE_BITMAP_COUNT"),
    ]:
        with pytest.raises(ForbiddenSqlError, match="is not allowed") as raised:
            guard.check(parse(sql), catalog)
        assert named in str(raised.value) and raised.value.code == "FORBIDDEN_SQL"


# Calls Spark SQL and Kylin users write, each of which the guard must let through.
ORDINARY_CALLS = [
    "abs(x)",
    "ceil(x)",
    "floor(x)",
    "round(x, 2)",
    "bround(x, 2)",
    "pmod(x, 7)",
    "x % 7",
    "power(x, 2)",
    "sqrt(x)",
    "exp(x)",
    "ln(x)",
    "log10(x)",
    "log(2, x)",
    "sign(x)",
    "greatest(x, 1)",
    "least(x, 1)",
    "rand()",
    "pi()",
    "degrees(x)",
    "cos(x)",
    "atan2(x, 1)",
    "hex(x)",
    "conv(s, 10, 2)",
    "upper(s)",
    "lower(s)",
    "lcase(s)",
    "ucase(s)",
    "length(s)",
    "char_length(s)",
    "substr(s, 1, 2)",
    "substring(s, 1, 2)",
    "concat(s, 'a')",
    "concat_ws('-', s, s)",
    "trim(s)",
    "ltrim(s)",
    "rtrim(s)",
    "lpad(s, 5, '0')",
    "rpad(s, 5, '0')",
    "replace(s, 'a', 'b')",
    "reverse(s)",
    "repeat(s, 2)",
    "split(s, ',')",
    "split_part(s, ',', 1)",
    "instr(s, 'a')",
    "locate('a', s)",
    "initcap(s)",
    "ascii(s)",
    "translate(s, 'a', 'b')",
    "regexp_extract(s, 'a(b)', 1)",
    "regexp_replace(s, 'a', 'b')",
    "s rlike 'a'",
    "s like 'a%'",
    "s ilike 'a%'",
    "md5(s)",
    "sha2(s, 256)",
    "crc32(s)",
    "hash(s)",
    "format_number(x, 2)",
    "format_string('%d', x)",
    "levenshtein(s, 'a')",
    "soundex(s)",
    "space(2)",
    "elt(1, s, s)",
    "nvl(x, 0)",
    "ifnull(x, 0)",
    "nvl2(x, 1, 0)",
    "coalesce(x, 0)",
    "nullif(x, 0)",
    "if(x > 1, 1, 0)",
    "case when x > 1 then 1 else 0 end",
    "isnull(x)",
    "isnotnull(x)",
    "cast(x as string)",
    "x::double",
    "try_cast(s as int)",
    "typeof(x)",
    "year(d)",
    "month(d)",
    "day(d)",
    "dayofmonth(d)",
    "dayofweek(d)",
    "dayofyear(d)",
    "weekofyear(d)",
    "quarter(d)",
    "hour(ts)",
    "minute(ts)",
    "second(ts)",
    "date_format(d, 'yyyy-MM')",
    "date_add(d, 1)",
    "date_sub(d, 1)",
    "datediff(d, d)",
    "add_months(d, 1)",
    "months_between(d, d)",
    "last_day(d)",
    "next_day(d, 'MO')",
    "trunc(d, 'MM')",
    "date_trunc('MONTH', ts)",
    "to_date(s)",
    "to_timestamp(s)",
    "unix_timestamp(ts)",
    "from_unixtime(x)",
    "current_date",
    "current_date()",
    "current_timestamp()",
    "now()",
    "extract(year from d)",
    "date_part('year', d)",
    "make_date(2020, 1, 1)",
    "x between 1 and 2",
    "x in (1, 2)",
    "array(1, 2)",
    "size(array(1))",
    "array_contains(array(1), 1)",
    "sort_array(array(2, 1))",
    "element_at(array(1), 1)",
    "struct(1, 2)",
    "map('a', 1)",
    "get_json_object(s, '$.a')",
    "to_json(struct(1))",
    "sequence(1, 3)",
    "uuid()",
]
ORDINARY_AGGREGATES = [
    "count(*)",
    "count(x)",
    "count(distinct x)",
    "sum(x)",
    "avg(x)",
    "min(x)",
    "max(x)",
    "stddev(x)",
    "stddev_pop(x)",
    "stddev_samp(x)",
    "variance(x)",
    "var_pop(x)",
    "var_samp(x)",
    "corr(x, x)",
    "covar_pop(x, x)",
    "approx_count_distinct(x)",
    "percentile_approx(x, 0.5)",
    "percentile(x, 0.5)",
    "median(x)",
    "collect_list(x)",
    "collect_set(x)",
    "first(x)",
    "last(x)",
    "any_value(x)",
    "max_by(s, x)",
    "min_by(s, x)",
    "count_if(x > 1)",
    "bool_and(x > 1)",
    "bool_or(x > 1)",
    "skewness(x)",
    "kurtosis(x)",
    "row_number() over (order by x)",
    "rank() over (order by x)",
    "dense_rank() over (order by x)",
    "percent_rank() over (order by x)",
    "cume_dist() over (order by x)",
    "ntile(4) over (order by x)",
    "lag(x) over (order by x)",
    "lead(x, 2) over (order by x)",
    "first_value(x) over (order by x)",
    "last_value(x) over (order by x)",
    "nth_value(x, 2) over (order by x)",
    "sum(x) over (partition by s order by d rows between unbounded preceding and current row)",
]


@pytest.mark.parametrize("call", ORDINARY_CALLS + ORDINARY_AGGREGATES)
def test_ordinary_functions_pass_the_guard(call: str) -> None:
    from precube.query.frontend import Catalog, parse

    catalog = Catalog("ssb", {"ssb": {"t": {"x": "int", "s": "string", "d": "date", "ts": "timestamp"}}})
    guard.check(parse(f"select {call} from t"), catalog)


def test_allow_list_names_real_sqlglot_functions() -> None:
    """Every class the allow-list names exists in this sqlglot (a renamed class would silently refuse a
    function users call)."""
    names = guard._ALLOWED_CLASS_NAMES
    assert len(guard.ALLOWED_FUNCTIONS) == len(set(names)), sorted(
        set(names) - {c.__name__ for c in guard.ALLOWED_FUNCTIONS}
    )


# Ordinary SQL the guard lets through: answered as the oracle answers it.
ALLOWED = [
    "select d_year, nvl(sum(lo_revenue), 0) r, rank() over (order by sum(lo_revenue) desc) k "
    "from ssb.lineorder join ssb.dates on lo_orderdate = d_datekey group by d_year",
    "with y as (select d_year, d_datekey from ssb.dates where d_year between 1993 and 1995) "
    "select y.d_year, count(*) n from ssb.lineorder l join y on l.lo_orderdate = y.d_datekey group by y.d_year",
    "select upper(c_region) r, length(c_city) n, substr(c_nation, 1, 3) s, coalesce(c_mktsegment, 'x') m, "
    "round(avg(c_custkey), 2) a from ssb.customer group by 1, 2, 3, 4",
    "select lo_shipmode, case when lo_discount > 5 then 'high' else 'low' end d, "
    "greatest(max(lo_tax), 1) t, count(distinct lo_suppkey) s from ssb.lineorder "
    "where lo_shipmode like 'A%' or lo_shipmode in ('MAIL', 'SHIP') group by 1, 2",
    "select p_brand, cast(p_size as double) / 2 h, abs(p_size - 25) d, p_partkey % 7 m, "
    "concat_ws('-', p_mfgr, p_category) c from ssb.part where p_partkey < 50",
    "select v.a + 1 b from (values (1), (2)) as v(a)",
    "with recursive r as (select 1 n union all select n + 1 from r where n < 3) select n from r",
    "select d_year, size(filter(array(d_year, d_yearmonthnum), x -> x > 1994)) n from ssb.dates group by 1, 2",
    "select d_year, (select max(d_year) from ssb.dates) top, year(current_date) >= 2024 now_ok "
    "from ssb.dates group by d_year",
]


@pytest.mark.spark
@pytest.mark.parametrize("sql", ALLOWED)
def test_ordinary_sql_still_answers(sql: str, escapes: Escapes, oracle: Oracle) -> None:
    result = escapes.session.sql(sql)
    assert_same(Case("allowed", "", "pushdown", False, 1e-9, True, False, sql), oracle.run(sql), result.table)


# --- the engine's own limits --------------------------------------------------------------------------


def test_engine_refuses_files_outside_the_project(tmp_path: Path) -> None:
    canary = tmp_path / "outside.csv"
    canary.write_text("a\n1\n")
    (tmp_path / "wh" / "p").mkdir(parents=True)
    engine = DuckDBEngine(str(tmp_path / "wh"), "p")
    try:
        for sql in [
            "select * from read_text('/etc/hostname')",
            f"select * from read_csv('{canary}')",
            f"select * from '{canary}'",
            f"select * from read_text('{tmp_path}/wh/p/../../outside.csv')",
            "select * from read_parquet('https://example.com/x.parquet')",
            f"COPY (select 1) TO '{tmp_path}/written.csv'",
            f"ATTACH '{tmp_path}/x.db' AS x",
            "INSTALL httpfs",
            "LOAD httpfs",
            "SET enable_external_access = true",  # the settings that keep files out cannot be undone
            "SET allowed_directories = ['/']",
            "SET allowed_paths = ['/etc/passwd']",
            f"SET temp_directory = '{tmp_path}'",
        ]:
            with pytest.raises(EngineError) as refused:
                engine.execute(sql, [], [])
            assert isinstance(refused.value.__cause__, duckdb.Error), sql  # DuckDB's own refusal, mapped
        assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.csv", "wh"]
        # inside the project's directory it reads (what the layouts need)
        (tmp_path / "wh" / "p" / "in.csv").write_text("a\n1\n")
        inside = engine.execute(f"select a from read_csv('{tmp_path}/wh/p/in.csv')", [], [])
        assert inside.to_pylist() == [{"a": 1}]
    finally:
        engine.close()


@pytest.mark.spark
def test_engine_reads_a_source_it_did_not_start_with(query_model: QueryModel, tmp_path: Path) -> None:
    """A source outside the allowed paths (one loaded after the engine started) reopens the engine with the
    list grown, before the statement's layouts are registered; both read as DuckDB reads their files."""
    from tests.query.test_duckdb_engine import _layout

    dates = MetadataReader(query_model.store).get(query_model.project).tables["SSB.DATES"]
    files = f"read_parquet('{dates.location}/**/*.parquet')"
    engine, scan = _layout(tmp_path)
    try:
        with pytest.raises(EngineError, match="Permission Error"):
            engine.execute(f"select count(*) from {files}", [], [])
        engine.execute(f'select count(*) from "{scan.name}"', [scan], [])  # the layout held before the reopen
        sql = f'select (select count(*) from "{scan.name}") a, (select count(*) from ssb.dates) b'
        found = engine.execute(sql, [scan], [dates])
        expected = duckdb.sql(f"select {scan.rows} a, (select count(*) from {files}) b").to_arrow_table()
        assert found.to_pylist() == expected.to_pylist()
    finally:
        engine.close()


def test_memory_limit_is_applied(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", memory_limit="123MB")
    try:
        reference = duckdb.connect()
        reference.execute("SET memory_limit = '123MB'")
        expected = reference.execute("select current_setting('memory_limit')").fetchall()
        assert engine.con.execute("select current_setting('memory_limit')").fetchall() == expected
        default = duckdb.connect().execute("select current_setting('memory_limit')").fetchall()
        assert expected != default
    finally:
        engine.close()
    with pytest.raises(QueryError, match="memory_limit"):
        DuckDBEngine(str(tmp_path), "p", memory_limit="lots")


def test_timeout_interrupts_a_long_statement(tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p", timeout_s=0.5)
    try:
        started = time.monotonic()
        with pytest.raises(QueryTimeoutError, match=r"time limit of 0.5 s \(\[query\] timeout_s\)"):
            engine.execute("select count(*) from range(1000000000) a, range(1000000000) b", [], [])
        assert time.monotonic() - started < 5
        # the engine answers the next statements, also after the time limit has passed again
        assert engine.execute("select 42 x", [], []).to_pylist() == [{"x": 42}]
        time.sleep(0.7)
        assert engine.execute("select 43 x", [], []).to_pylist() == [{"x": 43}]
    finally:
        engine.close()


@pytest.mark.spark
def test_spark_timeout_cancels_the_statement(spark: Any, tmp_path: Path) -> None:
    from precube.query.spark_engine import SparkEngine

    engine = SparkEngine(lambda: spark, str(tmp_path), "p", timeout_s=2)
    started = time.monotonic()
    with pytest.raises(QueryTimeoutError, match="time limit of 2 s"):
        engine.execute(
            "select count(*) n from range(1000000) a cross join range(1000000) b where (a.id + b.id) % 7 = 3", [], []
        )
    assert time.monotonic() - started < 30
    engine.timeout_s = 120  # the session answers the next statement (on a loaded machine in more than 2 s)
    assert engine.execute("select 42 x", [], []).to_pylist() == [{"x": 42}]
