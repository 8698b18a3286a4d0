"""Where built data lives (DESIGN §4), and reading back what a write produced.

    {root}/{project}/{model_uuid}/{segment_id}/{layout_id}/part-*.parquet

A segment directory is new for every build, refresh and merge, so files are never rewritten in place;
data becomes visible only when the metadata that points at it commits.
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def segment_path(root: str, project: str, model_uuid: str, segment_id: str) -> str:
    return f"{root.rstrip('/')}/{project}/{model_uuid}/{segment_id}"


def layout_path(root: str, project: str, model_uuid: str, segment_id: str, layout_id: int) -> str:
    return f"{segment_path(root, project, model_uuid, segment_id)}/{layout_id}"


def _local(path: str) -> Path | None:
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else path)
    return None


@dataclass(frozen=True)
class WrittenFiles:
    rows: int
    bytes: int
    files: int


def is_local(path: str) -> bool:
    return _local(path) is not None


def write_arrow(path: str, table: pa.Table) -> None:
    """Write a small layout from the driver (local warehouses only): replaces whatever a killed earlier
    attempt left in the directory, then one Parquet file."""
    local = _local(path)
    if local is None:
        raise ValueError(f"{path} is not on the local file system")
    if local.exists():
        shutil.rmtree(local)
    local.mkdir(parents=True)
    pq.write_table(table, local / f"part-00000-{uuid.uuid4()}.parquet")


def written(spark: SparkSession, path: str) -> WrittenFiles:
    """Rows, bytes and files of the Parquet data at `path`: footers only, no Spark job for local paths."""
    local = _local(path)
    if local is not None:
        files = sorted(p for p in local.glob("*.parquet") if p.is_file())
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
        return WrittenFiles(rows, sum(f.stat().st_size for f in files), len(files))
    jvm_path = spark._jvm.org.apache.hadoop.fs.Path(path)  # type: ignore[union-attr]
    fs = jvm_path.getFileSystem(spark._jsc.hadoopConfiguration())
    statuses = [s for s in fs.listStatus(jvm_path) if s.getPath().getName().endswith(".parquet")]
    rows = spark.read.parquet(path).count() if statuses else 0
    return WrittenFiles(rows, sum(int(s.getLen()) for s in statuses), len(statuses))
