"""pgjdbc, unchanged (Debian's libpostgresql-jdbc-java on Debian's JDK), against precube's Postgres wire
(issue 39): `jdbc/Probe.java` lists what a JDBC tool's catalog step reads through `DatabaseMetaData`
(DBeaver's and Metabase's schema, table and column lists come from it) and runs the 13 SSB queries through a
`Statement` and a `PreparedStatement` with a `?`; the answers must equal the oracle's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from precube.ssb.queries import SSB_QUERIES
from tests.query.oracle import DEFAULT_TOLERANCE, Case, Oracle, assert_same
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer
from tests.server.test_pgwire_tools import metadata

JAR = Path("/usr/share/java/postgresql.jar")
JAVA = shutil.which("java") if shutil.which("javac") else None  # a JDK: the probe runs from its source
PROBE = Path(__file__).parent / "jdbc" / "Probe.java"

pytestmark = [
    pytest.mark.spark,
    pytest.mark.usefixtures("warm_live"),
    pytest.mark.skipif(
        JAVA is None or not JAR.is_file(),
        reason="pgjdbc or a JDK is missing (./dev installs libpostgresql-jdbc-java, openjdk-17-jdk-headless)",
    ),
]

# the column labels of PostgreSQL 15's answers to the same pgjdbc calls
PG_LABELS = {
    "primary_keys": ["table_cat", "table_schem", "table_name", "column_name", "key_seq", "pk_name"],
    "imported_keys": [
        "pktable_cat",
        "pktable_schem",
        "pktable_name",
        "pkcolumn_name",
        "fktable_cat",
        "fktable_schem",
        "fktable_name",
        "fkcolumn_name",
        "key_seq",
        "update_rule",
        "delete_rule",
        "fk_name",
        "pk_name",
        "deferrability",
    ],
    "index_info": [
        "TABLE_CAT",
        "TABLE_SCHEM",
        "TABLE_NAME",
        "NON_UNIQUE",
        "INDEX_QUALIFIER",
        "INDEX_NAME",
        "TYPE",
        "ORDINAL_POSITION",
        "COLUMN_NAME",
        "ASC_OR_DESC",
        "CARDINALITY",
        "PAGES",
        "FILTER_CONDITION",
    ],
}
_LITERAL = re.compile(r"(=|>=|<=) (\d+|'[^']*')")


def prepared(sql: str) -> tuple[str, str, str]:
    """The query with its first compared literal as a `?`, the parameter's kind (int or string) and value."""
    found = _LITERAL.search(sql)
    assert found is not None, sql
    value = found.group(2)
    kind = "string" if value.startswith("'") else "int"
    return sql[: found.start(2)] + "?" + sql[found.end(2) :], kind, value.strip("'")


