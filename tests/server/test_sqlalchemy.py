"""The SQLAlchemy dialect both ways (`precube:///PROJECT?home=…` in this process, `precube+http://…/PROJECT`
through the shared live server) and pandas over it: query cases equal the oracle's, `select()` and `text()`
compile to SQL precube answers, the inspector calls Superset makes when a database and a dataset are added
(schemas, tables, views, columns with types, keys, indexes, comments), a chart's query with each of Superset's
time grains on the model's partition column, and errors as SQLAlchemy's wrapping PEP 249's."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
import sqlalchemy as sa

import precube.dbapi as db
from precube.dbapi.dialect import PrecubeDialect
from precube_client.dialect import PrecubeHTTPDialect
from precube_client.time_grains import TIME_GRAIN_EXPRESSIONS, datetime_literal
from tests.query.oracle import Oracle, assert_same, load_case
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

pytestmark = pytest.mark.spark

CASES = sorted((Path(__file__).parent.parent / "query" / "cases").glob("*.sql"))[3::12]
TABLES = ["customer", "dates", "lineorder", "part", "supplier"]


@pytest.fixture(scope="module", params=["local", "http"])
def engine(request: pytest.FixtureRequest, server_home: ServerHome, live: LiveServer) -> Iterator[sa.Engine]:
    if request.param == "local":
        url = sa.URL.create("precube", database=server_home.project, query={"home": str(server_home.settings.home)})
    else:
        url = sa.URL.create("precube+http", ADMIN[0], ADMIN[1], "127.0.0.1", live.port, database=server_home.project)
    found = sa.create_engine(url)
    yield found
    found.dispose()


def _table(result: sa.CursorResult[Any], expected: pa.Table) -> pa.Table:
    """A result's rows as Arrow, each column typed as its values are (the oracle's type for all-NULL ones)."""
    rows = result.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in expected.schema]
    arrays = [
        pa.array(list(c), type=None if any(v is not None for v in c) else f.type)
        for c, f in zip(columns, expected.schema, strict=True)
    ]
    return pa.table(arrays, names=list(result.keys()))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_cases_through_sqlalchemy_equal_the_oracle(path: Path, engine: sa.Engine, oracle: Oracle) -> None:
    case = load_case(path)
    expected = oracle.run(case.sql)
    with engine.connect() as con:
        assert_same(case, expected, _table(con.exec_driver_sql(case.sql), expected))


def test_select_and_text_compile_to_sql_precube_answers(engine: sa.Engine, oracle: Oracle) -> None:
    meta = sa.MetaData()
    lineorder = sa.Table("lineorder", meta, autoload_with=engine, schema="ssb")
    dates = sa.Table("dates", meta, autoload_with=engine, schema="ssb")
    query = (
        sa.select(dates.c.d_year, sa.func.sum(lineorder.c.lo_revenue).label("revenue"))
        .select_from(lineorder.join(dates, lineorder.c.lo_orderdate == dates.c.d_datekey))
        .where(dates.c.d_year.between(1993, 1996), lineorder.c.lo_discount > sa.bindparam("discount"))
        .group_by(dates.c.d_year)
        .order_by(dates.c.d_year)
        .limit(3)
        .offset(1)
    )
    sql = str(query.params(discount=4).compile(engine, compile_kwargs={"literal_binds": True}))
    expected = oracle.run(sql)
    with engine.connect() as con:
        got = con.execute(query, {"discount": 4}).fetchall()
        assert [tuple(r) for r in got] == list(zip(*(c.to_pylist() for c in expected.columns), strict=True))
        assert len(got) == 3
        text = sa.text("select count(*) from ssb.customer where c_region = :region and c_name <> :name")
        n = con.execute(text, {"region": "ASIA", "name": "' or 1=1 --"}).scalar()
        assert n == oracle.con.execute("select count(*) from customer where c_region = 'ASIA'").fetchall()[0][0]
        cast = con.execute(sa.select(sa.cast(dates.c.d_year, sa.String), sa.cast("7", sa.Integer)).limit(1)).one()
        assert isinstance(cast[0], str) and cast[1] == 7


def test_pandas_read_sql(engine: sa.Engine, oracle: Oracle) -> None:
    sql = (
        "select c_region, count(*) as n, sum(lo_revenue) as revenue from ssb.lineorder "
        "join ssb.customer on lo_custkey = c_custkey group by c_region order by c_region"
    )
    frame = pd.read_sql(sql, engine)
    expected = oracle.run(sql).to_pandas().rename(columns=str.lower)
    assert list(frame.columns) == ["c_region", "n", "revenue"]
    assert frame["c_region"].tolist() == expected["c_region"].tolist()
    assert [int(v) for v in frame["revenue"]] == [int(v) for v in expected["revenue"]]
    bound = pd.read_sql(sa.text("select * from ssb.dates where d_year = :y"), engine, params={"y": 1997})
    assert len(bound) == 365 and bound.columns[0] == "d_datekey"
    assert (
        pd.read_sql_table("supplier", engine, schema="ssb").shape[0]
        == oracle.run("select count(*) from supplier").column(0)[0].as_py()
    )


def test_the_inspector_calls_superset_makes(engine: sa.Engine, oracle: Oracle, server_home: ServerHome) -> None:
    inspector = sa.inspect(engine)
    assert inspector.default_schema_name == "ssb"
    assert inspector.get_schema_names() == ["ssb"]
    assert inspector.get_table_names("ssb") == TABLES == inspector.get_table_names()
    assert inspector.get_view_names("ssb") == []
    assert inspector.has_table("lineorder", "ssb") and inspector.has_table("DATES") and not inspector.has_table("x")
    for name in TABLES:
        columns = inspector.get_columns(name, "ssb")
        raw = oracle.con.execute(f"DESCRIBE ssb.{name}").fetchall()
        own = [c for c in columns if "computed" not in c]
        assert [c["name"] for c in own] == [str(r[0]).lower() for r in raw]
        assert all(not isinstance(c["type"], sa.types.NullType) for c in columns)
        assert inspector.get_pk_constraint(name, "ssb")["constrained_columns"] == []
        assert inspector.get_foreign_keys(name, "ssb") == []
        assert inspector.get_indexes(name, "ssb") == []
        assert inspector.get_unique_constraints(name, "ssb") == []
        assert "text" in inspector.get_table_comment(name, "ssb")
    types = {c["name"]: c["type"] for c in inspector.get_columns("lineorder", "ssb")}
    assert isinstance(types["lo_orderdate"], sa.DATE) and isinstance(types["lo_shipmode"], sa.String)
    assert isinstance(types["lo_revenue"], sa.Integer)
    computed = [c for c in inspector.get_columns("lineorder", "ssb") if "computed" in c]
    assert computed and all(c["computed"]["sqltext"] for c in computed)
    with pytest.raises(sa.exc.NoSuchTableError):
        inspector.get_columns("nope", "ssb")


@pytest.mark.parametrize("grain", [g for g in TIME_GRAIN_EXPRESSIONS if g is not None])
def test_a_chart_query_with_each_time_grain_on_the_partition_column(
    engine: sa.Engine, oracle: Oracle, grain: str
) -> None:
    """As Superset builds a chart's query: the grain's expression over the partition column (LO_ORDERDATE),
    a metric, a time range as literals of the column's type, grouped and ordered by the grain."""
    expression = TIME_GRAIN_EXPRESSIONS[grain].format(col="lo_orderdate")
    start, end = datetime_literal("DATE", "1995-03-01T00:00:00"), datetime_literal("DATE", "1995-06-01T00:00:00")
    sql = (
        f"SELECT {expression} AS __timestamp, SUM(lo_revenue) AS revenue FROM ssb.lineorder "
        f"WHERE lo_orderdate >= {start} AND lo_orderdate < {end} GROUP BY {expression} ORDER BY __timestamp LIMIT 10000"
    )
    expected = oracle.run(sql)
    with engine.connect() as con:
        rows = con.exec_driver_sql(sql).fetchall()
    day = [(str(r[0])[:10], int(r[1])) for r in rows]
    assert day == [(str(t)[:10], int(v)) for t, v in zip(*(c.to_pylist() for c in expected.columns), strict=True)]
    assert len(day) >= 1


