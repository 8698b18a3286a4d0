"""`precube.connect`: the Python API a user's script starts from — light to import, typed for their checker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import precube
from precube.cli.app import run

SCRIPT = """\
import precube

session = precube.connect("p", home={home!r})
reveal_type(session)
result = session.sql("select 1 as x")
rows: list[tuple[object, ...]] = result.rows
print(rows, result.pushdown_reason, result.table.num_rows)
session.close()
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    assert run(["--home", str(tmp_path), "project", "create", "p"]) == 0
    return tmp_path


def test_connect_answers_and_import_precube_stays_light(home: Path) -> None:
    session = precube.connect("p", home=home)
    try:
        assert session.sql("select 1 as x").rows == [(1,)]
    finally:
        session.close()
    code = (
        "import sys, precube; print(sorted(m for m in ('pandas', 'pyarrow', 'duckdb', 'sqlglot') if m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        precube.nothing  # noqa: B018 (the lazy attribute hook refuses other names)


def test_a_users_script_type_checks_strictly(home: Path, tmp_path: Path) -> None:
    """`mypy --strict` on a user's script sees `connect`'s real signature and the session it returns."""
    from mypy import api

    script = tmp_path / "script.py"
    script.write_text(SCRIPT.format(home=str(home)))
    out, err, status = api.run(["--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(script)])
    assert "precube.query.session.Session" in out, out + err  # reveal_type's note
    assert status == 0 and " error: " not in out, out + err
