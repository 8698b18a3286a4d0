"""Registering tables from Parquet, CSV and the Spark catalog; reload reports schema changes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.errors import InvalidInputError
from precube.metadata import AlreadyExistsError, MetadataStore, NotFoundError, Project, SourceType, Table
from precube.sources.errors import UnreadableSourceError
from precube.sources.source import detect_file_type
from precube.sources.tables import load_catalog_table, load_file_table, reload_table, unload_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _no_spark() -> SparkSession:
    raise AssertionError("file tables must not need Spark")


def _parquet(directory: Path, table: pa.Table) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, directory / "part-00000.parquet")
    return directory


@pytest.fixture
def project(store: MetadataStore) -> str:
    store.create_project(Project(name="p", default_database="SSB"))
    return "p"


def test_parquet_schema_becomes_kylin_columns(store: MetadataStore, project: str, tmp_path: Path) -> None:
    data = pa.table(
        {
            "k": pa.array([1, 2], pa.int32()),
            "Amount": pa.array([10, 20], pa.int64()),
            "price": pa.array([1.5, 2.5], pa.float64()),
            "cost": pa.array([1, 2], pa.decimal128(15, 2)),
            "day": pa.array([0, 1], pa.date32()),
            "at": pa.array([0, 1], pa.timestamp("us")),
            "name": ["a", "b"],
            "flag": [True, False],
        }
    )
    path = _parquet(tmp_path / "sales", data)
    table = load_file_table(store, project, path, detect_file_type(path))
    assert table.identity == "SSB.SALES" and table.source_type is SourceType.PARQUET
    assert [(c.id, c.name, c.datatype) for c in table.columns] == [
        ("1", "K", "integer"),
        ("2", "AMOUNT", "bigint"),
        ("3", "PRICE", "double"),
        ("4", "COST", "decimal(15,2)"),
        ("5", "DAY", "date"),
        ("6", "AT", "timestamp"),
        ("7", "NAME", "varchar(4096)"),
        ("8", "FLAG", "boolean"),
    ]
    with store.read(project) as tx:
        assert tx.require(Table, "SSB.SALES").location == str(path.resolve())


def test_csv_table(store: MetadataStore, project: str, tmp_path: Path) -> None:
    (tmp_path / "people").mkdir()
    (tmp_path / "people" / "a.csv").write_text("id;name;born\n1;ann;1990-01-02\n2;bob;1985-12-31\n")
    path = tmp_path / "people"
    assert detect_file_type(path) is SourceType.CSV
    table = load_file_table(
        store, project, path, SourceType.CSV, database="hr", options={"delimiter": ";", "header": "true"}
    )
    assert table.identity == "HR.PEOPLE"
    assert [(c.name, c.datatype) for c in table.columns] == [
        ("ID", "bigint"),
        ("NAME", "varchar(4096)"),
        ("BORN", "date"),
    ]


def test_bad_input_leaves_the_store_unchanged(store: MetadataStore, project: str, tmp_path: Path) -> None:
    path = _parquet(tmp_path / "t", pa.table({"a": [1]}))
    load_file_table(store, project, path, SourceType.PARQUET)
    before = store.scan("/")
    with pytest.raises(AlreadyExistsError, match="table SSB.T already exists in project 'p'"):
        load_file_table(store, project, path, SourceType.PARQUET)
    with pytest.raises(UnreadableSourceError, match="no such file or directory"):
        load_file_table(store, project, tmp_path / "missing", SourceType.PARQUET)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "x.parquet").write_text("not parquet")
    with pytest.raises(UnreadableSourceError, match="cannot read parquet files at"):
        load_file_table(store, project, tmp_path / "junk", SourceType.PARQUET)
    with pytest.raises(NotFoundError, match="project 'nope' does not exist"):
        load_file_table(store, "nope", path, SourceType.PARQUET)
    dashed = _parquet(tmp_path / "my-data", pa.table({"a": [1]}))
    with pytest.raises(InvalidInputError, match="invalid name 'my-data': use letters, digits and underscores"):
        load_file_table(store, project, dashed, SourceType.PARQUET)
    with pytest.raises(InvalidInputError, match="invalid database 'a.b'"):
        load_file_table(store, project, path, SourceType.PARQUET, name="other", database="a.b")
    with pytest.raises(UnreadableSourceError, match="cannot tell the format"):
        (tmp_path / "odd").mkdir()
        (tmp_path / "odd" / "x.bin").write_text("?")
        detect_file_type(tmp_path / "odd")
    assert store.scan("/") == before


def test_reload_reports_changes_and_keeps_ids(store: MetadataStore, project: str, tmp_path: Path) -> None:
    path = _parquet(tmp_path / "t", pa.table({"a": [1], "b": ["x"], "c": [1.0]}))
    load_file_table(store, project, path, SourceType.PARQUET)
    _, change = reload_table(store, project, "ssb.t", _no_spark)
    assert not change.changed
    _parquet(path, pa.table({"a": pa.array([1], pa.int64()), "c": ["now text"], "d": [True]}))
    table, change = reload_table(store, project, "SSB.T", _no_spark)
    assert (change.added, change.removed, change.retyped) == (
        ["D"],
        ["B"],
        [("C", "double", "varchar(4096)")],
    )
    assert change.describe() == "added D; removed B; retyped C double -> varchar(4096)"
    assert [(c.id, c.name) for c in table.columns] == [("1", "A"), ("3", "C"), ("4", "D")]
    with store.read(project) as tx:
        assert tx.require(Table, "SSB.T").mvcc == 1


def test_unload_removes_table(store: MetadataStore, project: str, tmp_path: Path) -> None:
    load_file_table(store, project, _parquet(tmp_path / "t", pa.table({"a": [1]})), SourceType.PARQUET)
    unload_table(store, project, "ssb.t")
    with store.read(project) as tx:
        assert tx.list(Table) == []


@pytest.mark.spark
def test_spark_catalog_table(spark: SparkSession, tmp_path: Path) -> None:
    from precube.metadata import open_store
    from precube.sources.sampling import sample_and_store

    spark.sql("CREATE DATABASE IF NOT EXISTS cat_db")
    spark.createDataFrame([(1, "a", 2.5), (2, None, 3.5)], "id INT, label STRING, v DOUBLE").write.mode(
        "overwrite"
    ).saveAsTable("cat_db.items")
    with open_store(f"sqlite:///{tmp_path / 'm.db'}") as store:
        store.create_project(Project(name="c"))
        table = load_catalog_table(store, "c", "cat_db.items", lambda: spark)
        assert table.source_type is SourceType.SPARK and table.identity == "CAT_DB.ITEMS"
        assert [(c.name, c.datatype) for c in table.columns] == [
            ("ID", "integer"),
            ("LABEL", "varchar(4096)"),
            ("V", "double"),
        ]
        ext = sample_and_store(store, "c", "CAT_DB.ITEMS", spark, max_rows=100)
        assert ext.total_rows == 2
        label = ext.stats("LABEL")
        assert label is not None and label.null_count == 1
        with pytest.raises(UnreadableSourceError, match="no such table"):
            load_catalog_table(store, "c", "cat_db.nope", lambda: spark)
