"""precube.dbapi in this process and through the shared live server: the query cases equal the oracle's answers
(as Arrow and as fetched rows), the description's type codes, bad input as PEP 249's classes carrying precube's
one-line message, parameters bound as values (quotes, backslashes, NULs, injections), the catalog statements,
and the project's permission: a user without one can neither connect nor list its tables."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import precube.dbapi as db
from precube.api import connect as session_of
from precube.auth import Permission
from precube.errors import PrecubeError
from tests.query.oracle import Oracle, assert_same, load_case
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

pytestmark = pytest.mark.spark

CASES = sorted((Path(__file__).parent.parent / "query" / "cases").glob("*.sql"))[::6]  # a spread of the cases
PASSWORD = "Passw0rd!"
HOSTILE = [
    "O'Brien",
    "it''s",
    "back\\slash\\",
    "nul\x00inside",
    "' or 1=1 --",
    "'; drop table lineorder; --",
    '" or ""="',
    "? and ?",
    "/* not a comment */ -- nor this",
    "unicode é 中 🙂",
    "line\nbreak\ttab",
]


@pytest.fixture(scope="module", params=["local", "remote"])
def con(request: pytest.FixtureRequest, server_home: ServerHome, live: LiveServer) -> Iterator[db.Connection]:
    """A connection in this process (on the server's home) or through the live server."""
    if request.param == "local":
        found = db.connect(project=server_home.project, settings=server_home.settings)
    else:
        found = db.connect(live.url, project=server_home.project, user=ADMIN[0], password=ADMIN[1])
    yield found
    found.close()


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_cases_equal_the_oracle(path: Path, con: db.Connection, oracle: Oracle) -> None:
    case = load_case(path)
    expected = oracle.run(case.sql)
    cur = con.cursor()
    cur.execute(case.sql)
    assert cur.rowcount == expected.num_rows
    assert cur.description is not None  # names as precube gives them: lower case (the oracle keeps the case written)
    assert [d[0] for d in cur.description] == [f.name.lower() for f in expected.schema]
    table = cur.fetch_arrow_table()
    assert_same(case, expected, table)
    assert cur.fetchone() is None and cur.fetchall() == []
    cur.execute(case.sql)  # the rows again, fetched one, a few, then the rest
    rows = [cur.fetchone(), *cur.fetchmany(3), *cur.fetchall()]
    rows = [r for r in rows if r is not None]
    fetched = list(zip(*(c.to_pylist() for c in table.columns), strict=True))
    if case.ordered:
        assert rows == fetched
    else:  # a statement without ORDER BY may give its rows in another order when run again
        assert sorted(rows, key=repr) == sorted(fetched, key=repr)


def test_description_type_codes_and_type_objects(con: db.Connection) -> None:
    cur = con.cursor()
    cur.execute(
        "select d_year, d_datekey, d_month, sum(lo_revenue) as revenue, avg(lo_discount) as discount, "
        "cast(1.5 as decimal(10, 2)) as price, count(*) as n, true as flag "
        "from ssb.lineorder join ssb.dates on lo_orderdate = d_datekey "
        "where d_year = 1995 group by d_year, d_datekey, d_month limit 3"
    )
    assert cur.description is not None
    codes = {d[0]: d[1] for d in cur.description}
    assert codes["d_year"] == db.NUMBER and codes["revenue"] == db.NUMBER and codes["n"] == "BIGINT"
    assert codes["d_datekey"] == db.DATETIME and codes["d_datekey"] == "DATE"
    assert codes["d_month"] == db.STRING and codes["d_month"] != db.NUMBER
    price = next(d for d in cur.description if d[0] == "price")
    assert price[1] == "DECIMAL" and price[4:6] == (10, 2)
    row = cur.fetchone()
    assert row is not None and isinstance(row[1], dt.date) and isinstance(row[5], Decimal) and row[7] is True
    assert cur.rownumber == 1 and cur.rowcount == 3


@pytest.mark.parametrize(
    ("sql", "kind", "code"),
    [
        ("selec d_year from ssb.dates", db.ProgrammingError, "SQL_SYNTAX"),
        ("select nope from ssb.dates", db.ProgrammingError, "UNKNOWN_OBJECT"),
        ("select * from ssb.nope", db.ProgrammingError, "UNKNOWN_OBJECT"),
        ("select * from read_csv('/etc/passwd')", db.ProgrammingError, "FORBIDDEN_SQL"),
        ("select * from information_schema.views", db.ProgrammingError, "FORBIDDEN_SQL"),
        ("select cast(2147483647 as int) + cast(d_year as int) from ssb.dates", db.DataError, "ENGINE_ERROR"),
        ("SHOW FUNCTIONS", db.ProgrammingError, "SQL_SYNTAX"),
    ],
)
def test_bad_input_is_a_pep249_error_with_precubes_message(
    con: db.Connection, server_home: ServerHome, sql: str, kind: type[db.Error], code: str
) -> None:
    with session_of(server_home.project, settings=server_home.settings) as session:
        try:
            session.sql(sql)
            pytest.fail(f"precube answered {sql!r}")
        except PrecubeError as err:
            expected = err.message
    with pytest.raises(kind) as raised:
        con.cursor().execute(sql)
    assert str(raised.value) == expected and raised.value.code == code and "\n" not in str(raised.value)
    assert isinstance(raised.value, db.DatabaseError) and isinstance(raised.value, db.Error)


def test_misuse_is_an_interface_or_programming_error(con: db.Connection) -> None:
    cur = con.cursor()
    with pytest.raises(db.InterfaceError, match="execute a statement first"):
        cur.fetchone()
    with pytest.raises(db.ProgrammingError, match="2 \\? marks but 1 parameters"):
        cur.execute("select ? + ?", (1,))
    with pytest.raises(db.ProgrammingError, match="positional"):
        cur.execute("select ?", {"a": 1})
    with pytest.raises(db.ProgrammingError, match="named parameters"):
        cur.execute("select :a", (1,))
    with pytest.raises(db.NotSupportedError, match="cannot be bound"):
        cur.execute("select ?", (object(),))
    cur.close()
    with pytest.raises(db.InterfaceError, match="cursor is closed"):
        cur.execute("select 1")


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_parameters_bind_as_values(con: db.Connection, oracle: Oracle, value: str) -> None:
    cur = con.cursor()
    cur.execute("select ? as v, length(?) as n", (value, value))
    assert cur.fetchall() == [(value, len(value))]
    sql = "select count(*) from ssb.customer where c_name = ? or c_custkey = ?"
    cur.execute(sql, (value, 7))
    assert cur.fetchall() == oracle.con.execute(sql.replace("ssb.", ""), [value, 7]).fetchall() == [(1,)]


def test_parameters_of_every_type(con: db.Connection) -> None:
    values: list[Any] = [
        None,
        True,
        -(2**63),
        2**63 - 1,
        1.5,
        -0.1,
        Decimal("12345.678"),
        dt.date(1995, 3, 1),
        dt.datetime(1995, 3, 1, 12, 30, 15, 250000),
        b"\x00\xff'",
    ]
    cur = con.cursor()
    cur.execute("select " + ", ".join("?" for _ in values), values)
    # the engine's timestamps are UTC
    row = [v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v for v in cur.fetchone() or ()]
    assert row == values
    cur.execute(
        "select count(*) from ssb.dates where d_datekey between ? and ? and d_year = ?",
        (dt.date(1995, 3, 1), dt.date(1995, 3, 31), 1995),
    )
    assert cur.fetchall() == [(31,)]


def test_catalog_statements_through_the_client(con: db.Connection, server_home: ServerHome) -> None:
    cur = con.cursor()
    cur.execute("SHOW TABLES")
    assert [d[0] for d in cur.description or []] == ["namespace", "tableName", "isTemporary"]
    listed = [r[1] for r in cur.fetchall()]
    assert listed == sorted(t.upper() for t in ("customer", "dates", "lineorder", "part", "supplier"))
    cur.execute(
        "select column_name from information_schema.columns where table_schema = ? and table_name = ? "
        "order by ordinal_position",
        ("SSB", "DATES"),
    )
    columns = [r[0] for r in cur.fetchall()]
    cur.execute("describe ssb.dates")
    assert [r[0] for r in cur.fetchall()] == columns and columns[0] == "D_DATEKEY"


def test_arrow_and_pandas_extensions(con: db.Connection, oracle: Oracle) -> None:
    sql = "select lo_orderkey, lo_linenumber, lo_revenue from ssb.lineorder order by lo_orderkey, lo_linenumber"
    cur = con.cursor()
    cur.execute(sql)
    head = cur.fetchmany(10)
    rest = cur.fetch_arrow_table()
    expected = oracle.run(sql)
    assert rest.num_rows == expected.num_rows - 10 and len(head) == 10
    assert rest.column(0).to_pylist() == expected.column(0).to_pylist()[10:]
    cur.execute(sql)
    frame = cur.fetch_df()
    assert list(frame.columns) == ["lo_orderkey", "lo_linenumber", "lo_revenue"]
    assert frame["lo_revenue"].sum() == pa.compute.sum(expected.column(2)).as_py()


def test_a_user_without_permission_can_neither_connect_nor_list_tables(
    live: LiveServer, server_home: ServerHome
) -> None:
    directory = live.state.directory
    outsider, reader = f"u_{uuid.uuid4().hex[:8]}", f"u_{uuid.uuid4().hex[:8]}"
    directory.add_user(outsider, PASSWORD, [])
    directory.add_user(reader, PASSWORD, [])
    directory.grant(server_home.project, reader, Permission.QUERY)
    with pytest.raises(db.ProgrammingError) as raised:
        db.connect(live.url, project=server_home.project, user=outsider, password=PASSWORD)
    assert raised.value.status == 403 and raised.value.code == "ACCESS_DENIED"
    with live.client((outsider, PASSWORD)) as client:
        for sql in ("SHOW TABLES", "select table_name from information_schema.tables", "describe ssb.dates"):
            refused = client.post("/kylin/api/query", json={"sql": sql, "project": server_home.project})
            assert refused.status_code == 403 and refused.json()["data"] is None, refused.text
    with pytest.raises(db.OperationalError) as signed:
        db.connect(live.url, project=server_home.project, user=reader, password="wrong-Passw0rd!")
    assert signed.value.status == 401
    with pytest.raises(db.ProgrammingError) as missing:
        db.connect(live.url, project="no_such_project", user=ADMIN[0], password=ADMIN[1])
    assert missing.value.status in (403, 404)
    with db.connect(live.url, project=server_home.project, user=reader, password=PASSWORD) as con:
        cur = con.cursor()
        cur.execute("show tables")
        assert len(cur.fetchall()) == 5


def test_an_unreachable_server_is_an_operational_error() -> None:
    from tests.server.live import free_port

    with pytest.raises(db.OperationalError, match="cannot reach precube server"):
        db.connect(f"http://127.0.0.1:{free_port()}", project="ssb", user="a", password="b", timeout=5)
    with pytest.raises(db.InterfaceError, match="invalid server URL"):
        db.connect("ftp://host", project="ssb")
