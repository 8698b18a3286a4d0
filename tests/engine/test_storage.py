"""Reading a layout's Parquet footers: each column's min/max as Spark computes them, without reading data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from precube.engine.storage import local_files
from precube.storage.footers import footer_ranges

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

COLUMNS = """
    id AS i, CAST(id AS smallint) AS s, CAST(id AS tinyint) AS t, id * 1.5D AS d, CAST(id AS float) AS f,
    CAST(id AS decimal(10,2)) AS small_dec, CAST(id AS decimal(25,3)) AS big_dec,
    date_add(DATE '2020-01-01', CAST(id AS int)) AS dt, CAST(id AS string) AS str, id % 2 = 0 AS b,
    CAST(NULL AS string) AS nothing, IF(id < 50, NULL, CAST(id AS string)) AS half,
    TIMESTAMP '2020-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) AS ts
"""


def test_footer_ranges_equal_sparks(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.sql(f"SELECT {COLUMNS} FROM range(-5, 100)").repartition(3)
    df.write.parquet(str(tmp_path / "layout"))
    files = local_files(str(tmp_path / "layout"))
    assert files is not None and len(files) == 3
    got = footer_ranges(files, df.columns)
    row = df.selectExpr(
        *[f"min({c}) AS lo_{c}" for c in df.columns], *[f"max({c}) AS hi_{c}" for c in df.columns]
    ).first()
    assert row is not None
    assert set(got) == set(df.columns) - {"ts"}  # Spark writes INT96 timestamps, which have no statistics
    for column, ends in got.items():
        assert ends == (row[f"lo_{column}"], row[f"hi_{column}"]), column
    assert got["nothing"] == (None, None) and got["str"] == ("-1", "99")  # strings compare as bytes
    assert local_files("s3a://bucket/warehouse/layout") is None