@pytest.fixture(scope="module")
def probe(live: LiveServer, server_home: ServerHome, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each listing's and query's result, by name: `{"columns": [[label, type], …], "rows": […]}`, or the
    failure's `{"sqlstate", "error"}`."""
    assert JAVA is not None
    queries = tmp_path_factory.mktemp("jdbc") / "queries.tsv"
    lines = ["\t".join((name, sql, *prepared(sql))) for name, sql in SSB_QUERIES.items()]
    queries.write_text("\n".join(lines) + "\n")
    url = f"jdbc:postgresql://127.0.0.1:{live.pg_port}/{server_home.project}"
    command = [JAVA, "-cp", str(JAR), str(PROBE), url, *ADMIN, str(queries)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = [json.loads(line, parse_float=Decimal) for line in done.stdout.splitlines()]
    return {entry["name"]: entry["result"] for entry in found}


def listing(probe: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """A listing's rows as dictionaries (it must have answered)."""
    result = probe[name]
    assert "rows" in result, (name, result)
    labels = [label for label, _ in result["columns"]]
    return [dict(zip(labels, row, strict=True)) for row in result["rows"]]


def test_pgjdbc_lists_schemas_tables_and_columns(probe: dict[str, Any], server_home: ServerHome) -> None:
    tables, computed = metadata(server_home)
    product = probe["product"]
    assert (product["name"], product["version"].split()[0], product["schema"]) == ("PostgreSQL", "16.0", "ssb")
    assert [row["TABLE_CAT"] for row in listing(probe, "catalogs")] == [server_home.project]
    assert "ssb" in [row["table_schem"] for row in listing(probe, "schemas")]
    listed = listing(probe, "tables")
    assert [row["TABLE_NAME"] for row in listed] == sorted(t.name.lower() for t in tables)
    assert {(row["TABLE_SCHEM"], row["TABLE_TYPE"]) for row in listed} == {("ssb", "TABLE")}
    lineorder = next(t for t in tables if t.name == "LINEORDER")
    columns = listing(probe, "columns")
    plain = [c.name.lower() for c in lineorder.columns]
    assert [row["COLUMN_NAME"] for row in columns] == plain + [name for name, _ in computed["lineorder"]]
    assert [row["ORDINAL_POSITION"] for row in columns] == list(range(1, len(columns) + 1))
    assert [(row["IS_GENERATEDCOLUMN"], row["COLUMN_DEF"]) for row in columns[len(plain) :]] == [
        ("YES", expression) for _, expression in computed["lineorder"]
    ]
    assert {row["IS_GENERATEDCOLUMN"] for row in columns[: len(plain)]} == {"NO"}
    assert columns[0]["TYPE_NAME"] == "int8" and columns[0]["DATA_TYPE"] == -5  # java.sql.Types.BIGINT
    # precube declares no keys or indexes: each listing answers, empty, as PostgreSQL's would
    for name in ("primary_keys", "imported_keys", "index_info"):
        assert listing(probe, name) == [], name
    for name, labels in PG_LABELS.items():  # pgjdbc reads some by name: labelled as PostgreSQL 15 labels them
        assert [label for label, _ in probe[name]["columns"]] == labels, name
    types = {row["TYPE_NAME"]: row["DATA_TYPE"] for row in listing(probe, "type_info")}
    assert types["int8"] == -5 and types["numeric"] == 2 and types["varchar"] == 12 and types["date"] == 91
    assert "TABLE" in [row["TABLE_TYPE"] for row in listing(probe, "table_types")]
    keywords = probe["keywords"]  # pg_get_keywords() less SQL:2003's, which pgjdbc leaves out
    assert isinstance(keywords, str) and "analyze" in keywords.split(",") and "select" not in keywords.split(",")


def answer(result: dict[str, Any], expected: pa.Table) -> pa.Table:
    """The probe's rows as a table of the oracle's column types (JDBC's values carry no Arrow type)."""
    assert "rows" in result, result
    labels = [label for label, _ in result["columns"]]
    columns = list(zip(*result["rows"], strict=True)) if result["rows"] else [() for _ in labels]
    arrays = []
    for values, field in zip(columns, expected.schema, strict=True):
        if pa.types.is_floating(field.type):
            values = tuple(None if v is None else float(v) for v in values)
        elif pa.types.is_integer(field.type):  # a whole numeric (a cube's sum) where the oracle has a bigint
            values = tuple(int(v) if isinstance(v, Decimal) and v == int(v) else v for v in values)
        elif pa.types.is_decimal(field.type):
            values = tuple(None if v is None else Decimal(str(v)) for v in values)
        arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, names=labels)


@pytest.mark.parametrize("name", list(SSB_QUERIES))
def test_pgjdbc_ssb_queries_equal_the_oracle(name: str, probe: dict[str, Any], oracle: Oracle) -> None:
    sql = SSB_QUERIES[name]
    expected = oracle.run(sql)
    case = Case(name, "", "pushdown", True, DEFAULT_TOLERANCE, False, expected.num_rows == 0, sql)
    assert_same(case, expected, answer(probe[f"statement:{name}"], expected))
    assert_same(case, expected, answer(probe[f"prepared:{name}"], expected))
