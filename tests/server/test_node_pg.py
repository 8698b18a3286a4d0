"""node-postgres (npm `pg`, the driver of Node.js tools) against the Postgres wire of the shared server: it lists
schemas, tables and columns (computed ones included) through information_schema, and the 13 SSB queries through
its simple protocol and as named prepared statements (the extended protocol), and a `$1` query, equal the oracle.

`tests/server/node` pins the driver (package.json, package-lock.json); `npm ci` installs it there once
(`node_modules`, git-ignored, kept while the lock file is unchanged). One Node process runs every statement
(`node/probe.js`) and writes what it read as JSON; values come as the server's text and are compared typed as
the oracle's columns."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from precube.metadata import Model, Table, open_store
from precube.ssb.queries import SSB_QUERIES
from tests.query.oracle import DEFAULT_TOLERANCE, Case, Oracle, assert_same
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

NODE_DIR = Path(__file__).with_name("node")
NODE, NPM = shutil.which("node"), shutil.which("npm")

pytestmark = [
    pytest.mark.spark,
    pytest.mark.usefixtures("warm_live"),  # see warm_live
    pytest.mark.skipif(NODE is None or NPM is None, reason="Node.js is not installed (./dev installs nodejs, npm)"),
]


def _installed() -> None:
    """`npm ci` in tests/server/node unless its node_modules holds the lock file's packages already."""
    want = hashlib.sha256((NODE_DIR / "package-lock.json").read_bytes()).hexdigest()
    stamp = NODE_DIR / "node_modules" / ".precube-lock"
    if stamp.exists() and stamp.read_text() == want:
        return
    assert NPM is not None
    command = [NPM, "ci", "--no-audit", "--no-fund", "--ignore-scripts"]
    subprocess.run(command, cwd=NODE_DIR, check=True, capture_output=True, timeout=300)
    stamp.write_text(want)


@pytest.fixture(scope="module")
def probe(live: LiveServer, server_home: ServerHome, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _installed()
    out = tmp_path_factory.mktemp("node-pg")
    queries = out / "queries.json"
    queries.write_text(json.dumps(SSB_QUERIES))
    assert NODE is not None and live.pg_port is not None
    command = [NODE, "probe.js", str(live.pg_port), server_home.project, *ADMIN, str(queries), str(out / "out.json")]
    done = subprocess.run(command, cwd=NODE_DIR, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads((out / "out.json").read_text())
    return found


def test_node_pg_lists_schemas_tables_and_columns(probe: dict[str, Any], server_home: ServerHome) -> None:
    settings = server_home.settings
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read(server_home.project) as tx:
        tables = tx.list(Table)
        computed = [cc for m in tx.list(Model) for cc in m.computed_columns]
    assert "ssb" in [row["schema_name"] for row in probe["schemata"]]
    assert [(r["table_name"], r["table_type"]) for r in probe["tables"]] == sorted(
        (t.name.lower(), "BASE TABLE") for t in tables
    )
    listed: dict[str, list[str]] = {}
    for row in probe["columns"]:
        listed.setdefault(row["table_name"], []).append(row["column_name"])
    assert computed  # the model's computed columns follow their table's own
    for table in tables:
        own = [c.name.lower() for c in table.columns]
        extra = [cc.column_name.lower() for cc in computed if cc.table_identity == f"{table.database}.{table.name}"]
        assert listed[table.name.lower()] == own + extra


def _typed(answer: dict[str, Any], expected: pa.Table) -> pa.Table:
    """node-pg's text values typed as the oracle's columns."""
    names = [name for name, _ in answer["fields"]]
    columns = list(zip(*answer["rows"], strict=True)) if answer["rows"] else [() for _ in names]
    arrays = [pa.array(list(c), pa.string()).cast(f.type) for c, f in zip(columns, expected.schema, strict=True)]
    return pa.table(arrays, names=names)


@pytest.mark.parametrize("name", list(SSB_QUERIES))
def test_node_pg_ssb_queries_equal_the_oracle(name: str, probe: dict[str, Any], oracle: Oracle) -> None:
    sql = SSB_QUERIES[name]
    expected = oracle.run(sql)
    case = Case(name, "", "layout", False, DEFAULT_TOLERANCE, True, expected.num_rows == 0, sql)
    for protocol in ("simple", "prepared"):
        answer = probe[protocol][name]
        assert answer["command"] == "SELECT"
        assert_same(case, expected, _typed(answer, expected))


def test_node_pg_binds_a_parameter_parses_types_and_reads_errors(probe: dict[str, Any], oracle: Oracle) -> None:
    sql = "select c_region, count(*) as n from ssb.customer where c_nation = 'CHINA' group by c_region"
    expected = oracle.run(sql)
    rows = [(region, str(n)) for region, n in zip(*(c.to_pylist() for c in expected.columns), strict=True)]
    assert [tuple(r) for r in probe["parameter"]["rows"]] == rows
    days = oracle.run("select count(*) as n from ssb.dates").column(0)[0].as_py()
    assert probe["typed"] == {"n": str(days), "first": "Date"}  # node-pg's own parsers: int8 as a string, a date
    assert probe["error"]["code"] == "42703" and "NOPE" in probe["error"]["message"]
