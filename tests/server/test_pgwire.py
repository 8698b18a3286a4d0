"""The Postgres wire front end (`precube serve --pg-port`) on the shared real server, through psycopg: the query
cases (written as a Postgres client writes them) equal the oracle's answers in the text and binary formats,
extended-protocol parameters bind as values (quotes, NULLs, `' or 1=1 --`), a wrong password, an unknown
user and a user without QUERY get psycopg's own errors with precube's message, the query-trust escapes and
the engine's catalog are refused, settings and transaction control, and the history names the user."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
import sqlglot
from psycopg import errors

from precube.auth import Permission
from precube.query.frontend import DIALECT
from tests.query.oracle import Case, Oracle, assert_same, load_case
from tests.query.test_escapes import CANARY, ESCAPES
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

CASES = sorted((Path(__file__).parent.parent / "query" / "cases").glob("*.sql"))
PASSWORD = "Passw0rd!"
SSB_Q = (
    "select d_year, sum(lo_revenue) as revenue from ssb.lineorder "
    "join ssb.dates on lo_orderdate = d_datekey group by d_year order by d_year"
)

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]  # see warm_live


def connect(live: LiveServer, project: str, user: tuple[str, str] = ADMIN, **kwargs: Any) -> psycopg.Connection[Any]:
    return psycopg.connect(
        host="127.0.0.1",
        port=live.pg_port,
        dbname=project,
        user=user[0],
        password=user[1],
        connect_timeout=30,
        **kwargs,
    )


def make_user(live: LiveServer, project: str, level: Permission | None) -> tuple[str, str]:
    name = f"pg_{uuid.uuid4().hex[:8]}"
    live.state.directory.add_user(name, PASSWORD, [])
    if level is not None:
        live.state.directory.grant(project, name, level)
    return name, PASSWORD


@pytest.fixture(scope="module")
def pg(live: LiveServer, server_home: ServerHome) -> Iterator[psycopg.Connection[Any]]:
    with connect(live, server_home.project, autocommit=True) as conn:
        yield conn


def fetch(conn: psycopg.Connection[Any], sql: str, params: Any = None, binary: bool = False) -> pa.Table:
    """The answer as an Arrow table, each column typed by what psycopg made of the values."""
    with conn.cursor(binary=binary) as cur:
        cur.execute(sql, params)
        assert cur.description is not None
        names = [d.name for d in cur.description]
        rows = cur.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
    return pa.table([pa.array(list(c)) if rows else pa.array([], pa.null()) for c in columns], names=names)


def values(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows as tuples (the oracle's column names keep the source's letter case)."""
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


def as_postgres(case: Case) -> str:
    """The case's SQL (precube's dialect) as a Postgres client writes it."""
    return sqlglot.transpile(case.sql, read=DIALECT, write="postgres")[0]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case_through_psycopg_equals_the_oracle(path: Path, pg: psycopg.Connection[Any], oracle: Oracle) -> None:
    case = load_case(path)
    expected = oracle.run(case.sql)
    try:
        sql = as_postgres(case)
    except sqlglot.errors.SqlglotError:
        pytest.skip("the case has no Postgres spelling")
    answer = fetch(pg, sql, binary=path.stem.endswith(("1", "3", "5", "7", "9")))  # both formats, over the cases
    if answer.num_rows == 0 and expected.num_rows == 0:
        assert answer.num_columns == expected.num_columns
        return
    # PostgreSQL keeps a quoted name's case ("D_YEAR" is named D_YEAR: `test_pgwire_colnames` checks the rule
    # against a real PostgreSQL); the oracle's names are compared case aside
    answer = answer.rename_columns([name.lower() for name in answer.column_names])
    assert_same(case, expected, like(answer, expected))


def like(answer: pa.Table, expected: pa.Table) -> pa.Table:
    """psycopg's values typed as the oracle's columns where Python's types leave it open (a column of NULLs,
    a list's field name); values are not changed."""
    columns = []
    for got, want in zip(answer.columns, expected.columns, strict=True):
        if pa.types.is_null(got.type) or (pa.types.is_list(got.type) and pa.types.is_list(want.type)):
            got = got.cast(want.type)
        columns.append(got)
    return pa.table(columns, names=answer.column_names)


