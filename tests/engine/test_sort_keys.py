"""Packed sort keys (`engine.sort_keys`) and order-keeping decoding (`engine.code_tables`) on real Spark: rows
sorted on a packed key are in the order of the columns themselves (NULLs first, negative values, a column
after the key), the columns unpack exactly, grouping on the key groups as the columns do, and decoding a
sorted frame keeps its order."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import pytest

from precube.engine.code_tables import Codes, CodeTable, code_table
from precube.engine.sort_keys import KEY, KEY_BITS, IntRange, packing

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

RANGES = {"a": IntRange(-3, 5, "int"), "b": IntRange(1, 4, "int"), "c": IntRange(10**12, 10**12 + 100, "bigint")}


def _rows(n: int) -> list[tuple[Any, ...]]:
    rng = random.Random(7)
    pick = lambda values: rng.choice([None, *values])  # noqa: E731
    return [
        (pick(range(-3, 6)), pick(range(1, 5)), pick(range(10**12, 10**12 + 101)), pick("xyz"), rng.randint(0, 9))
        for _ in range(n)
    ]


def _null_first(row: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is not None, v) for v in row)


def test_a_packed_key_sorts_and_unpacks_like_its_columns(spark: SparkSession) -> None:
    rows = _rows(3_000)
    df = spark.createDataFrame(rows, "a int, b int, c bigint, d string, m int").coalesce(1)
    packed = packing(["a", "b", "c", "d"], RANGES)
    assert packed is not None and [f.column for f in packed.fields] == ["a", "b", "c"] and packed.rest == ("d",)
    out = df.withColumn(KEY, packed.key()).sortWithinPartitions(*packed.order())
    out = out.select(*packed.unpacked(), *packed.rest, "m")
    assert [f.dataType.simpleString() for f in out.schema.fields[:3]] == ["int", "int", "bigint"]
    got = [tuple(r) for r in out.collect()]
    assert sorted(got, key=_null_first) == sorted(rows, key=_null_first)  # the rows unpack exactly
    keys = [_null_first(r[:4]) for r in got]
    assert keys == sorted(keys)  # in the columns' order, NULLs first


def test_grouping_on_a_complete_key_groups_as_the_columns_do(spark: SparkSession) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    rows = _rows(3_000)
    df = spark.createDataFrame(rows, "a int, b int, c bigint, d string, m int")
    packed = packing(["c", "a", "b"], RANGES)
    assert packed is not None and packed.complete
    grouped = df.groupBy(packed.key().alias(KEY)).agg(F.sum("m").alias("s"), F.count(F.lit(1)).alias("n"))
    got = grouped.select(*packed.unpacked(), "s", "n").collect()
    expected = df.groupBy("c", "a", "b").agg(F.sum("m").alias("s"), F.count(F.lit(1)).alias("n")).collect()
    assert sorted(map(_null_first, map(tuple, got))) == sorted(map(_null_first, map(tuple, expected)))


def test_what_packs() -> None:
    assert packing(["a"], RANGES) is None  # one column sorts as fast on its own
    assert packing(["d", "a", "b"], RANGES) is None  # the first column has no range
    wide = {f"w{i}": IntRange(0, 2**20, "int") for i in range(4)}  # 21 bits each
    found = packing(["w0", "w1", "w2", "w3"], wide)
    assert found is not None and len(found.fields) == 2 and found.rest == ("w2", "w3")
    assert sum(f.range.width for f in found.fields) <= KEY_BITS
    assert RANGES["a"].width == 4  # NULL and nine values: 0 … 9


def test_decoding_keeps_the_order_of_the_rows(spark: SparkSession) -> None:
    lookup = spark.createDataFrame([("b",), ("a",), (None,), ("c",), ("a",)], "v string")
    table = code_table(spark, lookup, "v")
    assert isinstance(table, CodeTable) and table.values == [None, "a", "b", "c"]
    codes = Codes()
    codes.add("v", table)
    assert codes.ranges["v"] == IntRange(1, 4, "int")
    coded = spark.createDataFrame([(c, i) for i, c in enumerate([4, 2, None, 3, 1, 2] * 50)], "v int, i int")
    decoded = codes.decode(coded.coalesce(1).sortWithinPartitions("v", "i")).collect()
    values = [r["v"] for r in decoded]
    expected = [None] * 100 + ["a"] * 100 + ["b"] * 50 + ["c"] * 50  # code NULL (no lookup row), then 1 = NULL
    assert values == expected and [r["i"] for r in decoded[:50]] == sorted(r["i"] for r in decoded[:50])


def test_a_column_with_too_many_values_is_not_coded(spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    from precube.engine import code_tables

    monkeypatch.setattr(code_tables, "CODE_MAX_VALUES", 3)
    lookup = spark.createDataFrame([("a",), ("b",), ("c",), ("d",)], "v string")
    assert code_table(spark, lookup, "v") is None
    assert code_table(spark, lookup.where("v < 'd'"), "v") is not None
