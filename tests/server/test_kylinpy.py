"""kylinpy 2.8.4, unchanged, against `precube serve` as against Kylin 5 (its `v4` service, the Kylin 5 REST API):
sign-in, projects, models, every table with its columns (computed ones included), a model's segments (listed
with `page_size=2147483646`), a failure's message (Kylin's `exception`), its `kylin://` SQLAlchemy dialect's
schemas, tables and columns, `pandas.read_sql` over it, and the 13 SSB queries equal to the oracle's answers."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
import pytest
import sqlalchemy as sa
from kylinpy import Kylin
from kylinpy.client.exceptions import HTTPError
from kylinpy.kylindb import Connection

from precube.metadata import open_store
from precube.query.catalog.description import CatalogDescription
from precube.query.project_metadata import read_metadata
from precube.ssb.queries import SSB_QUERIES
from tests.query.oracle import DEFAULT_TOLERANCE, Case, Oracle, assert_same
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("warm_live")]


@pytest.fixture(scope="module")
def kylin(live: LiveServer, server_home: ServerHome) -> Kylin:
    return Kylin("127.0.0.1", ADMIN[0], ADMIN[1], port=live.port, project=server_home.project, version="v4")


@pytest.fixture(scope="module")
def engine(live: LiveServer, server_home: ServerHome) -> Iterator[sa.Engine]:
    url = f"kylin://{ADMIN[0]}:{ADMIN[1]}@127.0.0.1:{live.port}/{server_home.project}?version=v4"
    found = sa.create_engine(url)
    yield found
    found.dispose()


@pytest.fixture(scope="module")
def described(server_home: ServerHome) -> CatalogDescription:
    settings = server_home.settings
    with open_store(settings.metadata_url, settings.metadata.table) as store:
        return read_metadata(store, server_home.project).description


def test_the_service_lists_projects_models_tables_and_segments(
    kylin: Kylin, server_home: ServerHome, described: CatalogDescription
) -> None:
    service = kylin.service
    assert service.get_authentication()["username"] == ADMIN[0]
    assert server_home.project in [p["name"] for p in service.projects()]
    assert kylin.list_datasources() == [server_home.model]
    tables = service.tables_and_columns()
    assert sorted(tables) == [t.identity for t in described.tables]
    for table in described.tables:
        columns = dict(tables[table.identity]["columns"])
        assert list(columns) == [c.name for c in table.columns]  # computed columns too
        assert [columns[c.name]["type_NAME"] for c in table.columns] == [c.jdbc.name for c in table.columns]
    fact = next(t for t in tables.values() if "FACT" in t["type"])
    assert fact["table_NAME"] == "LINEORDER" and any("FK" in c["type"] for _, c in fact["columns"])
    params = {"project": server_home.project, "cube": server_home.model}  # Kylin's model filter
    model = service.tables_and_columns(params=params)
    assert model and all(t["type"] for t in model.values()) and set(model) <= set(tables)
    assert any("PK" in c["type"] for t in model.values() for _, c in t["columns"])
    segments = service.list_segment(server_home.model)  # page_size=2147483646: clamped, not refused
    assert segments["value"] and segments["total_size"] == len(segments["value"])
    with pytest.raises(HTTPError) as failed:  # a 400, as Kylin 5 answers a statement it refuses
        kylin.query("select no_such_column from ssb.lineorder")
    assert failed.value.status_code == 400 and "NO_SUCH_COLUMN" in str(failed.value)  # str: Kylin's `exception`
    with pytest.raises(HTTPError) as refused:
        Kylin("127.0.0.1", ADMIN[0], "Wr0ng-password!", port=kylin.port, project=kylin.project, version="v4").projects()
    assert refused.value.status_code == 401 and str(refused.value)


def test_the_dialects_inspector_and_pandas(engine: sa.Engine, described: CatalogDescription, oracle: Oracle) -> None:
    # kylinpy's dialect calls `Connection.connect()`, gone in SQLAlchemy 2: it is handed the engine, as 1.4's
    # inspector handed it a connection that still had it
    dialect = engine.dialect
    assert sorted(dialect.get_schema_names(engine)) == list(described.schemas)
    for schema in described.schemas:
        tables = [t for t in described.tables if t.schema == schema]
        assert dialect.get_table_names(engine, schema) == [t.name for t in tables]
        for table in tables:
            columns = dialect.get_columns(engine, table.name, schema)
            assert [c["name"] for c in columns] == [c.name for c in table.columns]
            assert all(isinstance(c["type"], sa.types.TypeEngine) for c in columns)
    sql = "select c_region, count(*) as n from ssb.customer group by c_region order by c_region"
    frame = pd.read_sql(sql, engine)
    expected = oracle.run(sql).to_pandas()
    assert [c.lower() for c in frame.columns] == ["c_region", "n"]
    assert frame.to_numpy().tolist() == expected.to_numpy().tolist()


@pytest.mark.parametrize("name", list(SSB_QUERIES))
def test_ssb_queries_equal_the_oracle(name: str, live: LiveServer, server_home: ServerHome, oracle: Oracle) -> None:
    sql = SSB_QUERIES[name]
    con = Connection(
        host="127.0.0.1",
        username=ADMIN[0],
        password=ADMIN[1],
        port=live.port,
        project=server_home.project,
        version="v4",
    )
    cursor = con.cursor()  # kylinpy's DB-API: Kylin's strings as Python values by each column's type
    cursor.execute(sql)
    rows = cursor.fetchall()
    names = [d[0].lower() for d in cursor.description]
    expected = oracle.run(sql)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = [  # typed as their values are (an empty answer's columns as the oracle's)
        pa.array(list(c), type=None if c else f.type) for c, f in zip(columns, expected.schema, strict=True)
    ]
    # kylinpy reads DECIMAL as float: the types are loose
    case = Case(name, "", "layout", False, DEFAULT_TOLERANCE, True, expected.num_rows == 0, sql)
    assert_same(case, expected, pa.table(arrays, names=names))
