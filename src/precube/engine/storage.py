"""Writing layout files and reading back what a write produced (paths: `precube.storage.paths`)."""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

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


def write_arrow(path: str, table: pa.Table) -> WrittenFiles:
    """Write a small layout from the driver (local warehouses only): replaces whatever a killed earlier
    attempt left in the directory, then one Parquet file; what was written (no footer read back)."""
    local = local_path(path)
    if local is None:
        raise ValueError(f"{path} is not on the local file system")
    if local.exists():
        shutil.rmtree(local)
    local.mkdir(parents=True)
    file = local / f"part-00000-{uuid.uuid4()}.parquet"
    pq.write_table(table, file)
    return WrittenFiles(table.num_rows, file.stat().st_size, 1)


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
