"""The catalog a BI tool reads (SHOW, DESCRIBE, information_schema), answered from the project's metadata:
its tables and columns equal the raw files' (the oracle's own catalog over them, in DuckDB), SQL over the views
(filters, joins, grouping, ordering, CTEs) equals the same SQL on the oracle's information_schema, the models'
computed columns are listed as generated, and the engine's own catalog stays unreachable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from precube.cache import CachedSession, ResultCache
from precube.metadata import Project, SourceType
from precube.query.errors import ForbiddenSqlError, QueryError, SqlSyntaxError, UnknownObjectError
from precube.query.session import CATALOG, Session
from precube.settings import CacheSettings
from precube.sources.tables import load_file_table
from tests.query.conftest import QueryModel
from tests.query.oracle import Oracle

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as found:
        yield found


def _lower(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows with every string lower-cased (precube's names are upper case, the oracle's lower)."""
    columns = [[v.lower() if isinstance(v, str) else v for v in c.to_pylist()] for c in table.columns]
    return list(zip(*columns, strict=True))


def _oracle_columns(oracle: Oracle, table: str) -> list[str]:
    return [str(r[0]).lower() for r in oracle.con.execute(f"DESCRIBE ssb.{table}").fetchall()]


def test_show_and_describe_list_the_raw_tables_and_their_columns(
    session: Session, oracle: Oracle, query_model: QueryModel
) -> None:
    result = session.sql("SHOW DATABASES")
    assert result.engine == CATALOG and result.rows == [("SSB",)] and result.pushdown is False
    raw = sorted(
        r[0] for r in oracle.con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = 'ssb'").fetchall()
    )
    tables = session.sql("show tables in ssb")
    assert tables.table.column_names == ["namespace", "tableName", "isTemporary"]
    assert [r[1].lower() for r in tables.rows] == raw and all(r[0] == "SSB" and r[2] is False for r in tables.rows)
    assert session.sql("SHOW TABLES").rows == tables.rows  # the default database
    assert [r[1] for r in session.sql("show tables from SSB like 'l*|DAT%'").rows] == ["DATES", "LINEORDER"]
    computed = [cc.column_name for cc in query_model.model.computed_columns]
    for name in raw:
        described = session.sql(f"DESCRIBE ssb.{name}")
        assert described.table.column_names == ["col_name", "data_type", "comment"]
        extra = computed if name == "lineorder" else []
        assert [r[0].lower() for r in described.rows] == _oracle_columns(oracle, name) + [c.lower() for c in extra]
        assert session.sql(f"show columns in {name}").rows == [(r[0],) for r in described.rows]
    for statement in ("SHOW TABLES", "select * from information_schema.tables"):
        with pytest.raises(QueryError, match="catalog statement is answered from the project's metadata"):
            session.explain(statement)
    types = dict((r[0], r[1]) for r in session.sql("desc table lineorder").rows)
    assert types["LO_ORDERDATE"] == "date" and types["LO_REVENUE"] in ("int", "bigint")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT schema_name FROM information_schema.schemata WHERE schema_name = '{db}'",
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema = '{db}' ORDER BY table_name",
        "SELECT table_name, count(*) AS n, max(ordinal_position) AS last FROM information_schema.columns "
        "WHERE table_schema = '{db}' {own} GROUP BY table_name ORDER BY n DESC, table_name",
        "SELECT c.column_name, c.ordinal_position FROM information_schema.columns c JOIN information_schema.tables t "
        "ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
        "WHERE t.table_name = '{dates}' AND c.ordinal_position BETWEEN 2 AND 5 ORDER BY c.ordinal_position",
        "WITH cols AS (SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = '{db}' {own}) "
        "SELECT table_name FROM cols WHERE column_name LIKE '{like}' GROUP BY table_name ORDER BY table_name",
    ],
)
def test_information_schema_queries_equal_the_oracles_catalog(session: Session, oracle: Oracle, sql: str) -> None:
    mine = session.sql(sql.format(db="SSB", own="AND is_generated = 'NEVER'", dates="DATES", like="%KEY"))
    theirs = oracle.con.sql(sql.format(db="ssb", own="", dates="dates", like="%KEY")).to_arrow_table()
    assert mine.engine == CATALOG
    assert mine.table.column_names == theirs.column_names
    assert _lower(mine.table) == _lower(theirs) and mine.table.num_rows > 0


