"""Scan plans from Parquet metadata alone: which files and row groups can hold a range of the partition column,
for every way a partition column holds dates (yyyyMMdd integers and strings, formatted strings, DATE,
TIMESTAMP), Hive-style partition directories, and what cannot be judged (kept)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.metadata import TimeRange
from precube.metadata.dataflow import MAX_TIME
from precube.modeling.partition_format import range_bounds, to_epoch_ms
from precube.sources.scan_plan import NULL_PARTITION, ColumnRange, DataFile, hive_values, plan_scan
from precube.sources.source import FileSource, SourceType

DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(40)]


def _values(fmt: str, datatype: str) -> list[Any]:
    """The 40 days as a column of that format and type holds them."""
    if datatype == "date":
        return DAYS
    if datatype == "timestamp":
        return [dt.datetime(d.year, d.month, d.day, 12, tzinfo=dt.UTC) for d in DAYS]
    text = [d.strftime({"yyyyMMdd": "%Y%m%d", "yyyy-MM-dd": "%Y-%m-%d", "yyyy/MM/dd": "%Y/%m/%d"}[fmt]) for d in DAYS]
    return [int(t) for t in text] if datatype == "integer" else text


def _rng(fmt: str, datatype: str, start: str, end: str | None) -> ColumnRange:
    ms = TimeRange.of(to_epoch_ms(start, "yyyy-MM-dd"), to_epoch_ms(end, "yyyy-MM-dd") if end else MAX_TIME)
    bounds = range_bounds(ms, fmt, datatype)
    assert bounds is not None
    return ColumnRange("D", bounds[0], bounds[1], lambda v: float(to_epoch_ms(v, fmt)))


def _write(path: Path, values: list[Any], rows_per_group: int, name: str = "d") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({name: values, "x": list(range(len(values)))}), path, row_group_size=rows_per_group)


FORMATS = [
    ("yyyyMMdd", "integer"),
    ("yyyyMMdd", "varchar(8)"),
    ("yyyy-MM-dd", "varchar(10)"),
    ("yyyy/MM/dd", "string"),
    ("yyyy-MM-dd", "date"),
    ("yyyy-MM-dd", "timestamp"),
]


@pytest.mark.parametrize(("fmt", "datatype"), FORMATS)
def test_sorted_files_keep_only_the_row_groups_of_the_range(tmp_path: Path, fmt: str, datatype: str) -> None:
    values = _values(fmt, datatype)
    files = [DataFile(str(tmp_path / f"part-{n}.parquet"), {}) for n in range(2)]
    _write(Path(files[0].path), values[:20], 5)  # days 0-19: four row groups of five days
    _write(Path(files[1].path), values[20:], 5)  # days 20-39
    plan = plan_scan("T", files, _rng(fmt, datatype, "2024-01-08", "2024-01-12"), None)  # days 7..10
    assert plan is not None
    assert plan.files == (files[0].path,)  # the second file cannot hold the range: not read at all
    assert (plan.row_groups_read, plan.row_groups_total) == (2, 8)  # days 5-9 and 10-14
    assert (plan.rows_read, plan.rows_total) == (10, 40)
    assert 2 <= plan.estimated_rows <= 10
    assert plan.bytes_read < plan.bytes_total
    # an open end keeps everything from its start on; a range before the data keeps nothing
    later = plan_scan("T", files, _rng(fmt, datatype, "2024-02-05", None), None)
    assert later is not None and later.files == (files[1].path,) and later.row_groups_read == 1
    before = plan_scan("T", files, _rng(fmt, datatype, "2023-01-01", "2023-02-01"), None)
    assert before is not None and before.files == () and before.rows_read == 0


def test_unsorted_files_are_read_whole_but_the_estimate_is_the_range_share(tmp_path: Path) -> None:
    values = DAYS * 10  # every row group spans all 40 days
    f = DataFile(str(tmp_path / "p.parquet"), {})
    _write(Path(f.path), values, 40)
    plan = plan_scan("T", [f], _rng("yyyy-MM-dd", "date", "2024-01-08", "2024-01-09"), None)
    assert plan is not None and plan.row_groups_read == plan.row_groups_total == 10
    assert plan.estimated_rows == pytest.approx(400 / 39, abs=2)  # one day of 39 spans, each row group
    assert "0% skipped" in plan.describe()


def test_what_cannot_be_judged_is_kept(tmp_path: Path) -> None:
    rng = _rng("yyyy-MM-dd", "date", "2024-01-08", "2024-01-09")
    # statistics of another type than the bounds (a string column read as a DATE model column)
    text = DataFile(str(tmp_path / "text.parquet"), {})
    _write(Path(text.path), [d.isoformat() for d in DAYS], 10)
    plan = plan_scan("T", [text], rng, None)
    assert plan is not None and plan.row_groups_read == 4
    # no statistics written
    bare = tmp_path / "bare.parquet"
    pq.write_table(pa.table({"d": DAYS}), bare, write_statistics=False, row_group_size=10)
    plan = plan_scan("T", [DataFile(str(bare), {})], rng, None)
    assert plan is not None and plan.row_groups_read == 4
    # a column the files do not have: no plan (read everything)
    other = DataFile(str(tmp_path / "other.parquet"), {})
    pq.write_table(pa.table({"e": DAYS}), other.path)
    assert plan_scan("T", [other], rng, None) is None
    # only NULLs: no row of any range
    nulls = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"d": pa.array([None] * 10, pa.date32())}), nulls)
    plan = plan_scan("T", [DataFile(str(nulls), {})], rng, None)
    assert plan is not None and plan.files == ()


def test_no_range_reads_every_file(tmp_path: Path) -> None:
    f = DataFile(str(tmp_path / "p.parquet"), {})
    _write(Path(f.path), DAYS, 10)
    plan = plan_scan("T", [f], None, None)
    assert plan is not None and plan.files == (f.path,) and plan.estimated_rows == 40
    assert plan.describe() == f"T: read all 1 files, {plan.describe().split(', ')[1]}"


@pytest.mark.parametrize(
    ("like", "parse", "directories", "kept"),
    [
        ("2024-01-08", str, ["2024-01-07", "2024-01-08", "2024-01-09"], ["2024-01-08"]),
        (20240108, int, ["20240107", "20240108", "20240109"], ["20240108"]),
        (dt.date(2024, 1, 8), dt.date.fromisoformat, ["2024-01-07", "2024-01-08", NULL_PARTITION], ["2024-01-08"]),
    ],
)
def test_partition_directories_are_pruned(
    tmp_path: Path, like: Any, parse: Any, directories: list[str], kept: list[str]
) -> None:
    files = []
    for value in directories:
        path = tmp_path / f"d={value}" / "part.parquet"
        _write(path, [1, 2], 2, name="v")
        files.append(DataFile(str(path), hive_values(tmp_path, path)))
    high = {str: "2024-01-09", int: 20240109}.get(parse, dt.date(2024, 1, 9))
    plan = plan_scan("T", files, ColumnRange("D", like, high), parse)
    assert plan is not None and plan.by_directory
    assert [Path(f).parent.name for f in plan.files] == [f"d={v}" for v in kept]
    assert "partition directories" in plan.describe()


def test_hive_values_are_unescaped_and_upper_cased(tmp_path: Path) -> None:
    path = tmp_path / "ts=2024-01-01 00%3A00%3A00" / "region=EU" / "f.parquet"
    assert hive_values(tmp_path, path) == {"TS": "2024-01-01 00:00:00", "REGION": "EU"}


def _no_spark() -> Any:
    raise AssertionError("file schemas are read without Spark")


def test_file_source_sees_and_plans_hive_partitions(tmp_path: Path) -> None:
    for day in ("2024-01-07", "2024-01-08"):
        _write(tmp_path / "t" / f"d={day}" / "part.parquet", [1, 2, 3], 3, name="v")
    source = FileSource(SourceType.PARQUET, str(tmp_path / "t"), {})
    assert source.schema(_no_spark) == [("V", "bigint"), ("X", "bigint"), ("D", "varchar(4096)")]
    plan = source.plan(ColumnRange("D", "2024-01-08", "2024-01-09"), str)
    assert plan is not None and [Path(f).parent.name for f in plan.files] == ["d=2024-01-08"]


def test_integer_ranges_come_from_row_group_statistics(tmp_path: Path) -> None:
    """Each integer column's min and max over the files' row groups; a column some row group has no statistics
    for, or that is not an integer, is left out; row groups holding only NULLs do not count."""
    from precube.sources.scan_plan import integer_ranges

    one = pa.table({"K": [5, 9, -2, 7], "N": pa.array([None, None, 3, 4], pa.int64()), "S": ["a", "b", "c", "d"]})
    pq.write_table(one, tmp_path / "one.parquet", row_group_size=2)
    two = pa.table({"K": [100, 1], "N": pa.array([1, 2], pa.int64()), "S": ["e", "f"], "D": DAYS[:2]})
    pq.write_table(two, tmp_path / "two.parquet")
    paths = [str(tmp_path / "one.parquet"), str(tmp_path / "two.parquet")]
    assert integer_ranges(paths, ["K", "n", "S", "D", "MISSING"]) == {"K": (-2, 100), "N": (1, 4)}
    pq.write_table(two, tmp_path / "bare.parquet", write_statistics=["S"])  # no statistics for K or N
    assert integer_ranges([*paths, str(tmp_path / "bare.parquet")], ["K", "N"]) == {}