def test_parameters_bind_as_values(pg: psycopg.Connection[Any], oracle: Oracle) -> None:
    sql = "select d_year, count(*) as days from ssb.dates where d_year >= %s and d_month = %s group by d_year"
    want = oracle.run(
        "select d_year, count(*) as days from ssb.dates where d_year >= 1995 and d_month = 'May' group by d_year"
    )
    for binary in (False, True):
        got = fetch(pg, sql, (1995, "May"), binary=binary)
        assert sorted(values(got)) == sorted(values(want)) and got.num_rows > 0
    hostile = ["' or 1=1 --", "May' or '1'='1", "it's", 'say "hi"', "back\\slash'", "\\' or 1=1 --", "é ∑ 🐘", ""]
    for value in hostile:
        assert fetch(pg, "select count(*) as n from ssb.dates where d_month = %s", (value,)).to_pylist() == [{"n": 0}]
        assert fetch(pg, "select %s as v", (value,)).to_pylist() == [{"v": value}]  # the value comes back whole
    echoed = fetch(
        pg, "select %s as n, %s as i, %s as d, %s as f, %s as t", (None, -7, Decimal("-1.25"), 2.5, dt.date(1994, 5, 1))
    )
    assert echoed.to_pylist() == [{"n": None, "i": -7, "d": Decimal("-1.25"), "f": 2.5, "t": dt.date(1994, 5, 1)}]
    with pg.cursor() as cur:  # prepared on the server (Parse once, Describe, Bind/Execute each time)
        for year in (1993, 1994):
            cur.execute("select count(*) from ssb.dates where d_year = %s", (year,), prepare=True)
            assert cur.fetchone() == (
                oracle.run(f"select count(*) from ssb.dates where d_year = {year}").column(0)[0].as_py(),
            )
        with pytest.raises(psycopg.DataError):  # a NUL never reaches the server
            cur.execute("select %s", ("a\x00b",))


def test_a_large_answer_in_both_formats(pg: psycopg.Connection[Any], oracle: Oracle) -> None:
    sql = "select lo_orderkey, lo_linenumber, lo_orderdate, lo_revenue, lo_shipmode from ssb.lineorder"
    want = oracle.run(sql)
    for binary in (False, True):
        got = fetch(pg, sql, binary=binary)
        assert got.num_rows == want.num_rows > 10_000
        assert sorted(values(got))[::997] == sorted(values(want))[::997]


def test_signing_in_and_permissions(live: LiveServer, server_home: ServerHome) -> None:
    project = server_home.project
    for user in ((ADMIN[0], "Wr0ng-password!"), ("nobody_here", PASSWORD)):
        with pytest.raises(psycopg.OperationalError, match="wrong user name or password"):
            connect(live, project, user)
    outsider = make_user(live, project, None)
    with pytest.raises(
        psycopg.OperationalError, match=f"user {outsider[0]} needs QUERY permission on project {project}"
    ):
        connect(live, project, outsider)
    with pytest.raises(psycopg.OperationalError, match="needs QUERY permission on project no_such_project"):
        connect(live, "no_such_project", outsider)  # an unknown project reads as one without permission
    with pytest.raises(psycopg.OperationalError, match="no_such_project"):
        connect(live, "no_such_project")
    analyst = make_user(live, project, Permission.QUERY)
    with connect(live, project, analyst, autocommit=True) as conn:
        marker = uuid.uuid4().hex
        assert fetch(conn, f"{SSB_Q} /* {marker} */").num_rows > 0
    assert live.state.history is not None
    records, _ = live.state.history.search(project, sql=marker, offset=0, limit=10)
    assert [r.user for r in records] == [analyst[0]]


@pytest.mark.parametrize(("attempt", "_"), ESCAPES[:12] + ESCAPES[-6:], ids=[f"{i:02d}" for i in range(18)])
def test_escapes_are_refused(attempt: str, _: object, pg: psycopg.Connection[Any], tmp_path: Path) -> None:
    canary = tmp_path / "canary.csv"
    canary.write_text("secret\n1\n")
    with pytest.raises(psycopg.Error) as raised:
        fetch(pg, attempt.replace(CANARY, str(canary)))
    assert raised.value.diag.message_primary and "\n" not in raised.value.diag.message_primary
    assert raised.value.sqlstate in ("42501", "42601", "42704", "42P01", "42883", "0A000")


@pytest.mark.parametrize(
    "sql",
    [
        "select * from duckdb_tables()",
        "select * from pg_catalog.pg_class, ssb.lineorder",
        "select * from information_schema.tables t join ssb.dates d on true",
        "select * from pg_catalog.pg_shadow",
        "select * from pg_catalog.pg_class c where c.relname in (select name from duckdb_settings())",
        "select pg_read_file('/etc/passwd')",
        "select pg_catalog.pg_ls_dir('/')",
        "select * from pg_catalog.read_csv('/etc/passwd')",
    ],
)
def test_the_engines_catalog_and_files_are_out_of_reach(sql: str, pg: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.Error) as raised:
        fetch(pg, sql)
    assert raised.value.sqlstate and raised.value.sqlstate[:2] in ("42", "0A")


