"""Merging a built layout into its children on the driver (`arrow_merge`): the merged cells against sums worked
out by hand, NULL keys, decimal sums, INT96 timestamps and the grand total included, and every case Arrow would
not merge as Spark does left to Spark (None)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from precube.engine.arrow_merge import MERGE_MAX_VALUES, merge_locally
from precube.engine.layout_build import compute_layout
from precube.metadata import IndexPlan, Layout, MetadataStore, Model
from precube.modeling.model_spec import parse_spec
from precube.modeling.model_store import create_model, require_model
from precube.modeling.spanning_tree import fully_derives
from precube.storage import columns as names
from tests.engine.conftest import SPEC

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MEASURES = ["ROWS", "REVENUE", "MIN_DISCOUNT", "MAX_DATE"]


@pytest.fixture
def plan(build_store: MetadataStore) -> tuple[Model, list[Layout]]:
    spec = {**SPEC, "alias": "exact"}
    spec["simplified_measures"] = [m for m in SPEC["simplified_measures"] if m["name"] in MEASURES]
    create_model(build_store, "ssb", parse_spec(spec))
    with build_store.read("ssb") as tx:
        model = require_model(tx, "exact")
        layouts = tx.require(IndexPlan, model.uuid).all_layouts()
    return model, sorted((lay for lay in layouts if not lay.is_table_index), key=lambda lay: -len(lay.col_order))


def _cell(model: Model, name: str) -> str:
    return names.measure_column(next(m.id for m in model.measures() if m.name == name))


def _parent(model: Model, base: Layout, path: Path, revenue: list[int], **extra: pa.Array) -> str:
    """The base layout's file: four rows over two years, one with NULL dimensions."""
    columns: dict[str, pa.Array] = {}
    for d in base.dimensions:
        name = model.column_by_id(d).name  # type: ignore[union-attr]
        if name == "D_YEAR":
            columns[names.column(d)] = pa.array([1995, 1995, 1996, None], pa.int32())
        else:
            columns[names.column(d)] = pa.array([f"{name}-a", f"{name}-b", f"{name}-a", None])
    columns[_cell(model, "ROWS")] = pa.array([3, 4, 5, 6], pa.int64())
    columns[_cell(model, "REVENUE")] = pa.array(revenue, pa.int64())
    columns[_cell(model, "MIN_DISCOUNT")] = pa.array([7, 2, None, 9], pa.int32())
    columns[_cell(model, "MAX_DATE")] = pa.array([10_000, 10_050, 10_400, None], pa.date32())
    path.mkdir()
    pq.write_table(pa.table({**columns, **extra}), path / "part-0.parquet")
    return str(path)


