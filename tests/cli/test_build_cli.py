"""`precube build|refresh|merge|segments` through the real command line, on real Spark."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from precube.cli.app import run
from tests.cli.home import ssb_home
from tests.modeling.conftest import ssb_spec_data

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SEGMENT = re.compile(r"(built|merged into|refreshed) segment \S+ \(([0-9a-f-]{36})\): ([\d,]+) source rows")
SCAN = re.compile(r"SSB\.LINEORDER: read (\d+) of (\d+) files, (\d+) of (\d+) row groups, .*? skipped by LO_ORDERDATE")


@pytest.fixture
def home(spark: SparkSession, tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    del spark  # the CLI finds the shared session
    spec = {**ssb_spec_data(), "aggregation_groups": [{"includes": ["D_YEAR", "C_REGION"]}]}
    args = ssb_home(tmp_path / "home", ssb_dir, spec)
    capsys.readouterr()
    return args


def _segment(capsys: pytest.CaptureFixture[str], verb: str, scan: list[int] | None = None) -> tuple[str, int]:
    """The segment id and source rows the command printed; `scan` gets what it told of the fact table's
    scan: files read, files, row groups read, row groups."""
    out = capsys.readouterr().out
    found = SEGMENT.search(out)
    assert found is not None and found.group(1) == verb, out
    if scan is not None:
        told = SCAN.search(" ".join(out.split()))  # as wrapped to the terminal's width
        assert told is not None, out
        scan.extend(int(n) for n in told.groups())
        assert "steps: " in out, out
    return found.group(2), int(found.group(3).replace(",", ""))


def _row_groups(ssb_dir: Path, start: str, end: str) -> tuple[int, int, int, int]:
    """The oracle of a scan of LINEORDER for [start, end): files and row groups whose order-date statistics
    may hold the range (pyarrow, from the footers), and all of them."""
    lo, hi = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
    files = sorted((ssb_dir / "LINEORDER").glob("*.parquet"))
    kept_files = kept_groups = groups = 0
    for path in files:
        meta = pq.read_metadata(path)
        column = meta.schema.names.index("LO_ORDERDATE")
        stats = [meta.row_group(g).column(column).statistics for g in range(meta.num_row_groups)]
        kept = sum(1 for s in stats if s.min < hi and s.max >= lo)
        kept_files, kept_groups, groups = kept_files + (kept > 0), kept_groups + kept, groups + len(stats)
    return kept_files, len(files), kept_groups, groups


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
    scan: list[int] = []
    first, rows1 = _segment(capsys, "built", scan)
    assert tuple(scan) == _row_groups(ssb_dir, "1992-01-01", "1992-01-02")  # told what was read of what
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
