"""A model saved by an earlier precube, whose computed column is recorded with sqlglot's type instead of
Spark's (DISC_PRICE = L_EXTENDEDPRICE * (1 - L_DISCOUNT) as DECIMAL(15,2), where Spark types it DECIMAL(32,4)),
has layouts whose SUM cells were rounded to cents: no query reads them, the reason says how to fix it, `model
check` names the column, and re-saving the model re-types it and drops those layouts (to be built again)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from precube.metadata import IndexPlan, MetadataStore, open_store
from precube.modeling.model_rules import spec_of
from precube.modeling.model_store import check_models, editable_spec, preview_update, require_model, update_model
from precube.query.session import Session
from tests.tpch.conftest import MODEL, PROJECT, TpchModel

pytestmark = pytest.mark.spark

REVENUE_BY_FLAG = (
    "select l_returnflag, sum(l_extendedprice * (1 - l_discount)) as revenue from lineitem group by l_returnflag"
)
DISCOUNTED_1994 = """select sum(l_extendedprice * l_discount) as revenue from lineitem
    where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' and l_discount between 0.05 and 0.07
    and l_quantity < 24"""


@pytest.fixture
def old_store(tpch_model: TpchModel, tmp_path: Path) -> Iterator[MetadataStore]:
    """A copy of the built model's metadata with DISC_PRICE recorded as sqlglot typed it (the warehouse is
    shared: nothing here writes to it)."""
    meta = tpch_model.store.url.removeprefix("sqlite:///")
    with sqlite3.connect(meta) as source, sqlite3.connect(tmp_path / "meta.db") as target:
        source.backup(target)
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        with store.transaction(PROJECT, "test") as tx:
            model = require_model(tx, MODEL)
            cc = next(c for c in model.computed_columns if c.column_name == "DISC_PRICE")
            cc.datatype = "decimal(15,2)"
            tx.update(model)
        yield store


def test_layouts_built_with_another_type_are_not_read(old_store: MetadataStore, tpch_model: TpchModel) -> None:
    with Session(old_store, PROJECT, tpch_model.warehouse) as session:
        answer = session.sql(REVENUE_BY_FLAG)
        assert answer.pushdown, f"read layouts {answer.layout_ids} built with the recorded type"
        reason = answer.pushdown_reason or ""
        assert "computed column DISC_PRICE is recorded as decimal(15,2), Spark types it decimal(32,4)" in reason
        assert "precube model update" in reason and "--add-layouts" in reason
        assert not session.sql(DISCOUNTED_1994).pushdown  # a layout without DISC_PRICE is still read

    [check] = check_models(old_store, PROJECT, "test")
    assert check.reason is None and check.retyped == {"DISC_PRICE": ("decimal(15,2)", "decimal(32,4)")}


def test_saving_the_model_again_retypes_it_and_drops_its_layouts(old_store: MetadataStore) -> None:
    with old_store.read(PROJECT) as tx:
        model = require_model(tx, MODEL)
        spec = editable_spec(model, tx.require(IndexPlan, model.uuid))
        revenue = model.measure_by_name("REVENUE")
    assert revenue is not None
    preview = preview_update(old_store, PROJECT, spec)
    assert preview.dropped_layouts and not preview.dropped_segments and not preview.significant_changes
    saved = update_model(old_store, PROJECT, spec, "test")
    cc = next(c for c in saved.model.computed_columns if c.column_name == "DISC_PRICE")
    assert cc.datatype == "decimal(32,4)"
    again = saved.model.measure_by_name("REVENUE")
    assert again is not None and again.id != revenue.id and again.function.returntype == "decimal(38,4)"
    held = {i for lay in saved.index_plan.all_layouts() for i in lay.col_order}
    assert revenue.id not in held
    assert check_models(old_store, PROJECT, "test")[0].retyped == {}
    assert spec_of(saved.model).computed_columns  # still a spec that saves