def test_errors_carry_precubes_message(pg: psycopg.Connection[Any]) -> None:
    with pytest.raises(errors.SyntaxError, match="cannot parse the SQL"):
        fetch(pg, "selec 1")
    with pytest.raises(errors.UndefinedTable, match="NOPE"):
        fetch(pg, "select * from nope")
    with pytest.raises(errors.ReadOnlySqlTransaction, match="cannot execute INSERT in a read-only transaction"):
        fetch(pg, "insert into ssb.dates values (1)")  # as PostgreSQL refuses a write on a read-only server
    with pytest.raises(errors.FeatureNotSupported, match="standard_conforming_strings = on"):
        pg.execute("set standard_conforming_strings = off")
    assert fetch(pg, "select 1 as one").to_pylist() == [{"one": 1}]  # the connection goes on


def test_result_columns_are_named_and_errors_coded_as_postgresql_does(pg: psycopg.Connection[Any]) -> None:
    sql = (
        "select count(*), sum(d_year), d_year::bigint, cast(t.d_month as varchar), 1, d_year + 1, "
        "case when d_year > 1995 then 'a' else 'b' end, coalesce(d_month, 'x'), t.d_month, d_year as Yr, "
        'd_year as "Yr", count(distinct d_weeknuminyear), count(*) '
        "from ssb.dates t group by d_year, d_month"
    )
    with pg.cursor() as cur:
        cur.execute(sql)
        assert cur.description is not None
        assert [d.name for d in cur.description] == [
            "count", "sum", "d_year", "d_month", "?column?", "?column?", "case", "coalesce", "d_month", "yr", "Yr",
            "count", "count",
        ]  # fmt: skip
        assert len(cur.fetchall()) > 10
    refused = [
        ("select nope from ssb.dates", errors.UndefinedColumn),
        ("select * from ssb.nope", errors.UndefinedTable),
        ("selec 1", errors.SyntaxError),
        ("select d_datekey from ssb.dates join ssb.dates d2 on true", errors.AmbiguousColumn),
        ("select cast(d_year as int) * 2147483647 from ssb.dates", errors.NumericValueOutOfRange),
        ("select d_year % 0 from ssb.dates", errors.DivisionByZero),
        ("delete from ssb.dates", errors.ReadOnlySqlTransaction),
    ]
    wrong = []
    for sql, kind in refused:
        try:
            fetch(pg, sql)
            wrong.append((sql, "answered"))
        except psycopg.Error as err:
            if not isinstance(err, kind):
                wrong.append((sql, f"{type(err).__name__} {err.sqlstate} {err}"))
    assert not wrong


def test_sql_level_prepare_execute_and_deallocate(pg: psycopg.Connection[Any], oracle: Oracle) -> None:
    count = "select count(*) from ssb.dates where d_year = {}"
    pg.execute("PREPARE by_year (int) AS " + count.format("$1"))
    for arg, year in (("1995", 1995), ("'1994'", 1994)):  # a string read as the declared type, as PG reads it
        assert pg.execute(f"EXECUTE by_year ({arg})").fetchall() == values(oracle.run(count.format(year)))
    pg.execute("PREPARE by_month AS select count(*) as n from ssb.dates where d_month = $1")
    assert pg.execute("execute BY_MONTH ('May'' or ''1''=''1')").fetchall() == [(0,)]  # a value, never SQL
    refused = [
        ("EXECUTE by_year ('x')", errors.InvalidTextRepresentation),
        ("EXECUTE by_year (1, 2)", errors.SyntaxError),
        ("EXECUTE nope (1)", errors.InvalidSqlStatementName),
        ("PREPARE by_year AS select 1", errors.DuplicatePreparedStatement),
    ]
    for sql, kind in refused:
        with pytest.raises(kind):
            pg.execute(sql)
    pg.pgconn.prepare(b"from_the_protocol", b"select 7 as seven")  # one namespace for Parse and PREPARE
    assert pg.execute("EXECUTE from_the_protocol").fetchall() == [(7,)]
    with pytest.raises(errors.DuplicatePreparedStatement):
        pg.execute("PREPARE from_the_protocol AS select 1")
    pg.execute("DEALLOCATE by_year")
    with pytest.raises(errors.InvalidSqlStatementName):
        pg.execute("EXECUTE by_year (1995)")
    pg.execute("DEALLOCATE ALL")
    with pytest.raises(errors.InvalidSqlStatementName):
        pg.execute("EXECUTE by_month ('May')")


CURSOR_Q = "select lo_orderkey, lo_linenumber, lo_revenue, lo_shipmode from ssb.lineorder where lo_quantity < 20"