def test_errors_are_sqlalchemys_wrapping_pep249s(engine: sa.Engine) -> None:
    with engine.connect() as con:
        with pytest.raises(sa.exc.ProgrammingError) as raised:
            con.exec_driver_sql("select * from ssb.nope")
        assert isinstance(raised.value.orig, db.ProgrammingError)
        assert str(raised.value.orig) == "table SSB.NOPE does not exist in the project"
        with pytest.raises(sa.exc.ProgrammingError, match="FORBIDDEN|not allowed"):
            pd.read_sql("select * from information_schema.views", con)


def test_the_dialects_and_superset_spec_are_registered() -> None:
    found = {e.name: e.value for e in entry_points(group="sqlalchemy.dialects") if e.name.startswith("precube")}
    assert found == {
        "precube": "precube.dbapi.dialect:PrecubeDialect",
        "precube.http": "precube_client.dialect:PrecubeHTTPDialect",
        "precube.https": "precube_client.dialect:PrecubeHTTPSDialect",
    }
    assert sa.engine.url.make_url("precube+http://u:p@h:1/p").get_dialect() is PrecubeHTTPDialect
    assert sa.engine.url.make_url("precube:///p").get_dialect() is PrecubeDialect
    [spec] = [e for e in entry_points(group="superset.db_engine_specs") if e.name == "precube"]
    assert spec.value == "precube_client.superset:PrecubeEngineSpec"
    args = PrecubeHTTPDialect().create_connect_args(sa.engine.url.make_url("precube+http://u:p%40ss@h:7171/proj"))
    assert args == (["http://h:7171"], {"project": "proj", "user": "u", "password": "p@ss"})
    with pytest.raises(ValueError, match="unknown option 'x'"):
        PrecubeDialect().create_connect_args(sa.engine.url.make_url("precube:///p?x=1"))
