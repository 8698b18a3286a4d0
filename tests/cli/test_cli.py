"""The `precube` command line: every command has --help; errors are one line and a non-zero exit."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from precube.cli.app import COMMANDS, load_command, run
from precube.metadata import Dataflow, IndexPlan, Job, JobState, JobType, Model, SegmentStatus, TableExt, open_store
from precube.metadata.errors import AlreadyExistsError
from precube.modeling.partition_format import to_epoch_ms
from precube.ssb.generate import TABLES, row_counts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _commands(cmd: object, prefix: list[str]) -> list[list[str]]:
    found = [prefix]
    for name, sub in getattr(cmd, "commands", {}).items():
        found += _commands(sub, [*prefix, name])
    return found


ALL_COMMANDS = [[], *(c for name in COMMANDS for c in _commands(load_command(name), [name]))]


@pytest.mark.parametrize("name", COMMANDS)
def test_the_help_line_of_a_deferred_command_is_its_own(name: str) -> None:
    """`precube --help` lists sub-commands without importing them: the line it shows is each one's own."""
    assert COMMANDS[name][2] == load_command(name).get_short_help_str(limit=1000)


def test_help_and_version_import_no_engine() -> None:
    """`precube --help`/`--version` start fast because they import no engine (pandas, pyarrow, DuckDB,
    SQLAlchemy, sqlglot, Spark): `bench/startup.py` measures the time."""
    heavy = ["pandas", "pyarrow", "duckdb", "sqlalchemy", "sqlglot", "pyspark", "numpy"]
    for option in ("--help", "--version"):
        code = (
            "import sys, contextlib, io\n"
            "from precube.cli.app import run\n"
            f"with contextlib.redirect_stdout(io.StringIO()): status = run([{option!r}])\n"
            f"print(status, sorted({{m.split('.')[0] for m in sys.modules}} & {set(heavy)!r}))"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert done.stdout.split("\n")[0] == "0 []", (option, done.stdout, done.stderr)


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: " ".join(c) or "precube")
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*command, "--help"]) == 0
    assert "Usage: precube" in capsys.readouterr().out


def test_the_shipped_ssb_model_is_printed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """`precube ssb model > ssb.yaml` gives the spec the demo creates, without the source tree."""
    import yaml

    from precube.cli.demo import ssb_model_spec
    from precube.modeling.model_spec import parse_spec

    assert run(["ssb", "model"]) == 0
    assert parse_spec(yaml.safe_load(capsys.readouterr().out), "ssb.yaml") == ssb_model_spec()


def test_expected_commands_exist() -> None:
    names = {" ".join(c) for c in ALL_COMMANDS}
    for expected in [
        "project create", "project list", "project delete",
        "table load", "table list", "table reload", "table sample",
        "metadata backup", "metadata restore", "ssb generate", "ssb model", "demo",
        "model create", "model validate", "model show", "model list", "model delete",
        "index preview", "index set-rules", "index add-table-index",
    ]:  # fmt: skip
        assert expected in names


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err.strip()


def test_project_lifecycle_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(tmp_path)]
    assert run([*home, "project", "create", "sales", "-d", "shop"]) == 0
    assert "created project sales (default database SHOP)" in capsys.readouterr().out
    assert run([*home, "project", "create", "sales"]) == 1
    err = _err(capsys)
    assert err == "error: project 'sales' already exists"
    assert run([*home, "project", "list"]) == 0
    assert "SHOP" in capsys.readouterr().out
    assert run([*home, "table", "load", "-p", "ghost", str(tmp_path)]) == 1
    assert _err(capsys) == "error: project 'ghost' does not exist"
    assert run([*home, "table", "load", "-p", "sales", str(tmp_path / "missing")]) == 1
    assert "no such file or directory" in _err(capsys)
    assert run([*home, "project", "delete", "sales", "--yes"]) == 0
    assert run([*home, "project", "delete", "sales", "--yes"]) == 1
    assert _err(capsys) == "error: project 'sales' does not exist"


