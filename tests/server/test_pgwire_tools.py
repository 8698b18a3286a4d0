"""Third-party Python tools over the Postgres wire, unchanged (issue 39): SQLAlchemy's own `postgresql` dialect
(2.x on psycopg 3 and psycopg2: the inspector, `has_table`, reflection, computed columns included), pandas'
`read_sql`/`read_sql_table` and its refused `to_sql`, psql's backslash commands, the recorded catalog query sets
of SQLAlchemy 1.4 and Superset (`catalog_queries/*.sql`) replayed through psycopg, and a catalog query precube
cannot answer failing as PostgreSQL fails it (SQLSTATE, and the transaction aborted until ROLLBACK)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import psycopg
import pytest
import sqlalchemy as sa
from psycopg.pq import TransactionStatus

from precube.metadata import Model, Table, open_store
from precube.server.pgwire.catalog_tables import deparsed
from tests.query.oracle import Oracle
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer
from tests.server.test_pgwire import connect, values
from tests.server.test_pgwire_clients import needs_psql, psql

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]  # see warm_live

QUERIES = Path(__file__).parent / "catalog_queries"
DAYS = "select d_year, count(*) as days from ssb.dates group by d_year order by d_year"


def engine(live: LiveServer, project: str, driver: str) -> sa.Engine:
    return sa.create_engine(
        f"postgresql+{driver}://{ADMIN[0]}:{ADMIN[1]}@127.0.0.1:{live.pg_port}/{project}", poolclass=sa.NullPool
    )


def metadata(server_home: ServerHome) -> tuple[list[Table], dict[str, list[tuple[str, str]]]]:
    """The project's tables, and each table's computed columns (lower-case name, expression as PostgreSQL's
    `pg_get_expr` gives a stored generated column's: `(a * b)`)."""
    settings = server_home.settings
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read(server_home.project) as tx:
        tables, models = tx.list(Table), tx.list(Model)
    computed: dict[str, list[tuple[str, str]]] = {}
    for cc in (cc for m in models for cc in m.computed_columns):
        computed.setdefault(cc.table_identity.split(".")[-1].lower(), []).append(
            (cc.column_name.lower(), deparsed(cc.expression))
        )
    return tables, computed


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_sqlalchemy_postgresql_dialect_inspects_and_reflects(
    live: LiveServer, server_home: ServerHome, driver: str
) -> None:
    tables, computed = metadata(server_home)
    names = sorted(t.name.lower() for t in tables)
    lineorder = next(t for t in tables if t.name == "LINEORDER")
    found = engine(live, server_home.project, driver)
    try:
        inspector = sa.inspect(found)
        assert "ssb" in inspector.get_schema_names()
        assert inspector.default_schema_name == "ssb"
        assert inspector.get_table_names("ssb") == names
        assert inspector.get_view_names("ssb") == []
        assert inspector.has_table("lineorder", "ssb") and not inspector.has_table("nosuch", "ssb")
        assert inspector.has_schema("ssb") and not inspector.has_schema("nosuch")
        columns = inspector.get_columns("lineorder", "ssb")
        assert [c["name"] for c in columns] == [c.name.lower() for c in lineorder.columns] + [
            name for name, _ in computed["lineorder"]
        ]
        assert [c.get("computed") for c in columns[len(lineorder.columns) :]] == [
            {"sqltext": expression, "persisted": True} for _, expression in computed["lineorder"]
        ]
        assert all("computed" not in c for c in columns[: len(lineorder.columns)])
        assert inspector.get_pk_constraint("lineorder", "ssb")["constrained_columns"] == []
        assert inspector.get_foreign_keys("lineorder", "ssb") == []
        assert inspector.get_indexes("lineorder", "ssb") == []
        assert inspector.get_unique_constraints("lineorder", "ssb") == []
        assert inspector.get_check_constraints("lineorder", "ssb") == []
        assert inspector.get_table_comment("lineorder", "ssb") == {"text": None}
        reflected = sa.MetaData()
        reflected.reflect(found, schema="ssb")
        assert sorted(reflected.tables) == [f"ssb.{name}" for name in names]
        assert len(reflected.tables["ssb.lineorder"].columns) == len(columns)
    finally:
        found.dispose()


def test_pandas_reads_over_postgres_and_its_writes_are_refused(
    live: LiveServer, server_home: ServerHome, oracle: Oracle
) -> None:
    found = engine(live, server_home.project, "psycopg")
    try:
        read = pd.read_sql(DAYS, found)  # its has_table catalog query first: answered, nothing left aborted
        assert list(read.columns) == ["d_year", "days"]
        assert list(read.itertuples(index=False, name=None)) == values(oracle.run(DAYS))
        dates = pd.read_sql_table("dates", found, schema="ssb")
        assert len(dates) == oracle.run("select count(*) from ssb.dates").column(0)[0].as_py()
        with pytest.raises(sa.exc.InternalError) as refused:  # as PostgreSQL refuses it on a read-only server
            pd.DataFrame({"a": [1]}).to_sql("new_table", found, schema="ssb")
        assert isinstance(refused.value.orig, psycopg.errors.ReadOnlySqlTransaction)
        assert "cannot execute CREATE TABLE in a read-only transaction" in str(refused.value.orig)
        with pytest.raises(sa.exc.InternalError) as appended:
            pd.DataFrame({"d_year": [1]}).to_sql("dates", found, schema="ssb", if_exists="append", index=False)
        assert "cannot execute INSERT in a read-only transaction" in str(appended.value.orig)
    finally:
        found.dispose()


def recorded(name: str) -> list[str]:
    """A recorded query set's statements (its header's comment lines dropped)."""
    text = (QUERIES / name).read_text()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("-- "))
    return [s.strip() for s in re.split(r";\s*\n\s*\n", body.strip().rstrip(";")) if s.strip()]


