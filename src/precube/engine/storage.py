"""Writing layout files and reading back what a write produced (paths: `precube.storage.paths`)."""

from __future__ import annotations

import math
import shutil
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from precube.storage.paths import local_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class WrittenFiles:
    rows: int
    bytes: int
    files: int


def write_arrow(path: str, table: pa.Table) -> None:
    """Write a small layout from the driver (local warehouses only): replaces whatever a killed earlier
    attempt left in the directory, then one Parquet file."""
    local = local_path(path)
    if local is None:
        raise ValueError(f"{path} is not on the local file system")
    if local.exists():
        shutil.rmtree(local)
    local.mkdir(parents=True)
    pq.write_table(table, local / f"part-00000-{uuid.uuid4()}.parquet")


def written(spark: SparkSession, path: str) -> WrittenFiles:
    """Rows, bytes and files of the Parquet data at `path`: footers only, no Spark job for local paths."""
    files = local_files(path)
    if files is not None:
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return WrittenFiles(rows, sum(f.stat().st_size for f in files), len(files))
    jvm_path = spark._jvm.org.apache.hadoop.fs.Path(path)  # type: ignore[union-attr]
    fs = jvm_path.getFileSystem(spark._jsc.hadoopConfiguration())
    statuses = [s for s in fs.listStatus(jvm_path) if s.getPath().getName().endswith(".parquet")]
    rows = spark.read.parquet(path).count() if statuses else 0
    return WrittenFiles(rows, sum(int(s.getLen()) for s in statuses), len(statuses))


def local_files(path: str) -> list[Path] | None:
    """The Parquet files of a local layout directory, None for a remote path."""
    local = local_path(path)
    return None if local is None else sorted(p for p in local.glob("*.parquet") if p.is_file())


def footer_ranges(files: Collection[Path], columns: Collection[str]) -> dict[str, tuple[Any, Any]]:
    """Min and max of each of some (top-level, primitive) columns, from the files' row-group statistics:
    no data is read. A column that has a row group without usable statistics (very long strings,
    INT96 timestamps, NaN) is left out; one with only nulls gets (None, None)."""
    found: dict[str, tuple[Any, Any]] = {name: (None, None) for name in columns}
    for f in files:
        meta = pq.read_metadata(f)
        index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for name in list(found):
                stats = group.column(index[name]).statistics
                if stats is not None and stats.has_null_count and stats.null_count == group.num_rows:
                    continue  # only nulls here: nothing to widen
                if stats is None or not stats.has_min_max or _nan(stats.min) or _nan(stats.max):
                    del found[name]
                    continue
                lo, hi = found[name]
                lo = stats.min if lo is None else min(lo, stats.min)
                found[name] = (lo, stats.max if hi is None else max(hi, stats.max))
    return found


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)
