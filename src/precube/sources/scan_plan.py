"""Which files and row groups of a Parquet source can hold a range of one column's values, from the files'
own metadata alone (no engine, no data read): the directory names of a Hive-style partitioned source
(`COLUMN=value/`) and the min/max statistics of each row group in the Parquet footers.

A build reads only the files this keeps; Spark's Parquet reader then skips the row groups whose statistics
exclude the range by itself (filter pushdown), and the row-level filter stays exact. What a source needs to be
read in part: partitioned by the column, or sorted (or clustered) by it, so that a row group's statistics span a
narrow range. Anything this cannot judge — a column it does not find, statistics missing or of another type
than the range's bounds — is kept: the plan may read too much, never too little.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq

from precube.storage.footers import footer_ranges

# A value of the range's column as the range and the file metadata give it (int, str, date, datetime).
Value = Any


@dataclass(frozen=True)
class ColumnRange:
    """`low <= column < high` (high None: no upper bound), values typed as the column holds them; `position`
    maps a value onto a line (e.g. epoch ms) to estimate what share of a row group falls in the range."""

    column: str
    low: Value
    high: Value | None
    position: Callable[[Value], float] | None = None

    def may_hold(self, lo: Value, hi: Value) -> bool:
        """Whether values between `lo` and `hi` (inclusive) may fall in the range; True when the types differ
        from the bounds' (nothing can be told)."""
        lo, hi = _comparable(lo, self.low), _comparable(hi, self.low)
        if lo is None or hi is None:
            return True
        return hi >= self.low and (self.high is None or lo < self.high)

    def share(self, lo: Value, hi: Value) -> float:
        """The estimated share of values between `lo` and `hi` that fall in the range (1 when unknown)."""
        if self.position is None:
            return 1.0
        try:
            a, b, start = self.position(lo), self.position(hi), self.position(self.low)
            end = b if self.high is None else self.position(self.high)
        except (ValueError, TypeError, ArithmeticError):  # a value the position cannot place: assume all
            return 1.0
        if b <= a:
            return 1.0
        return max(0.0, min(1.0, (min(b, end) - max(a, start)) / (b - a)))


def _comparable(value: Value, like: Value) -> Value | None:
    """`value` in the type of `like`, or None when they are not of one kind (a date is no datetime)."""
    if isinstance(like, dt.datetime):
        if not isinstance(value, dt.datetime):
            return None
        return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo is not None else value
    if isinstance(like, dt.date):
        return value if isinstance(value, dt.date) and not isinstance(value, dt.datetime) else None
    if isinstance(like, bool) or isinstance(value, bool):
        return None
    if isinstance(like, int):
        return value if isinstance(value, int) else None
    if isinstance(like, str):
        return value if isinstance(value, str) else None
    return None


@dataclass(frozen=True)
class ScanPlan:
    """The files of a source to read for a range, and what the rest held."""

    table: str  # DB.TABLE
    column: str
    files: tuple[str, ...]  # to read
    files_total: int
    row_groups_read: int  # row groups whose statistics may hold the range (Spark skips the others)
    row_groups_total: int
    bytes_read: int  # of the row groups read (compressed, as stored)
    bytes_total: int
    rows_read: int  # rows in the row groups read: an upper bound of the range's rows
    rows_total: int
    estimated_rows: int  # rows the range is expected to hold
    by_directory: bool  # the source's partition directories were pruned

    def describe(self) -> str:
        """One line: what was read and what skipped."""
        if not self.column:
            return f"{self.table}: read all {self.files_total} files, {_size(self.bytes_total)} (no range)"
        return (
            f"{self.table}: read {self.files_read} of {self.files_total} files, {self.row_groups_read} of "
            f"{self.row_groups_total} row groups, {_size(self.bytes_read)} of {_size(self.bytes_total)} "
            f"({self.skipped_share:.1%} skipped by {self.column}"
            f"{' partition directories and' if self.by_directory else ''} row-group statistics)"
        )

    @property
    def files_read(self) -> int:
        return len(self.files)

    @property
    def skipped_share(self) -> float:
        return 1 - self.bytes_read / self.bytes_total if self.bytes_total else 0.0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError


@dataclass(frozen=True)
class DataFile:
    """One data file of a source and the partition values its directories give it (column → raw text)."""

    path: str
    partition: dict[str, str]