RECORDED = [
    "sqlalchemy_1_4.sql",
    "superset_postgres.sql",
    "metabase.sql",
    "dbeaver.sql",
    "grafana.sql",
    "npgsql.sql",
    "tableau.sql",
]


@pytest.mark.parametrize("name", RECORDED)
def test_recorded_catalog_queries_replay(live: LiveServer, server_home: ServerHome, name: str) -> None:
    """Each statement answers, in one transaction that stays usable (a failure would abort it); the listings
    answer what PostgreSQL would for precube's objects."""
    statements = recorded(name)
    assert len(statements) >= 5
    with connect(live, server_home.project) as conn:
        oid = conn.execute("select 'ssb.lineorder'::regclass::oid, 'ssb'::regnamespace::oid").fetchone()
        assert oid is not None
        params: dict[str, Any] = {"schema": "ssb", "table_name": "lineorder", "name": "lineorder"}
        params |= {"table_oid": oid[0], "table": oid[0], "schema_oid": oid[1], "database": server_home.project}
        for statement in statements:
            with conn.cursor() as cur:
                cur.execute(statement, params)  # type: ignore[call-overload]
                assert cur.statusmessage, statement
            assert conn.info.transaction_status == TransactionStatus.INTRANS, statement

        def answer(marker: str) -> list[tuple[Any, ...]]:
            [statement] = [s for s in statements if marker in s]
            return conn.execute(statement, params).fetchall()  # type: ignore[call-overload]

        tables, computed = metadata(server_home)
        names = sorted(t.name.lower() for t in tables)
        lineorder = next(t for t in tables if t.name == "LINEORDER")
        columns = [c.name.lower() for c in lineorder.columns] + [name for name, _ in computed["lineorder"]]
        if name == "sqlalchemy_1_4.sql":  # its table listing answers the project's tables
            assert sorted(r[0] for r in answer("c.relkind in ('r', 'p')")) == names
        elif name == "metabase.sql":
            assert answer("estimated_row_count") == [("ssb", t, "TABLE", None, 0) for t in names]
            assert [r[0] for r in answer('AS "database-required"')] == columns
            # precube's users read and never write: Metabase sees each table readable, none writable
            assert answer("table_privileges") == [(None, "ssb", t, False, True, False, False) for t in names]
        elif name == "dbeaver.sql":
            assert sorted(r[2] for r in answer("partition_key")) == names
            described = answer("def_value")
            assert [r[2] for r in described] == columns
            assert [r[-3] for r in described][len(lineorder.columns) :] == [e for _, e in computed["lineorder"]]
        elif name == "grafana.sql":
            assert [r[0] for r in answer("WHERE quote_ident(table_schema) = 'ssb'")] == names
            assert [r[0] for r in answer("parse_ident('ssb.lineorder')")] == columns


