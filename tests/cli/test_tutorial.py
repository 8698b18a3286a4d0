"""README.md's tutorial, run as written: its shell commands (taken from the README, so the two cannot drift)
over CSV files of an awkward flights schema this test writes — NULLs in keys and measures, string keys,
orphan keys, a lookup joined twice, a lookup on a two-column key — then every question of its `questions.sql`
answered as DuckDB answers it on the same files, from layouts: all but one from aggregate layouts."""

from __future__ import annotations

import csv
import datetime as dt
import json
import random
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd
import pyarrow as pa
import pytest

from precube.cli.app import run
from precube.metadata.index_plan import is_table_index
from tests.query.oracle import Case, assert_same, to_duckdb

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

README = Path(__file__).parents[2] / "README.md"
SECTION = "## Tutorial: your own CSV files to an answer and a chart"
# the tutorial's commands, in order: a change of the README's steps must change this test with it
STEPS = [
    "project create", "table load", "model suggest", "model validate", "model create",
    "build", "build", "query", "query",
]  # fmt: skip
RAW_ROW_QUESTIONS = 1  # the exact percentile: from the rows the build keeps (the table index), not an aggregate
BUILT = re.compile(r"built segment (\d+)_(\d+) \([0-9a-f-]{36}\): ([\d,]+) source rows")
FLIGHTS = 3_000
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)


def _blocks() -> dict[str, list[str]]:
    """The tutorial section's fenced code blocks, by language."""
    text = README.read_text(encoding="utf-8")
    assert SECTION in text, f"README.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for language, body in BLOCK.findall(section):
        found.setdefault(language, []).append(body)
    return found


def _commands(blocks: dict[str, list[str]]) -> list[list[str]]:
    """Every line of the tutorial's bash blocks: one `precube` command each, comments dropped."""
    commands = [
        shlex.split(line, comments=True)
        for body in blocks.get("bash", [])
        for line in body.splitlines()
        if line.strip()
    ]
    assert all(c and c[0] == "precube" for c in commands), (
        f"the tutorial's bash blocks hold more than commands: {commands}"
    )
    steps = [" ".join(c[1:3]) if c[1] in ("project", "table", "model") else c[1] for c in commands]
    assert steps == STEPS, f"README.md's tutorial changed its steps: {steps}"
    return [c[1:] for c in commands]


def _questions(blocks: dict[str, list[str]]) -> str:
    found = blocks.get("sql", [])
    assert len(found) == 1, f"README.md's tutorial has {len(found)} ```sql blocks, not one of questions"
    return found[0]


def _assert_excerpt(blocks: dict[str, list[str]], written: str) -> None:
    """The README's excerpt of the suggested spec is what `model suggest` writes: each line of it whole, or up
    to an ellipsis."""
    found = blocks.get("yaml", [])
    assert len(found) == 1, f"README.md's tutorial has {len(found)} ```yaml blocks, not one excerpt of the model"
    lines = written.splitlines()
    for line in found[0].splitlines():
        shown = line.split("…")[0]
        assert any(w == line or ("…" in line and w.startswith(shown)) for w in lines), (
            f"README.md shows {line!r}, which model suggest no longer writes:\n{written}"
        )


def _write_csv_files(root: Path) -> None:
    """The tutorial's four CSV files: 3,000 flights in January and February 2015 (empty fields are NULL)."""
    rnd = random.Random(41)
    airports = [(f"A{i:02d}", f"City {i}", f"S{i % 7}") for i in range(30)]
    airlines = [("AA", "American"), ("DL", "Delta"), ("UA", "United"), ("WN", "Southwest")]
    # tail numbers repeat across airlines: a plane is (AIRLINE, TAIL_NUM)
    aircraft = [(a, f"N{i}", rnd.choice([76, 150, 180, 300])) for a, _ in airlines for i in range(12)]
    flights = []
    for _ in range(FLIGHTS):
        airline, tail, _seats = rnd.choice(aircraft)
        flights.append(
            [
                (dt.date(2015, 1, 1) + dt.timedelta(days=rnd.randrange(59))).isoformat(),
                airline,
                tail if rnd.random() > 0.02 else "",  # NULL in a composite key
                rnd.choice(airports)[0] if rnd.random() > 0.03 else "",  # NULL keys
                rnd.choice(airports)[0] if rnd.random() > 0.03 else "XXX",  # orphan keys
                rnd.randint(-10, 120) if rnd.random() > 0.05 else "",  # NULL measures
                rnd.randint(100, 2_500),
            ]
        )
    files: dict[str, tuple[list[str], Sequence[Sequence[object]]]] = {
        "flights.csv": (["FL_DATE", "AIRLINE", "TAIL_NUM", "ORIGIN", "DEST", "DEP_DELAY", "DISTANCE"], flights),
        "airports.csv": (["AIRPORT", "CITY", "STATE"], airports),
        "airlines.csv": (["AIRLINE", "NAME"], airlines),
        "aircraft.csv": (["AIRLINE", "TAIL_NUM", "SEATS"], aircraft),
    }
    root.mkdir(parents=True)
    for name, (header, rows) in files.items():
        with (root / name).open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)