def test_psycopg_named_cursors_read_an_answer_in_chunks(
    live: LiveServer, server_home: ServerHome, oracle: Oracle
) -> None:
    want = sorted(values(oracle.run(CURSOR_Q)))
    assert len(want) > 2_000
    with connect(live, server_home.project) as conn:  # a transaction block, as WITHOUT HOLD needs
        for binary in (False, True):
            with conn.cursor(name=f"chunks_{binary}", binary=binary) as cur:
                cur.itersize = 700
                cur.execute(CURSOR_Q)
                assert cur.description is not None and cur.description[0].name == "lo_orderkey"
                first = cur.fetchmany(5)
                assert sorted(first + list(cur)) == want
        with conn.cursor(name="scrolled", scrollable=True) as cur:
            cur.execute("select d_year from ssb.dates where d_year = %s", (1995,))
            cur.scroll(3)
            assert cur.fetchone() == (1995,) and cur.rownumber == 4
            cur.scroll(0, mode="absolute")
            assert len(cur.fetchall()) == 365
        conn.commit()
        with pytest.raises(errors.InvalidCursorName):
            conn.execute("FETCH FORWARD 1 FROM chunks_True")  # ended with its transaction
        conn.rollback()
    with connect(live, server_home.project, autocommit=True) as conn:
        with pytest.raises(errors.NoActiveSqlTransaction):  # 25P01, as PostgreSQL
            conn.execute("DECLARE c CURSOR FOR select 1")
        with conn.cursor(name="held", withhold=True) as cur:
            cur.execute(CURSOR_Q)
            assert sorted(cur.fetchall()) == want
        conn.execute("DECLARE again CURSOR WITH HOLD FOR select 1 as one")
        with pytest.raises(errors.DuplicateCursor):
            conn.execute("DECLARE again CURSOR WITH HOLD FOR select 2")
        assert conn.execute("MOVE ALL FROM again").statusmessage == "MOVE 1"
        conn.execute("CLOSE again")
        with pytest.raises(errors.InvalidCursorName):
            conn.execute("CLOSE again")


def test_psycopg2_named_cursors_read_an_answer_in_chunks(
    live: LiveServer, server_home: ServerHome, oracle: Oracle
) -> None:
    psycopg2 = pytest.importorskip("psycopg2")
    want = sorted(values(oracle.run(CURSOR_Q)))
    conn = psycopg2.connect(
        host="127.0.0.1", port=live.pg_port, dbname=server_home.project, user=ADMIN[0], password=ADMIN[1]
    )
    try:
        with conn.cursor(name="p2") as cur:
            cur.itersize = 500
            cur.execute(CURSOR_Q)
            got = list(cur)
            assert cur.description[0].name == "lo_orderkey"
        assert sorted(got) == want
        with conn.cursor(name="p2_parts") as cur:
            cur.execute("select d_year, count(*) from ssb.dates where d_year > %s group by d_year", (1995,))
            rows = cur.fetchmany(2) + cur.fetchall()
        assert sorted(rows) == sorted(values(oracle.run(
            "select d_year, count(*) from ssb.dates where d_year > 1995 group by d_year"
        )))  # fmt: skip
        conn.commit()
    finally:
        conn.close()


def test_what_clients_send_around_queries(live: LiveServer, server_home: ServerHome) -> None:
    project = server_home.project
    with connect(live, project) as conn:  # psycopg's default: a transaction block around statements
        assert fetch(conn, "select count(*) as n from ssb.part").num_rows == 1
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.commit()
        with pytest.raises(errors.UndefinedTable):
            fetch(conn, "select * from nope")
        with pytest.raises(errors.InFailedSqlTransaction):
            fetch(conn, "select 1")
        conn.rollback()
        conn.execute("set application_name = 'precube-test'")
        assert fetch(conn, "show application_name").to_pylist() == [{"application_name": "precube-test"}]
        assert conn.info.parameter_status("application_name") == "precube-test"
        assert conn.info.parameter_status("standard_conforming_strings") == "on"
        assert conn.info.server_version >= 160000
        row = fetch(conn, "select version() as v, current_database() as db, current_schema() as s, current_user as u")
        assert row.to_pylist() == [{"v": row.column(0)[0].as_py(), "db": project, "s": "ssb", "u": ADMIN[0]}]
        assert "precube" in row.column(0)[0].as_py()
        assert "QUERY PLAN" in fetch(conn, f"explain {SSB_Q}").column_names
        conn.cancel_safe()  # harmless when idle (cancel() would hold the GIL the in-process server needs)
        assert fetch(conn, "select 2 as two").to_pylist() == [{"two": 2}]