def hive_values(root: Path, path: Path) -> dict[str, str]:
    """Partition values of a file from its `KEY=value` directories under `root` (keys upper case)."""
    values = {}
    for part in path.relative_to(root).parts[:-1]:
        key, sep, value = part.partition("=")
        if sep and key:
            values[key.upper()] = unquote(value)  # as Spark and pyarrow escape a value's special characters
    return values


@dataclass
class _Tally:
    groups: int = 0
    bytes: int = 0
    rows: int = 0
    estimate: float = 0.0

    def add(self, groups: int, size: int, rows: int, share: float = 1.0) -> None:
        self.groups, self.bytes, self.rows = self.groups + groups, self.bytes + size, self.rows + rows
        self.estimate += share * rows


def plan_scan(
    table: str, files: Sequence[DataFile], rng: ColumnRange | None, parse: Callable[[str], Value] | None
) -> ScanPlan | None:
    """The plan for reading the Parquet `files` of `table` for `rng` (None: every row, e.g. a full build);
    `parse` reads a partition directory's value as the column's type. None when the column is in neither the
    directories nor the files."""
    column = rng.column.upper() if rng is not None else ""
    keep: list[str] = []
    read, total = _Tally(), _Tally()
    found = by_directory = False
    for f in files:
        meta = pq.read_metadata(f.path)
        groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
        size = sum(g.total_byte_size for g in groups)
        total.add(len(groups), size, meta.num_rows)
        index = next((i for i in range(meta.num_columns) if meta.schema.column(i).path.upper() == column), None)
        if rng is None:
            found = True
            keep.append(f.path)
            read.add(len(groups), size, meta.num_rows)
        elif column in f.partition:
            found = by_directory = True
            if _partition_holds(f.partition[column], rng, parse):
                keep.append(f.path)
                read.add(len(groups), size, meta.num_rows)
        elif index is None:  # the column is not in this file: nothing to tell
            keep.append(f.path)
            read.add(len(groups), size, meta.num_rows)
        else:
            found = True
            shares = [(g, _group_share(g.column(index).statistics, g.num_rows, rng)) for g in groups]
            kept = [(g, share) for g, share in shares if share is not None]
            for g, share in kept:
                read.add(1, g.total_byte_size, g.num_rows, share)
            if kept:
                keep.append(f.path)
    if not found:
        return None
    return ScanPlan(
        table=table,
        column=column,
        files=tuple(keep),
        files_total=len(files),
        row_groups_read=read.groups,
        row_groups_total=total.groups,
        bytes_read=read.bytes,
        bytes_total=total.bytes,
        rows_read=read.rows,
        rows_total=total.rows,
        estimated_rows=round(read.estimate),
        by_directory=by_directory,
    )


# Hive's name for a NULL partition value: no NULL is in any range.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def _partition_holds(text: str, rng: ColumnRange, parse: Callable[[str], Value] | None) -> bool:
    if text == NULL_PARTITION:
        return False
    if parse is None:
        return True
    try:
        value = parse(text)
    except (ValueError, TypeError):  # a directory name the column type cannot read: keep it
        return True
    return rng.may_hold(value, value)


def _group_share(stats: Any, num_rows: int, rng: ColumnRange) -> float | None:
    """The estimated share of a row group's rows in the range, None when its statistics exclude the range."""
    if stats is not None and stats.has_null_count and stats.null_count == num_rows and num_rows > 0:
        return None  # only NULLs, which no range holds
    if stats is None or not stats.has_min_max:
        return 1.0
    try:
        lo, hi = stats.min, stats.max
    except (ValueError, TypeError, OverflowError):  # a logical type pyarrow cannot convert: nothing to tell
        return 1.0
    if not rng.may_hold(lo, hi):
        return None
    if _comparable(lo, rng.low) is None:
        return 1.0
    return rng.share(_comparable(lo, rng.low), _comparable(hi, rng.low))


def integer_ranges(paths: Sequence[str], columns: Collection[str]) -> dict[str, tuple[int, int]]:
    """The smallest and largest value of each integer column of `columns` (upper case) over the Parquet files
    `paths`, from their row-group statistics; a column without integer statistics everywhere is left out."""
    found = footer_ranges(paths, [c.upper() for c in columns])
    return {c: (lo, hi) for c, (lo, hi) in found.items() if _is_int(lo) and _is_int(hi)}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
