"""Fixtures for build tests: a SQLite store with the SSB tables and a small model over them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from precube.engine.context import BuildContext
from precube.metadata import MetadataStore, Project, SourceType, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JOINS = [
    {"table": f"SSB.{t}", "alias": t, "join": {"foreign_key": [f"LINEORDER.{fk}"], "primary_key": [f"{t}.{pk}"]}}
    for t, fk, pk in [
        ("DATES", "LO_ORDERDATE", "D_DATEKEY"),
        ("CUSTOMER", "LO_CUSTKEY", "C_CUSTKEY"),
        ("SUPPLIER", "LO_SUPPKEY", "S_SUPPKEY"),
    ]
]

# All measure kinds that have exact or bounded answers, over a few dimensions.
SPEC: dict[str, Any] = {
    "alias": "sales",
    "fact_table": "SSB.LINEORDER",
    "join_tables": JOINS,
    "computed_columns": [
        {"column_name": "V_REVENUE", "expression": "LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT"}
    ],
    "partition_desc": {"partition_date_column": "LINEORDER.LO_ORDERDATE", "partition_date_format": "yyyy-MM-dd"},
    "simplified_dimensions": ["DATES.D_YEAR", "CUSTOMER.C_REGION", "SUPPLIER.S_REGION", "LINEORDER.LO_SHIPMODE"],
    "simplified_measures": [
        {"name": "ROWS", "expression": "COUNT"},
        {"name": "REVENUE", "expression": "SUM", "column": "LINEORDER.LO_REVENUE"},
        {"name": "V_REVENUE", "expression": "SUM", "column": "LINEORDER.V_REVENUE"},
        {"name": "MIN_DISCOUNT", "expression": "MIN", "column": "LINEORDER.LO_DISCOUNT"},
        {"name": "MAX_DATE", "expression": "MAX", "column": "LINEORDER.LO_ORDERDATE"},
        {"name": "TAXED", "expression": "COUNT", "column": "LINEORDER.LO_TAX"},
        {
            "name": "CUSTOMERS",
            "expression": "COUNT_DISTINCT",
            "column": "LINEORDER.LO_CUSTKEY",
            "return_type": "bitmap",
        },
        {
            "name": "CUSTOMERS_HLL",
            "expression": "COUNT_DISTINCT",
            "column": "LINEORDER.LO_CUSTKEY",
            "return_type": "hllc(12)",
        },
        {
            "name": "TOP_SUPPLIERS",
            "expression": "TOP_N",
            "parameter_value": [
                {"type": "column", "value": "LINEORDER.LO_REVENUE"},
                {"type": "column", "value": "LINEORDER.LO_SUPPKEY"},
            ],
            "return_type": "topn(10)",
        },
        {
            "name": "DISCOUNT_MEDIAN",
            "expression": "PERCENTILE_APPROX",
            "column": "LINEORDER.LO_DISCOUNT",
            "return_type": "percentile(100)",
        },
    ],
    "aggregation_groups": [{"includes": ["D_YEAR", "C_REGION", "S_REGION"]}],
}


@pytest.fixture
def build_store(tmp_path: Path, ssb_dir: Path) -> Iterator[MetadataStore]:
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="ssb", default_database="SSB"))
        for name in TABLES:
            load_file_table(store, "ssb", ssb_dir / name, SourceType.PARQUET)
        create_model(store, "ssb", parse_spec(SPEC))
        yield store


@pytest.fixture
def ctx(spark: SparkSession, build_store: MetadataStore, tmp_path: Path) -> BuildContext:
    return BuildContext(spark, build_store, "ssb", str(tmp_path / "warehouse"), writer="test")
