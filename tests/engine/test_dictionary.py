"""Global dictionaries: append-only ids, bucketed numbering, commit protocol, pruning and encoding."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.engine import dictionary as d
from precube.engine.dictionary import (
    DictionaryVersion,
    build_dictionary,
    dictionary_path,
    encode,
    latest_version,
    load_version,
)
from precube.engine.errors import BuildError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.spark


def _values(spark: SparkSession, items: list[Any], datatype: str = "string") -> DataFrame:
    return spark.createDataFrame([(v,) for v in items], f"value {datatype}")


def _ids(version: DictionaryVersion) -> dict[str, int]:
    """The version as written, read with pyarrow (which, like Spark, skips `_`-prefixed entries)."""
    table = pq.read_table(version.location)
    assert table.schema.names == ["value", "id"]
    assert (table.schema.field("value").type, table.schema.field("id").type) == (pa.string(), pa.int64())
    return dict(zip(table.column("value").to_pylist(), table.column("id").to_pylist(), strict=True))


def _path(root: Path | str, column_id: int = 12) -> str:
    return dictionary_path(str(root), "p", "model-uuid", column_id)


def _assert_contiguous(ids: dict[str, int]) -> None:
    assert sorted(ids.values()) == list(range(1, len(ids) + 1))


def test_dictionary_path_joins_with_slashes() -> None:
    assert dictionary_path("s3a://bucket/wh/", "p", "m", 7) == "s3a://bucket/wh/p/m/dict/7"
    assert dictionary_path("/data/wh", "p", "m", 7) == "/data/wh/p/m/dict/7"


def test_append_keeps_existing_ids(spark: SparkSession, tmp_path: Path) -> None:
    path = _path(tmp_path.as_uri())  # a URI root goes through Hadoop's FileSystem like s3a:// would
    assert latest_version(spark, path) is None
    v1 = build_dictionary(spark, _values(spark, ["a", "b", "c", None, "a"]), path)
    assert (v1.version, v1.size, v1.max_id) == (1, 3, 3)
    ids1 = _ids(v1)
    assert set(ids1) == {"a", "b", "c"}
    _assert_contiguous(ids1)

    v2 = build_dictionary(spark, _values(spark, ["c", "d", None, "e", "d"]), path)
    assert (v2.version, v2.size, v2.max_id) == (2, 5, 5)
    ids2 = _ids(v2)
    assert {k: ids2[k] for k in ids1} == ids1
    assert sorted([ids2["d"], ids2["e"]]) == [4, 5]
    _assert_contiguous(ids2)
    assert load_version(spark, path, 1) == v1
    assert load_version(spark, path, 2) == v2

    again = build_dictionary(spark, _values(spark, ["e", None, "a"]), path)  # nothing new: no version written
    assert again == v2
    assert latest_version(spark, path) == 2
    assert not (tmp_path / "p" / "model-uuid" / "dict" / "12" / "v3").exists()


def test_types_are_cast_to_string_consistently(spark: SparkSession, tmp_path: Path) -> None:
    path = _path(tmp_path)
    build_dictionary(spark, _values(spark, [1, 2, 3, None], "int"), path)
    build_dictionary(spark, _values(spark, ["3", "4"]), path)
    v3 = build_dictionary(spark, _values(spark, [dt.date(2024, 1, 2), None], "date"), path)
    ids = _ids(v3)
    assert set(ids) == {"1", "2", "3", "4", "2024-01-02"}
    _assert_contiguous(ids)
    assert ids["2024-01-02"] == 5

    df = spark.createDataFrame([(1,), (4,), (None,)], "`12` bigint")
    out = {r["12"]: r["12_dict"] for r in encode(spark, df, "12", v3, "12_dict").collect()}
    assert out == {1: ids["1"], 4: ids["4"], None: None}


def test_no_values_give_an_empty_first_version(spark: SparkSession, tmp_path: Path) -> None:
    empty = build_dictionary(spark, _values(spark, [None]), _path(tmp_path))
    assert (empty.version, empty.size, empty.max_id) == (1, 0, 0)  # so encode always has a version to read
    assert _ids(empty) == {}


def test_buckets_number_contiguously_and_deterministically(spark: SparkSession, tmp_path: Path) -> None:
    first = [f"k{i:03d}" for i in range(300)]
    a = build_dictionary(spark, _values(spark, first), _path(tmp_path, 1), buckets=4)
    b = build_dictionary(spark, _values(spark, list(reversed(first))), _path(tmp_path, 2), buckets=4)
    ids_a = _ids(a)
    assert ids_a == _ids(b)
    _assert_contiguous(ids_a)
    # Numbered per hash bucket, not in global value order: the bucketed path really ran.
    assert [ids_a[v] for v in first] != list(range(1, 301))

    more = build_dictionary(spark, _values(spark, first[:50] + [f"m{i}" for i in range(200)]), a.path, buckets=4)
    ids_more = _ids(more)
    assert (more.size, more.max_id) == (500, 500)
    assert {k: ids_more[k] for k in ids_a} == ids_a
    assert sorted(ids_more[f"m{i}"] for i in range(200)) == list(range(301, 501))


def test_encode_round_trip(spark: SparkSession, tmp_path: Path) -> None:
    v = build_dictionary(spark, _values(spark, ["a", "b", "c"]), _path(tmp_path))
    ids = _ids(v)
    rows = [(1, "a"), (2, "b"), (3, None), (4, "a"), (5, "c")]
    df = spark.createDataFrame(rows, "k int, `7` string")
    for threshold in (d.BROADCAST_MAX_ROWS, 0):  # broadcast and sort-merge joins
        out = encode(spark, df, "7", v, "7_dict", broadcast_max_rows=threshold)
        assert out.columns == ["k", "7", "7_dict"]
        assert out.schema["7_dict"].dataType.simpleString() == "bigint"
        got = sorted((r["k"], r["7"], r["7_dict"]) for r in out.collect())
        assert got == [(k, s, ids[s] if s is not None else None) for k, s in rows]

    unknown = spark.createDataFrame([(1, "a"), (2, "zz")], "k int, `7` string")
    with pytest.raises(BuildError, match="zz"):
        encode(spark, unknown, "7", v, "7_dict")
    unchecked = encode(spark, unknown, "7", v, "7_dict", check=False)  # no extra pass: the job fails instead
    with pytest.raises(Exception, match="value missing from dictionary"):
        unchecked.collect()


def test_old_versions_are_pruned(spark: SparkSession, tmp_path: Path) -> None:
    path = _path(tmp_path)
    for i in range(3):
        last = build_dictionary(spark, _values(spark, [f"v{i}"]), path, keep_versions=2)
    assert sorted(p.name for p in Path(path).iterdir()) == ["v2", "v3"]
    assert (last.version, last.size) == (3, 3)
    with pytest.raises(BuildError, match="pruned"):
        load_version(spark, path, 1)


def test_interrupted_writes_are_ignored(spark: SparkSession, tmp_path: Path) -> None:
    path = _path(tmp_path)
    v1 = build_dictionary(spark, _values(spark, ["a", "b"]), path)
    # A crash mid-write leaves a temp dir; a copy-based rename (object stores) may leave an unmarked v2.
    for leftover in ("_tmp-v2-0123abcd", "v2"):
        (Path(path) / leftover).mkdir()
        (Path(path) / leftover / "part-00000.parquet").write_bytes(b"not parquet")
    assert latest_version(spark, path) == 1
    v3 = build_dictionary(spark, _values(spark, ["b", "c"]), path)
    assert (v3.version, v3.size, v3.max_id) == (3, 3, 3)
    assert _ids(v3) == {**_ids(v1), "c": 3}
    assert latest_version(spark, path) == 3


def test_concurrent_commit_retries_from_the_winner(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _path(tmp_path)
    build_dictionary(spark, _values(spark, ["a"]), path)
    real_commit = d._commit
    raced: list[DictionaryVersion] = []

    def racing_commit(fs: Any, tmp: str, final: str) -> bool:
        if not raced:  # another build commits v2 while ours is being written
            monkeypatch.setattr(d, "_commit", real_commit)
            raced.append(build_dictionary(spark, _values(spark, ["x", "y"]), path))
        return real_commit(fs, tmp, final)

    monkeypatch.setattr(d, "_commit", racing_commit)
    ours = build_dictionary(spark, _values(spark, ["b", "x"]), path)
    assert raced[0].version == 2
    assert (ours.version, ours.size, ours.max_id) == (3, 4, 4)
    ids = _ids(ours)
    assert {k: ids[k] for k in ("a", "x", "y")} == _ids(raced[0])
    assert ids["b"] == 4
    assert not [p.name for p in Path(path).iterdir() if p.name.startswith("_tmp")]
    assert not [p.name for p in (Path(path) / "v2").iterdir() if p.name.startswith("_tmp")]