def test_project_delete_previews_and_removes_its_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(tmp_path)]
    for name in ("sales", "other"):
        assert run([*home, "project", "create", name]) == 0
        part = tmp_path / "warehouse" / name / "model" / "segment" / "1" / "part-0.parquet"
        part.parent.mkdir(parents=True)
        part.write_bytes(b"x" * 2_000_000)
    capsys.readouterr()
    assert run([*home, "project", "delete", "sales", "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("would delete project sales: ") and "models none, 0 segments, 2.0 MB of built data" in out
    assert (tmp_path / "warehouse" / "sales").exists()
    assert run([*home, "project", "delete", "sales", "--yes"]) == 0
    assert not (tmp_path / "warehouse" / "sales").exists() and (tmp_path / "warehouse" / "other").exists()
    assert run([*home, "project", "list"]) == 0
    assert "other" in capsys.readouterr().out


def test_debug_shows_the_exception(tmp_path: Path) -> None:
    assert run(["--home", str(tmp_path), "project", "create", "x"]) == 0
    with pytest.raises(AlreadyExistsError):
        run(["--home", str(tmp_path), "--debug", "project", "create", "x"])


def test_wrong_postgres_url_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PRECUBE__METADATA__URL", "postgresql://precube:pw@127.0.0.1:1/none")
    assert run(["--home", str(tmp_path), "project", "list"]) == 1
    err = _err(capsys)
    assert err.startswith("error: cannot open metadata store postgresql+psycopg://precube:***@127.0.0.1:1/none")
    assert "pw" not in err and "\n" not in err


def test_any_error_reaching_the_top_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever escapes a command — a home that is a file, an OS error, a bug — is one line and exit 1;
    `--debug` raises it whole."""
    home = tmp_path / "home"
    home.write_text("")
    assert run(["--home", str(home), "project", "list"]) == 1
    assert _err(capsys) == f"error: invalid settings: {home} is a file, not a directory"

    from precube.cli.context import CliContext

    def denied(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / "x"))

    monkeypatch.setattr(CliContext, "store", denied)
    assert run(["--home", str(tmp_path), "project", "list"]) == 1
    assert _err(capsys) == f"error: Permission denied: {tmp_path / 'x'} (--debug shows where)"
    with pytest.raises(PermissionError):
        run(["--home", str(tmp_path), "--debug", "project", "list"])

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("something went wrong\nand a second line")

    monkeypatch.setattr(CliContext, "store", broken)
    assert run(["--home", str(tmp_path), "project", "list"]) == 1
    assert _err(capsys) == "error: RuntimeError: something went wrong (--debug shows where)"


def test_one_spark_session_per_command_the_supervised_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`spark()` (sampling, catalog tables) is the supervisor's session, the one jobs run on (`--wait`): a command
    using both starts one JVM."""
    from precube.cli.context import CliContext
    from tests.jobs.test_spark_supervisor import FakeJvm

    made: list[FakeJvm] = []

    def fake_session(*_: object, **__: object) -> FakeJvm:
        made.append(FakeJvm())
        return made[-1]

    monkeypatch.setattr("precube.spark_session.spark_session", fake_session)
    cli = CliContext(home=tmp_path)
    try:
        session = cli.spark()
        supervisor = cli.spark_supervisor()
        assert made == [session] and supervisor.session is session and cli.spark() is session
    finally:
        cli.close()


def test_usage_error_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["project", "create"]) == 2
    assert "Missing argument" in capsys.readouterr().err


def test_backup_and_restore_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = ["--home", str(tmp_path / "a")], ["--home", str(tmp_path / "b")]
    assert run([*a, "project", "create", "one"]) == 0
    assert run([*a, "metadata", "backup", str(tmp_path / "bk")]) == 0
    assert run([*b, "metadata", "restore", str(tmp_path / "bk")]) == 0
    assert run([*b, "metadata", "restore", str(tmp_path / "bk")]) == 1
    assert "already holds projects one" in _err(capsys)
    assert run([*b, "metadata", "restore", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in _err(capsys)
    assert run([*b, "metadata", "backup", str(tmp_path / "bk2")]) == 0
    first = sorted(p.relative_to(tmp_path / "bk") for p in (tmp_path / "bk").rglob("*"))
    assert first == sorted(p.relative_to(tmp_path / "bk2") for p in (tmp_path / "bk2").rglob("*"))


@pytest.mark.spark
def test_demo_generates_loads_and_samples(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    args = [
        "--home",
        str(home),
        "demo",
        "--scale",
        "0.01",
        "--data",
        str(tmp_path / "ssb"),
        "--project",
        "ssb",
        "--last-year",
        "1993",
        "--repeat",
        "1",
    ]
    assert run(args) == 0
    out = capsys.readouterr().out
    assert "demo done" in out and "auto-merge on" in out
    expected = row_counts(0.01)
    with open_store(f"sqlite:///{home / 'metadata.db'}") as store, store.read("ssb") as tx:
        assert tx.project().default_database == "SSB"
        for name in TABLES:
            ext = tx.require(TableExt, f"SSB.{name}")
            assert ext.total_rows == expected[name.lower()], name
        [model] = tx.list(Model)
        # the layouts `index recommend` gives for the 13 SSB queries and revenue by year, not the spec's ~150
        assert model.alias == "ssb" and 10 <= len(tx.require(IndexPlan, model.uuid).all_layouts()) <= 20
        segments = sorted(tx.require(Dataflow, model.uuid).segments, key=lambda s: s.range)
        jobs = tx.list(Job)
    # one READY segment per year (two here, to keep the test short), with that year's orders
    bounds = [
        (to_epoch_ms(f"{y}-01-01", "yyyy-MM-dd"), to_epoch_ms(f"{y + 1}-01-01", "yyyy-MM-dd")) for y in (1992, 1993)
    ]
    assert [(s.range.start, s.range.end) for s in segments] == bounds
    assert all(s.status is SegmentStatus.READY for s in segments)
    orders = ds.dataset(tmp_path / "ssb" / "LINEORDER")
    day = pc.field("LO_ORDERDATE")
    for segment, year in zip(segments, (1992, 1993), strict=True):
        in_year = (day >= dt.date(year, 1, 1)) & (day < dt.date(year + 1, 1, 1))
        assert segment.source_count == orders.count_rows(filter=in_year) > 0
        assert segment.name in out  # the segment listing
    assert sorted((j.job_type, j.state) for j in jobs) == [(JobType.INC_BUILD, JobState.SUCCEED)] * 2
    assert all(j.uuid in out for j in jobs)
    # the demo ends with the 13 SSB queries, each answered from a layout beside DuckDB on the raw files, the
    # answers compared (the orders of the built years)
    ssb_table = out[out.index("SSB queries") :]
    assert all(f"Q{n} " in ssb_table for n in ("1.1", "2.3", "3.2", "4.3")) and "pushdown" not in ssb_table
    compared = [line for line in ssb_table.splitlines() if line.startswith("│ Q")]
    assert len(compared) == 13 and all(line.rstrip(" │").endswith("yes") for line in compared)
    assert "geomean" in ssb_table
    assert "all 13 answers equal DuckDB's on the raw files (orders before 1994-01-01)" in out
    # the query command's JSON: revenue per year against the raw orders
    sql = "select d_year, sum(lo_revenue) as revenue, count(*) from lineorder left join dates on lo_orderdate = d_datekey group by d_year order by d_year"
    assert run(["--home", str(home), "query", "-p", "ssb", sql, "--format", "json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["columns"] == [
        {"name": "d_year", "type": "integer"},
        {"name": "revenue", "type": "bigint"},
        {"name": "count(*)", "type": "bigint"},
    ]
    raw = orders.to_table(columns=["LO_ORDERDATE", "LO_REVENUE"]).to_pylist()
    expected_rows = [
        [
            y,
            sum(r["LO_REVENUE"] for r in raw if r["LO_ORDERDATE"].year == y),
            sum(1 for r in raw if r["LO_ORDERDATE"].year == y),
        ]
        for y in (1992, 1993)
    ]
    assert answer["rows"] == expected_rows
    assert answer["pushdown"] is False and answer["model"] == "ssb" and answer["engine"] == "duckdb"
    assert sorted(answer["segments"]) == sorted(s.id for s in segments) and isinstance(answer["layout_id"], int)
    # a second run reuses the data and the project; an answer unlike DuckDB's fails it
    calls = iter(range(100))
    monkeypatch.setattr("precube.cli.demo.same_rows", lambda *_: next(calls) != 1)
    assert run(args) == 1
    out = capsys.readouterr().out
    assert "reusing SSB scale 0.01" in out and "reusing project ssb" in out and "reusing model ssb" in out
    assert "SSB.LINEORDER: 60,000 rows, sampled before" in out  # the same files: not sampled again
    assert "answers differ from DuckDB's on the raw files: Q1.2" in out and "demo done" not in out
