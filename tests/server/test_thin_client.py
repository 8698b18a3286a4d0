"""The thin client (`clients/python`, distribution `precube-client`) as Superset 6.1's image would have it: a venv
with Superset's pins of SQLAlchemy, pandas, pyarrow and numpy (not Superset itself), the client installed from
the repository, and none of PySpark, DuckDB or sqlglot; a probe run with that venv's Python connects with the
dialect to the shared live server, reflects the schemas, tables and columns (computed included) as the full
package's SQLAlchemy 2 dialect does, and answers the 13 SSB queries equal to the oracle, parameters and
Superset's time grains included.

The venv is made once (`.venv-thin` at the repository's root, or $PRECUBE_THIN_VENV) and kept while the pins
and the client's dependencies stay the same; the client itself is reinstalled once per test session (a wheel of
a few files: seconds). Making it needs PyPI (CI has it)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa

from precube.ssb.queries import SSB_QUERIES
from precube_client.time_grains import TIME_GRAIN_EXPRESSIONS
from tests.query.oracle import Case, Oracle, assert_same
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "python"
# apache-superset 6.1.0's Requires-Dist for what the thin client shares with it (its wheel's METADATA)
SUPERSET_PINS = ["sqlalchemy>=1.4,<2", "pandas>=2.1.4,<2.2", "pyarrow>=16.1.0,<19", "numpy>1.23.5,<2.3"]
ENGINE_PACKAGES = {"pyspark", "duckdb", "sqlglot", "precube"}
# SSB's dates table: 1992-01-01 to 1998-12-31 (2,557 days: 1992 and 1996 are leap years)
BUILD = "setuptools>=77"  # builds the client in the venv (its pyproject's build-system)
GRAIN_COUNTS = {"none": 2557, "P1D": 2557, "P1M": 84, "P3M": 28, "P1Y": 7}


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args], check=True)


@pytest.fixture(scope="session")
def thin_python() -> Path:
    """The thin venv's Python, the client of this checkout installed in it."""
    venv = Path(os.environ.get("PRECUBE_THIN_VENV") or REPO / ".venv-thin")
    python = venv / "bin" / "python"
    want = hashlib.sha256(
        json.dumps([SUPERSET_PINS, BUILD, (CLIENT / "pyproject.toml").read_text()]).encode()
    ).hexdigest()
    stamp = venv / ".precube-pins"
    if not python.exists() or not stamp.exists() or stamp.read_text() != want:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        constraints = venv / "superset-pins.txt"
        constraints.write_text("\n".join(SUPERSET_PINS) + "\n")
        _pip(python, "-c", str(constraints), BUILD, f"{CLIENT}[sqlalchemy,pandas]")
        stamp.write_text(want)
    # this checkout's client, built with the venv's own setuptools (no build environment to make each session)
    _pip(python, "--no-deps", "--force-reinstall", "--no-build-isolation", str(CLIENT))
    return python


@pytest.fixture(scope="module")
def probe(thin_python: Path, server_home: ServerHome, live: LiveServer, tmp_path_factory: Any) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("thin")
    queries = out / "queries.json"
    queries.write_text(json.dumps(SSB_QUERIES))
    script = Path(__file__).with_name("thin_client_probe.py")
    command = [str(thin_python), "-I", str(script), live.url, server_home.project, *ADMIN, str(queries), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=out)  # -I, cwd: not this repo
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads((out / "probe.json").read_text())
    found["arrow"] = {name: pa.ipc.open_file(str(out / f"{name}.arrow")).read_all() for name in SSB_QUERIES}
    return found


def test_the_venv_has_superset_pins_and_no_engine(probe: dict[str, Any]) -> None:
    assert not ENGINE_PACKAGES & set(probe["distributions"]), probe["distributions"]
    assert "precube-client" in probe["distributions"]
    versions = probe["versions"]
    assert versions["sqlalchemy"].startswith("1.4.") and versions["pandas"].startswith("2.1.")
    assert 16 <= int(versions["pyarrow"].split(".")[0]) < 19
    assert probe["dialect"] == "precube_client.dialect.PrecubeHTTPDialect"


def test_reflection_equals_the_full_packages_sqlalchemy_2(
    probe: dict[str, Any], server_home: ServerHome, live: LiveServer
) -> None:
    engine = sa.create_engine(f"precube+http://{ADMIN[0]}:{ADMIN[1]}@{live.url.split('://')[1]}/{server_home.project}")
    try:
        inspector = sa.inspect(engine)
        assert probe["schemas"] == inspector.get_schema_names() and probe["default_schema"] == "ssb"
        expected = {
            table: [
                {
                    "name": c["name"],
                    "type": type(c["type"]).__name__.replace("DOUBLE", "FLOAT"),  # 1.4 has no DOUBLE type
                    "nullable": c["nullable"],
                    "computed": (c.get("computed") or {}).get("sqltext"),
                }
                for c in inspector.get_columns(table)
            ]
            for table in inspector.get_table_names()
        }
    finally:
        engine.dispose()
    assert probe["tables"] == expected
    assert {"lineorder", "dates", "customer", "supplier", "part"} <= set(expected)
    assert any(c["computed"] for columns in expected.values() for c in columns)  # computed columns listed too


@pytest.mark.parametrize("name", list(SSB_QUERIES))
def test_ssb_answers_equal_the_oracle(name: str, probe: dict[str, Any], oracle: Oracle) -> None:
    sql = SSB_QUERIES[name]
    table: pa.Table = probe["arrow"][name]
    assert_same(Case(name, "", "layout", False, 0.0, False, False, sql), oracle.run(sql), table)
    fetched = [
        [v if v is None or isinstance(v, bool | int | float | str) else str(v) for v in r.values()]
        for r in table.to_pylist()
    ]
    assert probe["rows"][name] == fetched  # SQLAlchemy's rows: the same values
    assert probe["pandas_shapes"][name] == [table.num_rows, table.num_columns]


def test_parameters_and_time_grains(probe: dict[str, Any], oracle: Oracle) -> None:
    expected = oracle.run("select count(*) from ssb.dates where d_year = 1995 and d_month = 'May'")
    assert probe["bound"] == expected.column(0)[0].as_py() == 31
    assert set(probe["grains"]) == {g or "none" for g in TIME_GRAIN_EXPRESSIONS}
    assert {g: probe["grains"][g] for g in GRAIN_COUNTS} == GRAIN_COUNTS
    assert 365 <= probe["grains"]["P1W"] <= 367 and probe["grains"]["P1W/1970-01-03T00:00:00Z"] in range(365, 368)
