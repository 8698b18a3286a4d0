"""Models are saved with their index plan and dataflow; edits, deletes and broken checks."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from precube.metadata import (
    AlreadyExistsError,
    Dataflow,
    DataflowStatus,
    IndexPlan,
    LayoutInstance,
    MetadataStore,
    Model,
    NotFoundError,
    SegmentDetails,
    SegmentStatus,
    Table,
    TimeRange,
)
from precube.modeling.errors import InvalidIndexPlanError, InvalidModelError
from precube.modeling.model_spec import AggregationGroupSpec, ModelSpec, RulesSpec, parse_spec
from precube.modeling.model_store import (
    add_model_table_index,
    apply_recommended,
    check_models,
    create_model,
    delete_model,
    editable_spec,
    require_model,
    set_model_rules,
    update_model,
)
from precube.modeling.segments import new_segment
from precube.sources.tables import reload_table
from tests.modeling.conftest import ssb_spec_data


def _keys(store: MetadataStore) -> set[str]:
    return {d.key for d in store.scan("/ssb/")}


def _add_built_segment(store: MetadataStore, model: Model, layout_ids: list[int]) -> None:
    """Record a READY segment holding `layout_ids`, as a finished build would."""
    with store.transaction("ssb") as tx:
        df = tx.require(Dataflow, model.uuid)
        seg = new_segment(TimeRange.of(0, 86_400_000)).model_copy(update={"status": SegmentStatus.READY})
        df.segments.append(seg)
        df.status = DataflowStatus.ONLINE
        tx.update(df)
        tx.create(
            SegmentDetails(
                uuid=seg.id,
                dataflow=model.uuid,
                layout_instances=[LayoutInstance(layout_id=i, rows=1, is_ready=True) for i in layout_ids],
            )
        )


def test_create_saves_three_documents(ssb_store: MetadataStore, ssb_spec: ModelSpec) -> None:
    saved = create_model(ssb_store, "ssb", ssb_spec)
    uuid = saved.model.uuid
    assert {f"/ssb/model_desc/{uuid}.json", f"/ssb/index_plan/{uuid}.json", f"/ssb/dataflow/{uuid}.json"} <= _keys(
        ssb_store
    )
    assert saved.dataflow.status is DataflowStatus.OFFLINE and saved.dataflow.segments == []
    plan = saved.index_plan
    base = [lay for lay in plan.all_layouts() if lay.base]
    assert {lay.is_table_index for lay in base} == {False, True}
    # group 1: hierarchy (2+1) x 2^3 - 1 = 23; group 2: mandatory D_YEAR, 3 hierarchies, 1 normal = 4*4*4*2 = 128
    assert [len(i.layouts) for i in plan.rule_based_indexes].count(1) == len(plan.rule_based_indexes)
    assert len(plan.rule_based_indexes) == 23 + 128 + 1  # + the base cuboid
    with pytest.raises(AlreadyExistsError, match="model 'ssb' already exists in project 'ssb'"):
        create_model(ssb_store, "ssb", ssb_spec)


def test_base_index_type_picks_the_base_indexes(ssb_store: MetadataStore) -> None:
    data = ssb_spec_data()
    saved = create_model(ssb_store, "ssb", parse_spec({**data, "base_index_type": ["BASE_AGG_INDEX"]}))
    assert [lay.is_table_index for lay in saved.index_plan.all_layouts() if lay.base] == [False]
    # an update that does not say keeps what the model has: the table index is not brought back
    updated = update_model(ssb_store, "ssb", parse_spec({**data, "description": "edited"}))
    assert [lay.is_table_index for lay in updated.index_plan.all_layouts() if lay.base] == [False]
    with pytest.raises(InvalidModelError, match="BASE_AGG_INDEX"):
        parse_spec({**data, "base_index_type": ["BASE_CUBOID"]})


def test_bad_model_or_rules_write_nothing(ssb_store: MetadataStore) -> None:
    before = ssb_store.scan("/")
    data = ssb_spec_data()
    data["simplified_dimensions"] = ["DATES.D_NOPE"]
    with pytest.raises(InvalidModelError, match="DATES.D_NOPE"):
        create_model(ssb_store, "ssb", parse_spec(data))
    data = ssb_spec_data()
    data["aggregation_groups"] = [{"includes": ["D_YEAR", "NOT_A_DIM"]}]
    with pytest.raises(InvalidIndexPlanError, match="aggregation group 1: NOT_A_DIM is not a dimension of model ssb"):
        create_model(ssb_store, "ssb", parse_spec(data))
    assert ssb_store.scan("/") == before


def test_edit_keeps_layout_ids_and_significant_change_drops_segments(
    ssb_store: MetadataStore, ssb_spec: ModelSpec
) -> None:
    saved = create_model(ssb_store, "ssb", ssb_spec)
    ids = {lay.id: lay.col_order for lay in saved.index_plan.all_layouts()}
    _add_built_segment(ssb_store, saved.model, list(ids))
    data = ssb_spec_data()
    data["simplified_measures"].append({"name": "MAX_TAX", "expression": "MAX", "column": "LO_TAX"})  # type: ignore[union-attr]
    edited = update_model(ssb_store, "ssb", parse_spec(data))
    assert edited.significant_changes == () and len(edited.dataflow.segments) == 1
    after = {lay.id: lay.col_order for lay in edited.index_plan.all_layouts() if not lay.base}
    kept = {i: c for i, c in ids.items() if i in after}
    assert kept and all(after[i] == c for i, c in kept.items())  # same ids, same layouts
    data["filter_condition"] = "LINEORDER.LO_QUANTITY > 0"
    changed = update_model(ssb_store, "ssb", parse_spec(data))
    assert changed.significant_changes == ("filter condition changed",)
    assert changed.model.semantic_version == 1 and changed.dataflow.segments == []
    assert not [k for k in _keys(ssb_store) if "/dataflow_details/" in k]


def test_rules_and_table_index(ssb_store: MetadataStore, ssb_spec: ModelSpec) -> None:
    saved = create_model(ssb_store, "ssb", ssb_spec)
    plan = set_model_rules(
        ssb_store, "ssb", "ssb", RulesSpec(aggregation_groups=[AggregationGroupSpec(includes=["D_YEAR", "C_REGION"])])
    )
    # {Y}, {R}, {Y,R}; the rule's base cuboid (its dims + all measures) is {Y,R} again
    assert sorted(len(i.dimensions) for i in plan.rule_based_indexes) == [1, 1, 2]
    assert all(i.id % 10_000 == 0 and i.layouts[0].id == i.id + 1 for i in plan.rule_based_indexes)
    layout = add_model_table_index(ssb_store, "ssb", "ssb", ["LO_ORDERDATE", "C_CITY"], sort_by=["LO_ORDERDATE"])
    assert layout.id >= 20_000_000_000 and layout.sort_by_columns == layout.col_order[:1]
    with ssb_store.read("ssb") as tx:
        stored = tx.require(IndexPlan, saved.model.uuid)
        assert stored.layout(layout.id) is not None
    with pytest.raises(InvalidIndexPlanError, match="NOPE is not a column of model ssb"):
        add_model_table_index(ssb_store, "ssb", "ssb", ["NOPE"])


def test_base_layout_of_the_rules_is_kept_as_asked_until_asked_otherwise(
    ssb_store: MetadataStore, ssb_spec: ModelSpec
) -> None:
    create_model(ssb_store, "ssb", ssb_spec.model_copy(update={"aggregation_groups": [], "base_index_type": []}))
    groups = [AggregationGroupSpec(includes=["D_YEAR"]), AggregationGroupSpec(includes=["C_REGION"])]

    def dims(plan: IndexPlan) -> list[int]:
        return sorted(len(i.dimensions) for i in plan.rule_based_indexes)

    def rules(groups: list[AggregationGroupSpec], base: bool | None = None) -> RulesSpec:
        return RulesSpec(aggregation_groups=groups, base_layout_enabled=base)

    assert dims(set_model_rules(ssb_store, "ssb", "ssb", rules(groups))) == [1, 1, 2]  # Kylin's default: {Y, R} too
    assert dims(set_model_rules(ssb_store, "ssb", "ssb", rules(groups, False))) == [1, 1]
    kept = set_model_rules(ssb_store, "ssb", "ssb", rules([*groups, AggregationGroupSpec(includes=["S_REGION"])]))
    assert dims(kept) == [1, 1, 1] and kept.rule_based_index is not None
    assert kept.rule_based_index.base_layout_enabled is False  # not given: as before
    with ssb_store.read("ssb") as tx:
        model = require_model(tx, "ssb")
        spec = editable_spec(model, tx.require(IndexPlan, model.uuid))
    assert spec.base_layout_enabled is False  # `model show` then `update` keeps it
    assert dims(set_model_rules(ssb_store, "ssb", "ssb", rules(groups, True))) == [1, 1, 2]
    found = apply_recommended(ssb_store, "ssb", "ssb", groups)
    assert dims(found) == [1, 1]


def test_delete_removes_everything(ssb_store: MetadataStore, ssb_spec: ModelSpec) -> None:
    saved = create_model(ssb_store, "ssb", ssb_spec)
    _add_built_segment(ssb_store, saved.model, [1])
    delete_model(ssb_store, "ssb", "SSB")
    assert not [k for k in _keys(ssb_store) if saved.model.uuid in k]
    with pytest.raises(NotFoundError, match="model 'ssb' does not exist"):
        delete_model(ssb_store, "ssb", "ssb")


def test_reload_breaks_and_fixing_recovers(ssb_store: MetadataStore, ssb_spec: ModelSpec, tmp_path: Path) -> None:
    saved = create_model(ssb_store, "ssb", ssb_spec)
    _add_built_segment(ssb_store, saved.model, [1])
    with ssb_store.read("ssb") as tx:
        location = tx.require(Table, "SSB.CUSTOMER").location
    assert location is not None
    original = pads.dataset(location).to_table()
    try:  # the SSB files are shared by the session: always put them back
        pq.write_table(original.drop_columns(["C_CITY"]), Path(location) / "part-00000.parquet")
        reload_table(ssb_store, "ssb", "SSB.CUSTOMER", lambda: pytest.fail("no Spark needed"))
    finally:
        pq.write_table(original, Path(location) / "part-00000.parquet")
    [check] = check_models(ssb_store, "ssb")
    assert check.reason == "column CUSTOMER.C_CITY used by the model was dropped from SSB.CUSTOMER" and check.changed
    with ssb_store.read("ssb") as tx:
        df = tx.require(Dataflow, saved.model.uuid)
        assert (df.status, df.broken_reason, df.segments) == (DataflowStatus.BROKEN, "SCHEMA", [])
    reload_table(ssb_store, "ssb", "SSB.CUSTOMER", lambda: pytest.fail("no Spark needed"))
    [check] = check_models(ssb_store, "ssb")
    assert check.reason is None and check.changed
    with ssb_store.read("ssb") as tx:
        assert tx.require(Dataflow, saved.model.uuid).status is DataflowStatus.OFFLINE
