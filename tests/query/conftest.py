"""The SSB test model of the query tests: Kylin's SSB model (ssb_model.yaml) with a small index plan,
built by Spark into two segments once per test session."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from precube.engine.context import BuildContext
from precube.engine.operations import build_segment
from precube.metadata import IndexPlan, MetadataStore, Model, Project, Segment, SourceType, TimeRange, open_store
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import add_model_table_index, create_model, require_model
from precube.modeling.partition_format import to_epoch_ms
from precube.sources.tables import load_file_table
from precube.ssb.generate import TABLES
from tests.query.oracle import Oracle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROJECT = "ssb"
MODEL = "ssb"
# [1992-01-01, 1995-01-01) and [1995-01-01, 1999-01-01): the SSB orders run from 1992-01-01 to 1998-08-02
SEGMENT_BOUNDS = ("1992-01-01", "1995-01-01", "1999-01-01")

# The demo's SSB model (resources/ssb_model.yaml) plus the measures SUPPLIERS_APPROX, MAX_DISCOUNT and
# REVENUE_ROWS (COUNT(LO_REVENUE), which with REVENUE answers AVG(LO_REVENUE)), REVENUE_PERCENTILE (a KLL
# sketch, in group 3 only: PERCENTILE_APPROX from a layout); hierarchies of group 2 and
# the discount/quantity pair of group 1 are joint dimensions, to keep the plan (and the build) small.
# Group 3 holds the foreign key LO_SUPPKEY as a dimension: SUPPLIER's other columns are derived from it.
# Group 4 (issue 18 §3) holds measures a query uses without their columns as dimensions: TOP_N by a key
# no layout holds (LO_PARTKEY: 2000 parts, under topn(50)'s 2500 entries a cell, so answers are exact)
# and by a lookup column, COUNT DISTINCT of a pair (HLL) and of another pair (bitmap), and SUM / COUNT of
# a computed column NULL on some rows (LARGE_DISCOUNT_*), next to one without COUNT (SMALL_QUANTITY_COST).
SPEC: dict[str, Any] = yaml.safe_load(resources.files("precube").joinpath("resources/ssb_model.yaml").read_text())
SPEC["simplified_dimensions"] += ["LINEORDER.LO_SUPPKEY"]
SPEC["computed_columns"] += [
    {
        "column_name": "V_LARGE_DISCOUNT_REVENUE",
        "expression": "CASE WHEN LINEORDER.LO_DISCOUNT > 5 THEN LINEORDER.LO_REVENUE END",
    },
    {
        "column_name": "V_SMALL_QUANTITY_COST",
        "expression": "CASE WHEN LINEORDER.LO_QUANTITY < 10 THEN LINEORDER.LO_SUPPLYCOST END",
    },
]
SPEC["simplified_measures"] += [
    {
        "name": "SUPPLIERS_APPROX",
        "expression": "COUNT_DISTINCT",
        "column": "LINEORDER.LO_SUPPKEY",
        "return_type": "hllc(14)",
    },
    {"name": "MAX_DISCOUNT", "expression": "MAX", "column": "LINEORDER.LO_DISCOUNT"},
    {"name": "REVENUE_ROWS", "expression": "COUNT", "column": "LINEORDER.LO_REVENUE"},
    {
        "name": "REVENUE_PERCENTILE",
        "expression": "PERCENTILE_APPROX",
        "column": "LINEORDER.LO_REVENUE",
        "return_type": "percentile(100)",
    },
    {
        "name": "TOP_PARTS",
        "expression": "TOP_N",
        "parameter_value": [
            {"type": "column", "value": "LINEORDER.LO_REVENUE"},
            {"type": "column", "value": "LINEORDER.LO_PARTKEY"},
        ],
        "return_type": "topn(50)",
    },
    {
        "name": "TOP_CITIES",
        "expression": "TOP_N",
        "parameter_value": [
            {"type": "column", "value": "LINEORDER.LO_SUPPLYCOST"},
            {"type": "column", "value": "CUSTOMER.C_CITY"},
        ],
        "return_type": "topn(100)",
    },
    {
        "name": "PART_SUPPLIERS",
        "expression": "COUNT_DISTINCT",
        "parameter_value": [
            {"type": "column", "value": "LINEORDER.LO_PARTKEY"},
            {"type": "column", "value": "LINEORDER.LO_SUPPKEY"},
        ],
        "return_type": "hllc(14)",
    },
    {
        "name": "CUSTOMER_PARTS",
        "expression": "COUNT_DISTINCT",
        "parameter_value": [
            {"type": "column", "value": "LINEORDER.LO_PARTKEY"},
            {"type": "column", "value": "LINEORDER.LO_CUSTKEY"},
        ],
        "return_type": "bitmap",
    },
    {"name": "LARGE_DISCOUNT_REVENUE", "expression": "SUM", "column": "LINEORDER.V_LARGE_DISCOUNT_REVENUE"},
    {"name": "LARGE_DISCOUNT_ROWS", "expression": "COUNT", "column": "LINEORDER.V_LARGE_DISCOUNT_REVENUE"},
    {"name": "SMALL_QUANTITY_COST", "expression": "SUM", "column": "LINEORDER.V_SMALL_QUANTITY_COST"},
]
SPEC.update(
    aggregation_groups=[
        {
            "includes": ["D_YEAR", "D_YEARMONTHNUM", "D_WEEKNUMINYEAR", "LO_DISCOUNT", "LO_QUANTITY"],
            "measures": ["V_REVENUE_SUM", "COUNT_ALL"],
            "select_rule": {
                "hierarchy_dims": [["D_YEAR", "D_YEARMONTHNUM"]],
                "joint_dims": [["LO_DISCOUNT", "LO_QUANTITY"]],
            },
        },
        {
            "includes": [
                "D_YEAR",
                "D_YEARMONTH",
                "C_REGION",
                "C_NATION",
                "C_CITY",
                "S_REGION",
                "S_NATION",
                "S_CITY",
                "P_MFGR",
                "P_CATEGORY",
                "P_BRAND",
            ],
            "measures": [
                "REVENUE",
                "SUPPLYCOST",
                "COUNT_ALL",
                "CUSTOMERS",
                "CUSTOMERS_APPROX",
                "SUPPLIERS_APPROX",
                "MAX_DISCOUNT",
                "REVENUE_ROWS",
            ],
            "select_rule": {
                "mandatory_dims": ["D_YEAR"],
                "joint_dims": [
                    ["C_REGION", "C_NATION", "C_CITY"],
                    ["S_REGION", "S_NATION", "S_CITY"],
                    ["P_MFGR", "P_CATEGORY", "P_BRAND"],
                ],
            },
        },
        {
            "includes": ["D_YEAR", "LO_SUPPKEY"],
            "measures": ["REVENUE", "COUNT_ALL", "REVENUE_PERCENTILE"],
            "select_rule": {"mandatory_dims": ["D_YEAR", "LO_SUPPKEY"]},
        },
        {
            "includes": ["D_YEAR", "C_REGION"],
            "measures": [
                "TOP_PARTS",
                "TOP_CITIES",
                "PART_SUPPLIERS",
                "CUSTOMER_PARTS",
                "LARGE_DISCOUNT_REVENUE",
                "LARGE_DISCOUNT_ROWS",
                "SMALL_QUANTITY_COST",
                "COUNT_ALL",
            ],
            "select_rule": {"mandatory_dims": ["D_YEAR"]},
        },
    ],
)

# A detail index for queries on order lines (LO_ORDERKEY and LO_LINENUMBER are no dimensions: as such
# they would make the base agg index as large as the fact table).
ORDER_LINES_INDEX = ["LO_ORDERKEY", "LO_LINENUMBER", "LO_ORDERDATE", "LO_CUSTKEY", "LO_REVENUE", "LO_SHIPMODE"]


def day(text: str) -> int:
    """Epoch ms of a `yyyy-MM-dd` date."""
    return to_epoch_ms(text, "yyyy-MM-dd")


@dataclass(frozen=True)
class QueryModel:
    """The built SSB test model: where it is, and what was built."""

    store: MetadataStore
    project: str
    warehouse_root: str
    model: Model
    plan: IndexPlan
    segments: list[Segment]
    build_seconds: float

    @property
    def session_args(self) -> tuple[MetadataStore, str, str]:
        """`Session(*query_model.session_args)`."""
        return self.store, self.project, self.warehouse_root


@pytest.fixture(scope="session")
def query_model(spark: SparkSession, ssb_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[QueryModel]:
    """The SSB tables and the model over them, built into two segments (once per test session)."""
    root = tmp_path_factory.mktemp("query-model")
    warehouse = str(root / "warehouse")
    with open_store(f"sqlite:///{root / 'meta.db'}") as store:
        store.create_project(Project(name=PROJECT, default_database="SSB"))
        for name in TABLES:
            load_file_table(store, PROJECT, ssb_dir / name, SourceType.PARQUET)
        create_model(store, PROJECT, parse_spec(SPEC))
        add_model_table_index(store, PROJECT, MODEL, ORDER_LINES_INDEX, sort_by=["LO_ORDERKEY", "LO_LINENUMBER"])
        ctx = BuildContext(spark, store, PROJECT, warehouse, writer="test")
        started = time.monotonic()
        segments = [
            build_segment(ctx, MODEL, TimeRange.of(day(start), day(end)))
            for start, end in itertools.pairwise(SEGMENT_BOUNDS)
        ]
        seconds = time.monotonic() - started
        with store.read(PROJECT) as tx:
            model = require_model(tx, MODEL)
            plan = tx.require(IndexPlan, model.uuid)
        yield QueryModel(store, PROJECT, warehouse, model, plan, segments, seconds)


@pytest.fixture(scope="session")
def oracle(ssb_dir: Path) -> Iterator[Oracle]:
    """DuckDB over the raw SSB files: what every query answer is compared with."""
    found = Oracle(ssb_dir)
    yield found
    found.close()