def _by_hand(model: Model, table: pa.Table, dims: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in table.to_pylist():
        groups[tuple(row[d] for d in dims)].append(row)

    def least(values: list[Any], pick: Any) -> Any:
        present = [v for v in values if v is not None]
        return pick(present) if present else None

    cells = {name: _cell(model, name) for name in MEASURES}
    return {
        key: {
            cells["ROWS"]: sum(r[cells["ROWS"]] for r in rows),
            cells["REVENUE"]: sum(r[cells["REVENUE"]] for r in rows),
            cells["MIN_DISCOUNT"]: least([r[cells["MIN_DISCOUNT"]] for r in rows], min),
            cells["MAX_DATE"]: least([r[cells["MAX_DATE"]] for r in rows], max),
        }
        for key, rows in groups.items()
    }


def test_children_merged_on_the_driver_equal_the_sums_by_hand(plan: tuple[Model, list[Layout]], tmp_path: Path) -> None:
    model, layouts = plan
    base, children = layouts[0], [lay for lay in layouts[1:] if fully_derives(layouts[0], lay)]
    path = _parent(model, base, tmp_path / "base", [100, 200, -50, 7])
    parent = pq.read_table(path)
    # as Spark writes a layout: several files, each string column with a dictionary of its own
    (Path(path) / "part-0.parquet").unlink()
    pq.write_table(parent.slice(0, 2), f"{path}/part-0.parquet")
    pq.write_table(parent.slice(2), f"{path}/part-1.parquet")
    merged = merge_locally(path, parent.num_rows, children, model)
    assert merged is not None and len(merged) == len(children) >= 3
    for layout, table in zip(children, merged, strict=True):
        dims = [names.column(d) for d in layout.dimensions]
        assert table.column_names[: len(dims)] == dims
        assert all(table.schema.field(c).type == parent.schema.field(c).type for c in table.column_names)
        rows = table.to_pylist()
        keys = [tuple(r[d] for d in dims) for r in rows]
        assert keys == sorted(keys, key=lambda k: [(v is not None, v) for v in k])  # NULL first
        assert {k: {c: v for c, v in r.items() if c not in dims} for k, r in zip(keys, rows, strict=True)} == (
            _by_hand(model, parent, dims)
        )


def test_a_grand_total_of_no_cells_counts_zero(
    plan: tuple[Model, list[Layout]], tmp_path: Path, spark: SparkSession
) -> None:
    """As Spark's own merge of the same empty parent (`compute_layout`) answers: one row, COUNT 0, the rest
    NULL."""
    model, layouts = plan
    base = layouts[0]
    apex = base.model_copy(update={"id": 999_999, "col_order": [c for c in base.col_order if c >= 100_000]})
    path = _parent(model, base, tmp_path / "base", [1, 2, 3, 4])
    empty = tmp_path / "empty"
    empty.mkdir()
    pq.write_table(pq.read_table(path).slice(0, 0), empty / "part-0.parquet")
    [total] = merge_locally(str(empty), 0, [apex], model) or [None]
    assert total is not None and total.to_pylist() == [
        {_cell(model, "ROWS"): 0, _cell(model, "REVENUE"): None, _cell(model, "MIN_DISCOUNT"): None,
         _cell(model, "MAX_DATE"): None}
    ]  # fmt: skip
    by_spark = compute_layout(spark.read.parquet(str(empty)), apex, model, from_flat=False, input_rows=0)
    assert total.to_pylist() == by_spark.toArrow().to_pylist()


def test_what_arrow_would_not_merge_as_spark_does_is_left_to_spark(
    plan: tuple[Model, list[Layout]], tmp_path: Path
) -> None:
    model, layouts = plan
    base = layouts[0]
    child = next(lay for lay in layouts[1:] if fully_derives(base, lay))
    fine = _parent(model, base, tmp_path / "fine", [2**60, 2**60, -(2**60), 1])
    assert merge_locally(fine, 4, [child], model) is not None
    assert merge_locally(fine, MERGE_MAX_VALUES, [child], model) is None  # too large to hold on the driver
    # four cells of 2^61: a sum could pass 2^63 (Arrow's sum would wrap around where Spark's fails)
    big = _parent(model, base, tmp_path / "big", [2**61, 2**61, 2**61, 2**61])
    assert merge_locally(big, 4, [child], model) is None
    # a floating MIN: Spark orders NaN above every number
    floating = tmp_path / "floating"
    table = pq.read_table(fine)
    cell = _cell(model, "MIN_DISCOUNT")
    table = table.set_column(table.schema.get_field_index(cell), cell, table[cell].cast(pa.float64()))
    pq.write_table(table, _mkdir(floating) / "part-0.parquet")
    assert merge_locally(str(floating), 4, [child], model) is None
    assert merge_locally(str(tmp_path / "nowhere"), 4, [child], model) is None


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def test_decimal_sums_and_int96_timestamps_merge_exactly(plan: tuple[Model, list[Layout]], tmp_path: Path) -> None:
    """A decimal SUM's cells keep their type and every digit (and are left to Spark when a sum could leave the
    type); INT96 timestamps, Spark's default encoding, come back as the UTC instants they hold."""
    model, layouts = plan
    base = layouts[0]
    child = next(lay for lay in layouts[1:] if fully_derives(base, lay) and len(lay.dimensions) == 1)
    revenue, latest = _cell(model, "REVENUE"), _cell(model, "MAX_DATE")
    stamps = [dt.datetime(1995, 1, 1, 23, 59, 59, 999_999), dt.datetime(1995, 6, 1), dt.datetime(1996, 1, 1), None]

    def parent(name: str, amounts: list[str], precision: int) -> str:
        table = pq.read_table(_parent(model, base, tmp_path / f"{name}-arrow", [0, 0, 0, 0]))
        table = table.set_column(
            table.schema.get_field_index(revenue),
            revenue,
            pa.array([Decimal(a) for a in amounts], pa.decimal128(precision, 4)),
        ).set_column(table.schema.get_field_index(latest), latest, pa.array(stamps, pa.timestamp("us")))
        pq.write_table(table, _mkdir(tmp_path / name) / "part-0.parquet", use_deprecated_int96_timestamps=True)
        return str(tmp_path / name)

    exact = parent("exact", ["99999999999.9999", "0.0001", "-12.5", "3"], 19)
    footer = pq.ParquetFile(f"{exact}/part-0.parquet").schema
    assert footer.column(footer.names.index(latest)).physical_type == "INT96"
    [merged] = merge_locally(exact, 4, [child], model) or [None]
    assert merged is not None
    assert merged.schema.field(revenue).type == pa.decimal128(19, 4)
    assert merged.schema.field(latest).type == pa.timestamp("us", tz="UTC")
    by_year = {r[names.column(child.dimensions[0])]: r for r in merged.to_pylist()}
    utc = dt.UTC
    assert by_year[1995][revenue] == Decimal("100000000000.0000")
    assert by_year[1995][latest] == dt.datetime(1995, 6, 1, tzinfo=utc)
    assert by_year[1996][revenue] == Decimal("-12.5000") and by_year[None][revenue] == Decimal("3.0000")
    # 15 integer digits allowed; four cells of 10^15 - 1: a sum could need 16
    assert merge_locally(parent("wide", ["999999999999999.0000"] * 4, 19), 4, [child], model) is None