def _answer(answer: dict[str, Any]) -> pa.Table:
    """`precube query --format json`'s answer as a table (dates back to dates)."""
    columns = {}
    for i, column in enumerate(answer["columns"]):
        values = [row[i] for row in answer["rows"]]
        if column["type"] == "date":
            values = [None if v is None else dt.date.fromisoformat(v) for v in values]
        columns[column["name"]] = values
    return pa.table(columns) if answer["rows"] else pa.table({c: pa.array([], pa.null()) for c in columns})


def test_the_readme_tutorial_as_written(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    del spark  # the CLI's builds find the shared session
    blocks = _blocks()
    commands = _commands(blocks)
    _write_csv_files(tmp_path / "csv")
    (tmp_path / "questions.sql").write_text(_questions(blocks))
    files = {"questions.sql": tmp_path / "questions.sql", "model.yaml": tmp_path / "model.yaml"}
    home = ["--home", str(tmp_path / "home")]
    segments: list[tuple[str, str, int]] = []  # (start, end, source rows) of each build
    for command in commands:
        args = [str(tmp_path / a) if a.startswith("csv/") else str(files.get(a, a)) for a in command]
        capsys.readouterr()
        status = run([*home, *args])
        out, err = capsys.readouterr()
        assert status == 0, f"`precube {shlex.join(command)}` failed: {err or out}"
        if command[:2] == ["model", "suggest"]:
            written = (tmp_path / "model.yaml").read_text()
            _assert_excerpt(blocks, written)
            assert "is an exact percentile: no aggregate holds it" in written  # (issue 41 §7: not a sketch)
        if command[0] == "build":
            built = BUILT.search(out)
            assert built is not None, out
            segments.append((built.group(1), built.group(2), int(built.group(3).replace(",", ""))))
        if command[0] == "query":
            assert "model flights, layout" in out, out  # from a layout
    # each build starts where the last one ended, and together they hold every flight
    assert all(segments[i][1] == segments[i + 1][0] for i in range(len(segments) - 1)), segments
    assert sum(rows for _, _, rows in segments) == FLIGHTS
    project = commands[-1][commands[-1].index("-p") + 1]

    con = duckdb.connect()
    for table in ("flights", "airports", "airlines", "aircraft"):
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_csv('{tmp_path / 'csv' / table}.csv', header=true)")
    questions = [q.strip() for q in _questions(blocks).split(";") if q.strip()]
    from_aggregates = 0
    for sql in questions:
        assert run([*home, "query", "-p", project, "--format", "json", "--", sql]) == 0, capsys.readouterr().err
        answer = json.loads(capsys.readouterr().out)
        expected = con.sql(to_duckdb(sql)).to_arrow_table()
        assert expected.num_rows > 0, sql
        assert_same(Case("question", "", "layout", False, 1e-9, True, False, sql), expected, _answer(answer))
        assert not answer["pushdown"], f"not answered from a layout: {sql}\n{answer['pushdown_reason']}"
        from_aggregates += not is_table_index(answer["layout_id"])
    assert from_aggregates == len(questions) - RAW_ROW_QUESTIONS

    # the chart: the README's Python as written, on the tutorial's home, with pandas' plotting recorded
    plotted: list[tuple[pd.DataFrame, dict[str, Any]]] = []
    monkeypatch.setenv("PRECUBE__HOME", str(tmp_path / "home"))
    monkeypatch.setattr(pd.DataFrame, "plot", property(lambda frame: lambda **kw: plotted.append((frame, kw))))
    python = blocks.get("python", [])
    assert len(python) == 1, f"README.md's tutorial has {len(python)} ```python blocks, not one chart"
    exec(compile(python[0], "README.md", "exec"), {})
    [(frame, kw)] = plotted
    assert {kw["x"], kw["y"]} <= set(frame.columns)
    days = con.execute("select count(distinct fl_date) from flights").fetchone()
    assert days is not None and len(frame) == days[0]
    con.close()