@needs_psql
def test_psql_backslash_commands_answer(live: LiveServer, server_home: ServerHome) -> None:
    """What PostgreSQL would list for precube's objects: never an error, empty where there are none."""
    project = server_home.project
    shown = {}
    commands = ("\\l", "\\dn", "\\dt", "\\dv", "\\d dates", "\\d+ lineorder", "\\df", "\\dT", "\\du", "\\dd")
    for command in (*commands, "\\l+", "\\dn+", "\\dt+", "\\di", "\\do", "\\dC", "\\dp", "\\dx"):
        done = psql(live, project, command)
        assert done.returncode == 0 and "ERROR" not in done.stderr, (command, done.stderr)
        shown[command] = [line.split("|") for line in (done.stdout or done.stderr).strip().splitlines()]
    assert [project] in [row[:1] for row in shown["\\l"]]
    assert ["ssb", "precube"] in shown["\\dn"]
    assert shown["\\dv"] == [["Did not find any relations."]]
    assert shown["\\df"][-1] == ["(0 rows)"] and shown["\\dT"][-1] == ["(0 rows)"] and shown["\\dd"][-1] == ["(0 rows)"]
    assert ADMIN[0] in [row[0] for row in shown["\\du"]]
    _, computed = metadata(server_home)
    described = {row[0]: row for row in shown["\\d+ lineorder"] if len(row) > 4}
    for column, expression in computed["lineorder"]:
        assert described[column][4] == f"generated always as ({expression}) stored"
    assert shown["\\d+ lineorder"][-1] == ["Access method: heap"]  # (no replica identity line: PG's default)


def test_unanswerable_catalog_queries_fail_as_postgresql_does(live: LiveServer, server_home: ServerHome) -> None:
    """The SQLSTATE PostgreSQL gives; inside a transaction it is aborted (25P02) until ROLLBACK, and COMMIT
    answers ROLLBACK; outside one nothing lingers."""
    failing = [
        ("select nosuch from pg_class", "42703", 'column "nosuch" does not exist'),
        ("select c.nosuch from pg_class c", "42703", 'column "nosuch" does not exist'),
        ("select x.relname from pg_class c", "42P01", 'missing FROM-clause entry for table "x"'),
        ("select * from pg_catalog.pg_nosuch", "42P01", 'relation "pg_catalog.pg_nosuch" does not exist'),
        ("select nosuchfunction(relname) from pg_class", "42883", "function nosuchfunction() does not exist"),
        ("select pg_nosuch_function(oid) from pg_class", "42883", "pg_nosuch_function"),
        ("create table ssb.t (a int)", "25006", "cannot execute CREATE TABLE in a read-only transaction"),
    ]
    with connect(live, server_home.project) as conn:
        for sql, sqlstate, message in failing:
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(sql)
            assert (raised.value.sqlstate, message in str(raised.value)) == (sqlstate, True), sql
            assert conn.info.transaction_status == TransactionStatus.INERROR
            with pytest.raises(psycopg.errors.InFailedSqlTransaction):
                conn.execute("select relname from pg_class")
            conn.rollback()
            assert conn.execute("select count(*) from pg_namespace").fetchone() is not None
            conn.rollback()
        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("select nosuch from pg_class")
        assert conn.pgconn.exec_(b"COMMIT").command_status == b"ROLLBACK"
        assert conn.info.transaction_status == TransactionStatus.IDLE
    with connect(live, server_home.project, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.UndefinedColumn):
            conn.execute("select nosuch from pg_class")
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert conn.execute("select count(*) from pg_namespace").fetchone() is not None


def test_superset_search_path_through_startup_options(live: LiveServer, server_home: ServerHome) -> None:
    """Superset sets the schema with `options=-csearch_path=…` at connect time; SET reads as PG canonicalises."""
    with connect(live, server_home.project, autocommit=True, options="-c search_path=ssb") as conn:
        assert conn.execute("show search_path").fetchone() == ("ssb",)
        conn.execute('set search_path = "ssb", "Ab", PUBLIC')
        assert conn.execute("show search_path").fetchone() == ('ssb, "Ab", public',)
