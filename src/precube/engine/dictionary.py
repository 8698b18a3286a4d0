"""Global dictionaries: append-only `value → id` maps for precise COUNT DISTINCT (Kylin's NGlobalDictionaryV2).

Layout under `{root}/{project}/{model_uuid}/dict/{column}/`:

- `v{n}/` holds version n as Parquet (`value` string, `id` bigint ≥ 1) plus `_dictionary.json` (size, max_id).
  Each version holds **all** values (old and new), so encoding reads one directory and a segment can use any
  later version: ids never change once given, which keeps bitmaps of different segments union-compatible.
- Commit protocol: a build writes into a temporary sibling `_tmp-v{n}-{uuid}/` and renames it to `v{n}`
  (atomic on HDFS and local disks; on object stores, where rename copies, run builds under the build lock).
  `latest_version` counts only `v{n}` directories holding `_dictionary.json`, so a crashed build is ignored.
- If another build commits `v{n}` first, we lose the rename and start again from the new latest version.
- `_sources/{token}` marks a source state (a lookup column at one fingerprint of its files) whose every value
  a committed version holds, so builds skip the dictionary while that source is unchanged.

All file system access goes through Hadoop's FileSystem, so any URI Spark can write works.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from precube.engine.errors import BuildError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

META_FILE = "_dictionary.json"
VALUES_PER_BUCKET = 1_000_000  # Kylin's default bucket size is of this order; a bucket is numbered by one task
ROWS_PER_FILE = 5_000_000
# ~1M short strings + longs are a few tens of MB once broadcast: well under executor memory, far above
# Spark's 10 MB auto-broadcast size; larger dictionaries go through a sort-merge join.
BROADCAST_MAX_ROWS = 1_000_000
MAX_ATTEMPTS = 5
_VERSION_DIR = re.compile(r"v(\d+)")
TMP_DIR = re.compile(r"_tmp-v(\d+)-[0-9a-f]+")
_SCHEMA = "value string, id bigint"


@dataclass(frozen=True)
class DictionaryVersion:
    """One committed version of a dictionary: `size` values with ids 1..max_id (max_id == size, no gaps)."""

    path: str
    version: int
    size: int
    max_id: int

    @property
    def location(self) -> str:
        return version_location(self.path, self.version)


def dictionary_path(warehouse_root: str, project: str, model_uuid: str, column_id: int) -> str:
    return f"{warehouse_root.rstrip('/')}/{project}/{model_uuid}/dict/{column_id}"


def version_location(path: str, version: int) -> str:
    return f"{path.rstrip('/')}/v{version}"


class _Fs:
    """The few Hadoop FileSystem calls we need, bound to the dictionary's file system."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        jvm: Any = spark.sparkContext._jvm
        assert jvm is not None, "a classic (non-Connect) Spark session is required"
        self._jvm = jvm
        self.fs: Any = self.path(path).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def path(self, p: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(p)

    def exists(self, p: str) -> bool:
        return bool(self.fs.exists(self.path(p)))

    def children(self, p: str) -> list[str]:
        if not self.exists(p):
            return []
        return [str(s.getPath().getName()) for s in self.fs.listStatus(self.path(p)) if s.isDirectory()]

    def delete(self, p: str) -> None:
        self.fs.delete(self.path(p), True)

    def rename(self, src: str, dst: str) -> bool:
        from py4j.protocol import Py4JJavaError

        try:
            return bool(self.fs.rename(self.path(src), self.path(dst)))
        except Py4JJavaError:  # e.g. FileAlreadyExistsException on stores that refuse to rename onto a directory
            return False

    def write_text(self, p: str, text: str) -> None:
        out = self.fs.create(self.path(p), True)
        try:
            out.write(bytearray(text.encode()))
        finally:
            out.close()

    def read_text(self, p: str) -> str:
        stream = self.fs.open(self.path(p))
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()


def _versions(fs: _Fs, path: str) -> tuple[list[int], list[int]]:
    """(committed, all) version numbers present under `path`, ascending."""
    found = sorted(int(m.group(1)) for name in fs.children(path) if (m := _VERSION_DIR.fullmatch(name)))
    committed = [n for n in found if fs.exists(f"{version_location(path, n)}/{META_FILE}")]
    return committed, found


def latest_version(spark: SparkSession, path: str) -> int | None:
    """Highest committed version under `path`, or None when the dictionary has none."""
    committed, _ = _versions(_Fs(spark, path), path)
    return committed[-1] if committed else None


def load_version(spark: SparkSession, path: str, version: int) -> DictionaryVersion:
    """Reopen a committed version (e.g. the one a segment recorded)."""
    fs = _Fs(spark, path)
    meta = f"{version_location(path, version)}/{META_FILE}"
    if not fs.exists(meta):
        raise BuildError(f"dictionary version {version} at {path} does not exist (never committed, or pruned)")
    data = json.loads(fs.read_text(meta))
    return DictionaryVersion(path=path, version=version, size=int(data["size"]), max_id=int(data["max_id"]))


def _read(spark: SparkSession, version: DictionaryVersion | None) -> DataFrame:
    if version is None:
        return spark.createDataFrame([], _SCHEMA)
    return spark.read.schema(_SCHEMA).parquet(version.location)


def _commit(fs: _Fs, tmp: str, final: str) -> bool:
    """Rename `tmp` to `final`; False (and nothing left behind) when another build got `final` first."""
    renamed = not fs.exists(final) and fs.rename(tmp, final)
    # HDFS-style rename onto an existing directory moves `tmp` inside it (the local FS copies it there):
    # that means a concurrent build won the race. The nested `_tmp-…` is invisible to Parquet readers.
    nested = f"{final}/{tmp.rsplit('/', 1)[-1]}"
    if renamed and not fs.exists(nested):
        return True
    fs.delete(nested)
    fs.delete(tmp)
    return False


def _prune(fs: _Fs, path: str, keep_versions: int) -> None:
    """Drop committed versions beyond the newest `keep_versions`, and leftovers older than those kept."""
    committed, found = _versions(fs, path)
    kept = committed[-keep_versions:]
    for n in found:
        if n < kept[0]:
            fs.delete(version_location(path, n))
    for name in fs.children(path):  # temp dirs of builds that can no longer commit
        if (m := TMP_DIR.fullmatch(name)) and int(m.group(1)) < kept[0]:
            fs.delete(f"{path.rstrip('/')}/{name}")


def build_dictionary(
    spark: SparkSession,
    values: DataFrame,
    path: str,
    buckets: int | None = None,
    keep_versions: int = 3,
) -> DictionaryVersion:
    """Add the distinct non-null `values.value` (cast to string) missing from the latest version.

    New values get ids max_id+1.. contiguously, numbered per hash bucket in Spark (Kylin's bucketed
    dictionary); only per-bucket counts reach the driver. Returns the latest version when nothing is new.
    """
    if keep_versions < 1:
        raise ValueError("keep_versions must be at least 1")
    fs = _Fs(spark, path)
    for _ in range(MAX_ATTEMPTS):
        committed, found = _versions(fs, path)
        base = load_version(spark, path, committed[-1]) if committed else None
        # Numbers of incomplete directories are skipped rather than reused: their writer may still be alive.
        target = max(found, default=0) + 1
        result = _build_version(spark, fs, values, path, base, target, buckets)
        if result is None:  # lost the race: ids must be given relative to the winner's version
            continue
        if result.version == target:
            _prune(fs, path, keep_versions)
        return result
    raise BuildError(f"dictionary {path}: other builds kept committing first ({MAX_ATTEMPTS} attempts)")


def _build_version(
    spark: SparkSession,
    fs: _Fs,
    values: DataFrame,
    path: str,
    base: DictionaryVersion | None,
    target: int,
    buckets: int | None,
) -> DictionaryVersion | None:
    """Write version `target` = base plus new values; None if another build committed `target` first."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    old = _read(spark, base)
    value = F.col("value").cast("string").alias("value")
    new = values.select(value).where(F.col("value").isNotNull()).distinct().join(old, "value", "left_anti")
    new = new.persist()
    numbered = None
    try:
        n_buckets = buckets
        if n_buckets is None:  # sized from the count, which costs a pass; explicit buckets skip it
            n_new = new.count()
            if n_new == 0 and base is not None:
                return base
            n_buckets = max(1, math.ceil(n_new / VALUES_PER_BUCKET))
        # Hash buckets are deterministic, and ordering by value inside each makes the ids reproducible.
        bucketed = new.repartition(n_buckets, "value").withColumn("_bucket", F.spark_partition_id())
        numbered = bucketed.withColumn(
            "_rel", F.row_number().over(Window.partitionBy("_bucket").orderBy("value"))
        ).persist()
        counts = {r[0]: r[1] for r in numbered.groupBy("_bucket").agg(F.max("_rel")).collect()}  # ≤ n_buckets rows
        n_new = sum(counts.values())
        if n_new == 0 and base is not None:
            return base
        max_id = base.max_id if base else 0
        offsets: dict[int, int] = {}
        for bucket in sorted(counts):
            offsets[bucket], max_id = max_id, max_id + counts[bucket]
        offset_map = F.create_map(*[F.lit(x) for b, o in offsets.items() for x in (b, o)]) if offsets else None
        ids = (F.element_at(offset_map, F.col("_bucket")) + F.col("_rel")) if offset_map is not None else F.lit(0)
        added = numbered.select("value", ids.cast("bigint").alias("id"))
        size = (base.size if base else 0) + n_new
        tmp = f"{path.rstrip('/')}/_tmp-v{target}-{uuid.uuid4().hex}"
        files = max(1, math.ceil(size / ROWS_PER_FILE))
        # Sorted by value within files: Parquet min/max statistics then prune lookups of given values.
        old.unionByName(added).repartition(files, "value").sortWithinPartitions("value").write.parquet(tmp)
        fs.write_text(f"{tmp}/{META_FILE}", json.dumps({"size": size, "max_id": max_id}))
        if not _commit(fs, tmp, version_location(path, target)):
            return None
        return DictionaryVersion(path=path, version=target, size=size, max_id=max_id)
    finally:
        new.unpersist()
        if numbered is not None:
            numbered.unpersist()


SOURCES_DIR = "_sources"  # markers of the sources whose every value the dictionary holds


def holds_source(spark: SparkSession, path: str, token: str) -> bool:
    """Whether every value of the source state `token` names was added to the dictionary at `path` before (a
    committed version holds every earlier value, so the latest holds them too)."""
    return _Fs(spark, path).exists(f"{path.rstrip('/')}/{SOURCES_DIR}/{token}")


def mark_source(spark: SparkSession, path: str, token: str, version: DictionaryVersion) -> None:
    """Record that `version` (committed) holds every value of the source state `token` names."""
    _Fs(spark, path).write_text(f"{path.rstrip('/')}/{SOURCES_DIR}/{token}", json.dumps({"version": version.version}))


def encode(
    spark: SparkSession,
    df: DataFrame,
    column: str,
    version: DictionaryVersion,
    out_column: str,
    broadcast_max_rows: int = BROADCAST_MAX_ROWS,
    check: bool = True,
) -> DataFrame:
    """`df` plus `out_column` (bigint) = the id of `df[column]` cast to string; NULL stays NULL, all rows kept.

    A non-null value without an id (the dictionary was built from other data) fails the job that reads
    the returned frame; with `check`, a BuildError is raised at once instead (one extra pass over the
    column, which a build skips: it has just appended the same frame's values).
    """
    from pyspark.sql import functions as F  # noqa: N812 (Spark's convention)

    key, dict_value, dict_id = "__precube_dict_key", "__precube_dict_value", "__precube_dict_id"
    keyed = df.withColumn(key, F.col(f"`{column}`").cast("string"))
    dictionary = _read(spark, version).select(F.col("value").alias(dict_value), F.col("id").alias(dict_id))
    if version.size <= broadcast_max_rows:
        dictionary = F.broadcast(dictionary)
    on = F.col(key) == F.col(dict_value)
    if check:
        missing = keyed.select(key).where(F.col(key).isNotNull()).distinct().join(dictionary, on, "left_anti")
        sample = [row[0] for row in missing.limit(5).collect()]
        if sample:
            raise BuildError(
                f"column {column!r} has values missing from dictionary {version.location} (e.g. {sample}): "
                "the dictionary was built from other data"
            )
    unknown = F.col(key).isNotNull() & F.col(dict_id).isNull()
    guarded = F.when(unknown, F.raise_error(F.lit(f"value missing from dictionary {version.location}")))
    joined = keyed.join(dictionary, on, "left")
    return joined.withColumn(out_column, guarded.otherwise(F.col(dict_id))).drop(key, dict_value, dict_id)