def test_computed_columns_are_generated_columns_of_their_fact_table(session: Session, query_model: QueryModel) -> None:
    found = session.sql(
        "select column_name, generation_expression, data_type from information_schema.columns "
        "where is_generated = 'ALWAYS' order by ordinal_position"
    )
    expected = [(cc.column_name.upper(), cc.expression) for cc in query_model.model.computed_columns]
    assert [(r[0], r[1]) for r in found.rows] == expected
    assert {r[2] for r in found.rows} <= {"INT", "BIGINT", "DOUBLE", "DECIMAL", "STRING"}
    typed = session.sql(
        "select full_data_type, numeric_precision, numeric_scale from information_schema.columns "
        "where table_name = 'LINEORDER' and column_name = 'LO_REVENUE'"
    ).rows
    assert typed in ([("INT", 10, 0)], [("BIGINT", 19, 0)])


def test_the_description_is_made_once_per_metadata_read(session: Session, query_model: QueryModel) -> None:
    metadata = session.metadata.get(query_model.project)
    described = metadata.description
    assert metadata.description is described  # cached on the immutable metadata read
    assert described.schemas == ("SSB",) and described.default_schema == "SSB"
    lineorder = described.table("SSB", "LINEORDER")
    assert lineorder is not None and lineorder.kind == "TABLE"
    computed = [(c.name, c.expression) for c in lineorder.columns if c.computed]
    assert computed == [(cc.column_name.upper(), cc.expression) for cc in query_model.model.computed_columns]
    assert [c.position for c in lineorder.columns] == list(range(1, len(lineorder.columns) + 1))
    assert not any(c.computed for t in described.tables if t.name != "LINEORDER" for c in t.columns)


@pytest.mark.parametrize(
    ("sql", "error", "message"),
    [
        ("select * from information_schema.views", ForbiddenSqlError, "engine catalog"),
        ("select * from information_schema.key_column_usage", ForbiddenSqlError, "engine catalog"),
        ("select * from system.information_schema.tables", ForbiddenSqlError, "engine catalog"),
        ("select * from memory.information_schema.columns", ForbiddenSqlError, "engine catalog"),
        ("select * from information_schema.tables, duckdb_tables()", ForbiddenSqlError, "DUCKDB_TABLES"),
        (
            "select * from information_schema.tables t join pg_catalog.pg_class c on 1 = 1",
            ForbiddenSqlError,
            "engine catalog",
        ),
        ("select current_setting('threads') from information_schema.tables", ForbiddenSqlError, "CURRENT_SETTING"),
        ("select * from information_schema.tables, read_text('/etc/passwd')", ForbiddenSqlError, "READ_TEXT"),
        ("select * from information_schema.tables, ssb.lineorder", UnknownObjectError, "beside information_schema"),
        (
            "select * from information_schema.tables where table_name in (select lo_shipmode from lineorder)",
            UnknownObjectError,
            "beside information_schema",
        ),
        ("SHOW FUNCTIONS", SqlSyntaxError, "SHOW FUNCTIONS is not supported"),
        ("SHOW TABLES IN main", UnknownObjectError, "database MAIN does not exist"),
        ("DESCRIBE information_schema.tables", UnknownObjectError, "does not exist in the project"),
        ("DESCRIBE ssb.nope", UnknownObjectError, "table SSB.NOPE does not exist"),
        ("show tables like '" + "*" * 40 + "'", SqlSyntaxError, "wildcards"),
    ],
)
def test_the_engines_own_catalog_stays_unreachable(
    session: Session, sql: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as raised:
        session.sql(sql)
    assert "\n" not in str(raised.value)


def test_catalog_answers_follow_the_metadata_and_skip_the_result_cache(query_model: QueryModel, ssb_dir: Path) -> None:
    """A table loaded after a SHOW TABLES is in the next one, through a cache that would admit any answer."""
    store = query_model.store
    name = "catalog_follows"
    store.create_project(Project(name=name, default_database="SSB"))
    load_file_table(store, name, ssb_dir / "DATES", SourceType.PARQUET)
    cache = ResultCache.open(CacheSettings(min_duration_ms=0, min_scanned_rows=0))
    with CachedSession(Session(store, name, query_model.warehouse_root), cache) as cached:
        assert [r[1] for r in cached.sql("show tables").rows] == ["DATES"]
        load_file_table(store, name, ssb_dir / "PART", SourceType.PARQUET)
        assert [r[1] for r in cached.sql("show tables").rows] == ["DATES", "PART"]
        query = "select count(*) from information_schema.columns where table_name = 'PART'"
        assert cached.sql(query).rows == [(len(ds.dataset(ssb_dir / "PART").schema),)]
        stats = cached.cache.stats()
        assert stats.stores == stats.misses == stats.hits == 0
