"""One project's catalog through every door (issue 37), all answering from its one description
(`query.catalog.description`): the query session's information_schema (through the DB-API and SQLAlchemy's
inspector), the Postgres wire's pg_catalog and information_schema (psycopg), and REST's tables_and_columns list
the same schemas, tables and columns, in the same order, with the same types (each door spelling them its own
way), the model's computed columns included and marked as computed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import precube.dbapi as db
from precube.metadata import Model, Table, open_store
from precube.query.catalog.description import CatalogDescription
from precube.query.project_metadata import read_metadata
from precube.server.pgwire import types as pg
from precube.server.pgwire.catalog_tables import deparsed
from precube_client.dialect import column_type
from tests.server.conftest import ServerHome, data
from tests.server.live import ADMIN, LiveServer
from tests.server.test_pgwire import connect, fetch

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]  # see warm_live

Listed = list[tuple[Any, ...]]  # (SCHEMA, TABLE, COLUMN, position, the door's type, computed) in order


@pytest.fixture(scope="module")
def described(server_home: ServerHome) -> CatalogDescription:
    """The project's description, checked against its metadata: each table's own columns, then the model's
    computed columns on their fact table."""
    settings = server_home.settings
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        with store.read(server_home.project) as tx:
            tables, models = tx.list(Table), tx.list(Model)
        found = read_metadata(store, server_home.project).description
    computed = [cc for m in models for cc in m.computed_columns]
    assert computed, "the shared model defines computed columns"
    assert [t.identity for t in found.tables] == sorted(t.identity for t in tables)
    for table in tables:
        columns = found.table(table.database, table.name)
        assert columns is not None
        extra = [
            (cc.column_name.upper(), cc.expression) for cc in computed if cc.table_identity.upper() == table.identity
        ]
        assert [(c.name, c.datatype) for c in columns.columns if not c.computed] == [
            (c.name, c.datatype) for c in table.columns
        ]
        assert [(c.name, c.expression) for c in columns.columns if c.computed] == extra
        assert [c.position for c in columns.columns] == list(range(1, len(columns.columns) + 1))
    return found


def expected(described: CatalogDescription, spell: Any) -> Listed:
    return [(t.schema, t.name, c.name, c.position, spell(c), c.computed) for t, c in described.columns()]


@pytest.fixture(scope="module")
def dbapi(live: LiveServer, server_home: ServerHome) -> Iterator[db.Connection]:
    found = db.connect(live.url, project=server_home.project, user=ADMIN[0], password=ADMIN[1])
    yield found
    found.close()


def test_the_query_sessions_information_schema(dbapi: db.Connection, described: CatalogDescription) -> None:
    cur = dbapi.cursor()
    cur.execute(
        "select table_schema, table_name, column_name, ordinal_position, full_data_type, is_generated "
        "from information_schema.columns order by table_schema, table_name, ordinal_position"
    )
    listed = [(s, t, c, int(p), ty, g == "ALWAYS") for s, t, c, p, ty, g in cur.fetchall()]
    assert listed == expected(described, lambda c: c.spark_type.upper())
    cur.execute("select schema_name from information_schema.schemata order by schema_name")
    assert tuple(r[0] for r in cur.fetchall()) == described.schemas
    cur.execute("describe ssb.lineorder")
    lineorder = described.table("SSB", "LINEORDER")
    assert lineorder is not None
    assert [(r[0], r[1]) for r in cur.fetchall()] == [(c.name, c.spark_type) for c in lineorder.columns]


def test_the_postgres_wires_catalog(live: LiveServer, server_home: ServerHome, described: CatalogDescription) -> None:
    def lower(rows: Listed) -> Listed:
        return [(s.lower(), t.lower(), c.lower(), *rest) for s, t, c, *rest in rows]

    with connect(live, server_home.project, autocommit=True) as conn:
        attributes = fetch(
            conn,
            "select n.nspname, c.relname, a.attname, a.attnum, format_type(a.atttypid, a.atttypmod) as type, "
            "a.attgenerated = 's' as computed from pg_catalog.pg_attribute a "
            "join pg_catalog.pg_class c on c.oid = a.attrelid "
            "join pg_catalog.pg_namespace n on n.oid = c.relnamespace "
            "where a.attnum > 0 order by n.nspname, c.relname, a.attnum",
        )
        assert [tuple(r.values()) for r in attributes.to_pylist()] == lower(
            expected(described, lambda c: pg.of_datatype(c.datatype).formatted)
        )
        columns = fetch(
            conn,
            "select table_schema, table_name, column_name, ordinal_position, data_type, "
            "is_generated = 'ALWAYS' as computed from information_schema.columns "
            "order by table_schema, table_name, ordinal_position",
        )
        assert [tuple(r.values()) for r in columns.to_pylist()] == lower(
            expected(described, lambda c: pg.of_datatype(c.datatype).type.sql_name)
        )
        schemas = fetch(conn, "select schema_name from information_schema.schemata order by 1").column(0)
        assert schemas.to_pylist() == [s.lower() for s in described.schemas]
        generated = fetch(
            conn,
            "select a.attname, pg_get_expr(d.adbin, d.adrelid) as expression from pg_catalog.pg_attrdef d "
            "join pg_catalog.pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum "
            "where a.atthasdef order by a.attnum",
        ).to_pylist()
        computed = [(c.name.lower(), deparsed(c.expression)) for _, c in described.columns() if c.expression]
        assert [(r["attname"], r["expression"]) for r in generated] == computed


def test_rest_tables_and_columns(live: LiveServer, server_home: ServerHome, described: CatalogDescription) -> None:
    with live.client() as admin:
        params = {"project": server_home.project}
        tables = data(admin.get("/kylin/api/query/tables_and_columns", params=params))
        legacy = admin.get("/kylin/api/tables_and_columns", params=params)
    assert legacy.status_code == 200 and legacy.json() == tables  # Kylin's older path: the bare list
    assert [(t["table_SCHEM"], t["table_NAME"]) for t in tables] == [(t.schema, t.name) for t in described.tables]
    by_name = {(t.schema, t.name, c.name): c for t, c in described.columns()}
    listed = [
        (
            c["table_SCHEM"],
            c["table_NAME"],
            c["column_NAME"],
            c["ordinal_POSITION"],
            (c["data_TYPE"], c["type_NAME"], c["column_SIZE"], c["decimal_DIGITS"]),
            by_name[(c["table_SCHEM"], c["table_NAME"], c["column_NAME"])].computed,
        )
        for t in tables
        for c in t["columns"]
    ]
    jdbc = expected(  # Kylin sizes only these types, and gives scale only to DECIMAL
        described,
        lambda c: (
            c.jdbc.code,
            c.jdbc.name,
            c.jdbc.precision if c.jdbc.name in ("TIMESTAMP", "DECIMAL", "VARCHAR", "CHAR") else -1,
            c.jdbc.scale if c.jdbc.name == "DECIMAL" else 0,
        ),
    )
    assert listed == jdbc
    assert any(computed for *_, computed in listed)


def test_the_sqlalchemy_inspector(live: LiveServer, server_home: ServerHome, described: CatalogDescription) -> None:
    url = sa.URL.create("precube+http", ADMIN[0], ADMIN[1], "127.0.0.1", live.port, database=server_home.project)
    engine = sa.create_engine(url)
    try:
        inspector = sa.inspect(engine)
        assert inspector.get_schema_names() == [s.lower() for s in described.schemas]
        for table in described.tables:
            columns = inspector.get_columns(table.name.lower(), table.schema.lower())
            assert [(c["name"], type(c["type"]), "computed" in c) for c in columns] == [
                (c.name.lower(), type(column_type(c.spark_type)), c.computed) for c in table.columns
            ]
    finally:
        engine.dispose()
