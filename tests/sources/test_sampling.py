"""Sampling on Spark, checked against the same statistics computed with pyarrow on the raw files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

from precube.metadata import MetadataStore, Project, SourceType, TableExt
from precube.metadata.table import RowCountStatus
from precube.sources.sampling import RELATIVE_ERROR, sample_and_store, to_text
from precube.sources.tables import load_file_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _oracle_text(value: object) -> str | None:
    return to_text(value.as_py() if isinstance(value, pa.Scalar) else value)


@pytest.mark.parametrize("name", ["LINEORDER", "CUSTOMER", "DATES"])
def test_ssb_stats_match_pyarrow(
    spark: SparkSession, ssb_dir: Path, tmp_path: Path, store: MetadataStore, name: str
) -> None:
    store.create_project(Project(name="s", default_database="SSB"))
    load_file_table(store, "s", ssb_dir / name, SourceType.PARQUET)
    ext = sample_and_store(store, "s", f"SSB.{name}", spark, max_rows=10**9, sample_rows=5)
    raw = pads.dataset(ssb_dir / name).to_table()
    assert ext.total_rows == ext.sampled_rows == raw.num_rows and ext.row_count_status is RowCountStatus.OK
    assert len(ext.sample_rows) == 5 and len(ext.sample_rows[0]) == raw.num_columns
    for field in raw.schema:
        stats = ext.stats(field.name)
        assert stats is not None
        col = raw.column(field.name)
        exact = pc.count_distinct(col).as_py()
        # HLL++ at 5 % relative standard error: 3 sigma
        assert abs(stats.cardinality - exact) <= max(2, 3 * RELATIVE_ERROR * exact), field.name
        assert stats.cardinality <= raw.num_rows - col.null_count, field.name  # the estimate is capped
        assert stats.null_count == col.null_count
        lo_hi = pc.min_max(col)
        assert stats.min_value == _oracle_text(lo_hi["min"]), field.name
        assert stats.max_value == _oracle_text(lo_hi["max"]), field.name
        if pa.types.is_string(field.type):
            lengths = pc.utf8_length(col)
            assert (stats.min_length, stats.max_length) == (pc.min(lengths).as_py(), pc.max(lengths).as_py())
    with store.read("s") as tx:
        assert tx.require(TableExt, f"SSB.{name}").total_rows == raw.num_rows


def test_row_cap_samples_but_counts_exactly_and_resample_updates(
    spark: SparkSession, ssb_dir: Path, store: MetadataStore
) -> None:
    store.create_project(Project(name="s", default_database="SSB"))
    load_file_table(store, "s", ssb_dir / "LINEORDER", SourceType.PARQUET)
    rows = pads.dataset(ssb_dir / "LINEORDER").count_rows()
    ext = sample_and_store(store, "s", "SSB.LINEORDER", spark, max_rows=rows // 10, sample_rows=0)
    assert (ext.total_rows, ext.row_count_status, ext.sample_rows) == (rows, RowCountStatus.OK, [])
    assert 0.7 * rows // 10 < ext.sampled_rows < 1.3 * rows // 10  # Bernoulli sample of ~10 %
    line = ext.stats("LO_LINENUMBER")
    assert line is not None and (line.min_value, line.max_value, line.cardinality) == ("1", "7", 7)
    again = sample_and_store(store, "s", "SSB.LINEORDER", spark, max_rows=10**9)
    assert again.uuid == ext.uuid and again.mvcc == ext.mvcc + 1
    assert again.sampled_rows == again.total_rows == rows


def test_csv_is_read_with_the_registered_schema(spark: SparkSession, tmp_path: Path, store: MetadataStore) -> None:
    (tmp_path / "ev").mkdir()
    (tmp_path / "ev" / "a.csv").write_text("day|n\n2024-01-02|5\n2024-03-04|\n2023-12-31|7\n")
    store.create_project(Project(name="s"))
    load_file_table(store, "s", tmp_path / "ev", SourceType.CSV, options={"delimiter": "|", "header": "true"})
    ext = sample_and_store(store, "s", "DEFAULT.EV", spark, max_rows=100)
    day, n = ext.stats("DAY"), ext.stats("N")
    assert day is not None and n is not None
    assert (day.min_value, day.max_value) == (dt.date(2023, 12, 31).isoformat(), "2024-03-04")
    assert (n.null_count, n.min_numeral, n.max_numeral) == (1, 5.0, 7.0)
