"""`precube build|refresh|merge|segments` through the real command line, on real Spark."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from precube.cli.app import run
from tests.cli.home import ssb_home
from tests.modeling.conftest import ssb_spec_data

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SEGMENT = re.compile(r"(built|merged into|refreshed) segment \S+ \(([0-9a-f-]{36})\): ([\d,]+) source rows")


@pytest.fixture
def home(spark: SparkSession, tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    del spark  # the CLI finds the shared session
    spec = {**ssb_spec_data(), "aggregation_groups": [{"includes": ["D_YEAR", "C_REGION"]}]}
    args = ssb_home(tmp_path / "home", ssb_dir, spec)
    capsys.readouterr()
    return args


def _segment(capsys: pytest.CaptureFixture[str], verb: str) -> tuple[str, int]:
    out = capsys.readouterr().out
    found = SEGMENT.search(out)
    assert found is not None and found.group(1) == verb, out
    return found.group(2), int(found.group(3).replace(",", ""))


def _rows(ssb_dir: Path, start: str, end: str) -> int:
    """The oracle: LINEORDER rows in [start, end), counted by pyarrow on the raw files."""
    day = pc.field("LO_ORDERDATE")
    lo, hi = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    return int(ds.dataset(ssb_dir / "LINEORDER").count_rows(filter=(day >= lo) & (day < hi)))


def test_build_merge_refresh_and_segments(home: list[str], ssb_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = ["-p", "ssb", "-m", "ssb"]
    assert run([*home, "build", "--wait", *model, "--end", "1992-01-02"]) != 0
    assert "has no segment yet: give --start" in capsys.readouterr().err

    assert run([*home, "build", "--wait", *model, "--start", "1992-01-01", "--end", "1992-01-02"]) == 0
    first, rows1 = _segment(capsys, "built")
    assert run([*home, "build", "--wait", *model, "--end", "1992-01-03"]) == 0  # starts where the last one ends
    second, rows2 = _segment(capsys, "built")
    assert (rows1, rows2) == (_rows(ssb_dir, "1992-01-01", "1992-01-02"), _rows(ssb_dir, "1992-01-02", "1992-01-03"))

    assert run([*home, "build", "--wait", *model, "--start", "1992-01-01", "--end", "1992-01-02"]) != 0
    assert "overlaps" in capsys.readouterr().err

    assert run([*home, "segments", *model]) == 0
    listing = capsys.readouterr().out
    assert (
        first in listing and second in listing and listing.count(" ONLINE ") == 2
    )  # the rows; the title shows the model's

    assert run([*home, "merge", "--wait", *model, first, second]) == 0
    merged, rows = _segment(capsys, "merged into")
    assert rows == _rows(ssb_dir, "1992-01-01", "1992-01-03")
    assert run([*home, "segments", *model]) == 0
    listing = capsys.readouterr().out
    assert merged in listing and first not in listing and "1992-01-01" in listing and "1992-01-03" in listing

    assert run([*home, "refresh", "--wait", *model, merged]) == 0
    refreshed, rows = _segment(capsys, "refreshed")
    assert refreshed != merged and rows == _rows(ssb_dir, "1992-01-01", "1992-01-03")
    assert run([*home, "merge", "--wait", *model, refreshed]) != 0  # one segment cannot be merged
    assert "segment" in capsys.readouterr().err
