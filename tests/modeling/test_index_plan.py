"""Layout ids and index-plan edits (reference §3.1, §3.4; seed 002 "IndexPlan")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precube.metadata.index_plan import (
    TABLE_INDEX_START_ID,
    AggregationGroup,
    IndexPlan,
    Layout,
    RuleBasedIndex,
    SelectRule,
    index_id_of,
)
from precube.modeling.agg_group import expand_rule
from precube.modeling.errors import InvalidIndexPlanError, TooManyLayoutsError
from precube.modeling.index_plan import (
    add_agg_index,
    add_table_index,
    drop_to_be_deleted,
    ensure_base_indexes,
    remove_layouts,
    set_rules,
)

DIMS = list(range(8))
MEASURES = [100_000, 100_001, 100_002]
WORKED = AggregationGroup(
    includes=[0, 1, 2, 3, 4, 5],
    select_rule=SelectRule(mandatory_dims=[0], hierarchy_dims=[[1, 2, 3]], joint_dims=[[4, 5]]),
)


def rule(*groups: AggregationGroup) -> RuleBasedIndex:
    return RuleBasedIndex(aggregation_groups=list(groups))


def g(includes: list[int], dim_cap: int | None = None, measures: list[int] | None = None) -> AggregationGroup:
    return AggregationGroup(includes=includes, measures=measures or [], select_rule=SelectRule(dim_cap=dim_cap))


def layouts_by_order(plan: IndexPlan) -> dict[tuple[int, ...], int]:
    return {tuple(lay.col_order): lay.id for index in plan.rule_based_indexes for lay in index.layouts}


def all_ids(plan: IndexPlan) -> set[int]:
    return {lay.id for lay in plan.all_layouts()}


def test_fresh_rule_ids_follow_kylin_scheme() -> None:
    plan = IndexPlan()
    before = plan.model_dump()
    out = set_rules(plan, rule(WORKED), DIMS, MEASURES)
    assert plan.model_dump() == before  # the input is never mutated
    rb = out.rule_based_index
    assert rb is not None
    assert rb.layout_id_mapping == [1, 10001, 20001, 30001, 40001, 50001, 60001, 70001]
    assert rb.dimensions == [0, 1, 2, 3, 4, 5] and rb.measures == MEASURES and rb.index_start_id == 0
    assert out.next_aggregation_index_id == 80000
    for index in out.rule_based_indexes:
        assert [index_id_of(lay.id) for lay in index.layouts] == [index.id]
        assert index.next_layout_offset == 2
    first = out.rule_based_indexes[0].layouts[0]
    assert first.col_order == [0, *MEASURES] and first.manual
    assert out.layout(70001) is not None


def test_rule_ids_start_after_the_base_index_and_share_its_layout() -> None:
    plan = ensure_base_indexes(IndexPlan(), [0, 1, 2, 3, 4, 5], MEASURES, [0, 1, 2, 3, 4, 5, 6])
    base = plan.indexes[0].layouts[0]
    assert (base.id, base.base, base.col_order) == (1, True, [0, 1, 2, 3, 4, 5, *MEASURES])
    assert plan.indexes[1].layouts[0].id == TABLE_INDEX_START_ID + 1
    out = set_rules(plan, rule(WORKED), [0, 1, 2, 3, 4, 5], MEASURES)
    rb = out.rule_based_index
    assert rb is not None and rb.index_start_id == 10000
    # the rule's base cuboid equals the base agg layout: same data, same id (RuleBasedIndex.genCuboidLayouts)
    assert rb.layout_id_mapping == [10001, 20001, 30001, 40001, 50001, 60001, 70001, 1]
    assert len(out.all_layouts()) == 8 + 1  # 8 agg layouts (one shared) + the base table layout


def test_set_rules_again_keeps_unchanged_ids_and_parks_built_removed_layouts() -> None:
    first = set_rules(IndexPlan(), rule(g([1, 2], dim_cap=1), g([3, 4], dim_cap=1)), DIMS, MEASURES)
    assert first.rule_based_index is not None
    assert first.rule_based_index.layout_id_mapping == [1, 10001, 20001, 30001, 40001]  # (1) (2) (3) (4) base
    m = MEASURES
    # drop group 2, add group 3; layouts (3,) and (1,2,3,4) were built, (4,) was not
    second = set_rules(first, rule(g([1, 2], dim_cap=1), g([5, 6], dim_cap=1)), DIMS, MEASURES, [20001, 40001, 1])
    after = layouts_by_order(second)
    assert after[(1, *m)] == 1 and after[(2, *m)] == 10001  # unchanged layouts keep their ids
    assert after[(5, *m)] == 50001 and after[(6, *m)] == 60001  # new ones above every id ever given
    assert after[(1, 2, 5, 6, *m)] == 70001  # the new base cuboid
    parked = {lay.id for index in second.to_be_deleted_indexes for lay in index.layouts}
    assert parked == {20001, 40001}  # built and gone; 30001 was never built: dropped
    assert 30001 not in all_ids(second)
    assert second.next_aggregation_index_id == 80000
    # adding group 2 back brings the parked layouts back with their ids; 30001 is gone for good
    third = set_rules(second, rule(g([1, 2], dim_cap=1), g([3, 4], dim_cap=1)), DIMS, MEASURES)
    again = layouts_by_order(third)
    assert again[(3, *m)] == 20001 and again[(1, 2, 3, 4, *m)] == 40001 and again[(4, *m)] == 80001
    assert third.to_be_deleted_indexes == []
    assert drop_to_be_deleted(second, [40001]).to_be_deleted_indexes[0].layouts[0].id == 40001
    assert drop_to_be_deleted(second, []).to_be_deleted_indexes == []


def test_same_dimensions_in_another_order_is_a_second_layout_of_the_index() -> None:
    out = set_rules(IndexPlan(), rule(g([1, 2]), g([2, 1])), DIMS, MEASURES)
    assert out.rule_based_index is not None
    assert out.rule_based_index.layout_id_mapping == [1, 10001, 20001, 20002]
    index = next(i for i in out.rule_based_indexes if i.id == 20000)
    assert [lay.col_order[:2] for lay in index.layouts] == [[1, 2], [2, 1]]
    assert index.next_layout_offset == 3


def test_group_measures_make_distinct_indexes() -> None:
    out = set_rules(IndexPlan(), rule(g([1], measures=[100_000]), g([1], measures=[100_001])), DIMS, MEASURES)
    rb = out.rule_based_index
    assert rb is not None and rb.measures == [100_000, 100_001]
    assert sorted(tuple(i.measures) for i in out.rule_based_indexes) == [(100_000,), (100_000, 100_001), (100_001,)]


def test_black_list_survives_reexpansion_until_the_layout_leaves_the_rule() -> None:
    r = rule(g([1, 2], dim_cap=1))
    plan = set_rules(IndexPlan(), r, DIMS, MEASURES)  # (1)=1 (2)=10001 base (1,2)=20001
    removed = remove_layouts(plan, [10001])
    assert removed.rule_based_index is not None and removed.rule_based_index.layout_black_list == [10001]
    assert 10001 not in all_ids(removed)
    again = set_rules(removed, r, DIMS, MEASURES)
    assert again.rule_based_index is not None
    assert again.rule_based_index.layout_id_mapping == [1, 10001, 20001]
    assert again.rule_based_index.layout_black_list == [10001] and 10001 not in all_ids(again)
    without = set_rules(again, rule(g([1, 3], dim_cap=1)), DIMS, MEASURES)
    assert without.rule_based_index is not None and without.rule_based_index.layout_black_list == []
    back = set_rules(without, r, DIMS, MEASURES)
    assert layouts_by_order(back)[(2, *MEASURES)] not in {10001}  # a regenerated layout gets a new id (seed 002)


def test_remove_built_layouts_go_to_to_be_deleted() -> None:
    plan = set_rules(IndexPlan(), rule(g([1, 2], dim_cap=1)), DIMS, MEASURES)
    plan, manual = add_agg_index(plan, [3], [100_000], model_dims=DIMS, model_measures=MEASURES)
    out = remove_layouts(plan, [1, manual.id], built_layout_ids=[1, manual.id])
    assert {lay.id for i in out.to_be_deleted_indexes for lay in i.layouts} == {1, manual.id}
    assert out.rule_based_index is not None and out.rule_based_index.layout_black_list == [1]
    assert out.next_aggregation_index_id == plan.next_aggregation_index_id  # ids never go back
    with pytest.raises(InvalidIndexPlanError, match="layout 999 is not in the index plan"):
        remove_layouts(plan, [999])


def test_add_agg_index() -> None:
    plan = set_rules(IndexPlan(), rule(g([1, 2], dim_cap=1)), DIMS, MEASURES)
    plan, lay = add_agg_index(plan, [2, 1], [100_001, 100_000], shard_by=[1], model_dims=DIMS, model_measures=MEASURES)
    assert (lay.id, lay.col_order, lay.shard_by_columns, lay.manual) == (30001, [2, 1, 100_000, 100_001], [1], True)
    plan, lay2 = add_agg_index(plan, [1, 2], [100_000, 100_001], model_dims=DIMS, model_measures=MEASURES)
    assert lay2.id == 30002  # same dimension and measure sets: the same index
    # the rule's base cuboid (1,2)+all measures already exists
    with pytest.raises(InvalidIndexPlanError, match="identical layout already exists: layout 20001"):
        add_agg_index(plan, [1, 2], MEASURES, model_dims=DIMS, model_measures=MEASURES)
    with pytest.raises(InvalidIndexPlanError, match="shard_by column 3 is not among"):
        add_agg_index(plan, [1], [], shard_by=[3], model_dims=DIMS, model_measures=MEASURES)
    with pytest.raises(InvalidIndexPlanError, match="dimension 42 is not a dimension of the model"):
        add_agg_index(plan, [42], [], model_dims=DIMS, model_measures=MEASURES)
    with pytest.raises(InvalidIndexPlanError, match="measure 7 is not a measure"):
        add_agg_index(plan, [1], [7], model_dims=DIMS, model_measures=MEASURES)


def test_add_table_index() -> None:
    plan, t1 = add_table_index(IndexPlan(), [3, 1, 2], sort_by=[1], model_columns=range(10))
    assert (t1.id, t1.col_order, t1.sort_by_columns) == (20_000_000_001, [3, 1, 2], [1])
    plan, t2 = add_table_index(plan, [1, 2, 3], model_columns=range(10))
    plan, t3 = add_table_index(plan, [4], model_columns=range(10))
    assert (t2.id, t3.id) == (20_000_000_002, 20_000_010_001)
    assert plan.next_table_index_id == 20_000_020_000 and plan.next_aggregation_index_id == 0
    with pytest.raises(InvalidIndexPlanError, match="layout 20000010001"):
        add_table_index(plan, [4], model_columns=range(10))
    with pytest.raises(InvalidIndexPlanError, match="sort_by column 9 is not among"):
        add_table_index(plan, [4, 5], sort_by=[9], model_columns=range(10))
    with pytest.raises(InvalidIndexPlanError, match="column 11 is not a column of the model"):
        add_table_index(plan, [11], model_columns=range(10))


def test_base_indexes_are_regenerated_when_the_model_changes() -> None:
    plan = ensure_base_indexes(IndexPlan(), [2, 1], MEASURES, [1, 2, 9])
    assert ensure_base_indexes(plan, [1, 2], MEASURES, [9, 2, 1]).model_dump() == plan.model_dump()  # idempotent
    grown = ensure_base_indexes(plan, [1, 2, 3], MEASURES, [1, 2, 3, 9])
    layouts = {lay.id: lay for lay in grown.all_layouts()}
    assert layouts[1].base is False and layouts[1].col_order == [1, 2, *MEASURES]  # the old base stays, ordinary
    assert layouts[10001].base is True and layouts[10001].col_order == [1, 2, 3, *MEASURES]
    assert layouts[20_000_000_001].base is False and layouts[20_000_010_001].base is True
    assert layouts[20_000_010_001].col_order == [1, 2, 3, 9]


def test_set_rules_rejects_invalid_and_oversized_rules() -> None:
    bad = rule(g([1, 2]), AggregationGroup(includes=[1, 2], select_rule=SelectRule(mandatory_dims=[7])))
    with pytest.raises(InvalidIndexPlanError, match="aggregation group 2: mandatory dimension 7 is not in includes"):
        set_rules(IndexPlan(), bad, DIMS, MEASURES)
    with pytest.raises(TooManyLayoutsError, match="aggregation group 1"):
        set_rules(IndexPlan(), rule(g(list(range(13)))), range(13), MEASURES)


def test_every_layout_col_order_is_dims_then_sorted_measures() -> None:
    out = set_rules(IndexPlan(), rule(g([3, 1], measures=[100_002, 100_000]), WORKED), DIMS, MEASURES)
    for lay in out.all_layouts():
        dims = [c for c in lay.col_order if c < 100_000]
        measures = [c for c in lay.col_order if c >= 100_000]
        assert lay.col_order == dims + sorted(measures)
        assert isinstance(lay, Layout) and lay.id - lay.id % 10000 == lay.index_id


def test_a_start_id_given_with_the_rule_is_kept() -> None:
    out = set_rules(IndexPlan(), RuleBasedIndex(index_start_id=310000, aggregation_groups=[g([1])]), DIMS, MEASURES)
    assert out.rule_based_index is not None and out.rule_based_index.layout_id_mapping == [310001]
    assert out.next_aggregation_index_id == 320000


@st.composite
def rule_edits(draw: st.DrawFn) -> list[tuple[RuleBasedIndex, set[int]]]:
    edits = []
    for _ in range(draw(st.integers(1, 5))):
        groups = [
            g(
                draw(st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)),
                draw(st.none() | st.integers(1, 2)),
            )
            for _ in range(draw(st.integers(1, 2)))
        ]
        edits.append((rule(*groups), set(draw(st.lists(st.integers(0, 8), max_size=6)))))
    return edits


@settings(max_examples=150, deadline=None)
@given(rule_edits())
def test_rule_edits_keep_ids_and_never_reuse_one(edits: list[tuple[RuleBasedIndex, set[int]]]) -> None:
    plan, history = IndexPlan(), set[int]()
    for r, built_slots in edits:
        old = layouts_by_order(plan)
        known = {lay.id for i in plan.to_be_deleted_indexes for lay in i.layouts} | set(old.values())
        built = {sorted(old.values())[k] for k in built_slots if k < len(old)}
        out = set_rules(plan, r, DIMS, MEASURES, built)
        new = layouts_by_order(out)
        assert set(new) == {c.col_order for c in expand_rule(out.rule_based_index or r, DIMS, MEASURES)}
        assert all(new[k] == old[k] for k in set(new) & set(old))  # unchanged layouts keep their ids
        assert len(set(new.values())) == len(new)
        assert not (set(new.values()) - known) & history  # a fresh id was never handed out before
        for index in out.rule_based_indexes:
            assert all(index_id_of(lay.id) == index.id for lay in index.layouts)
        parked = {lay.id for i in out.to_be_deleted_indexes for lay in i.layouts}
        gone_built = {i for k, i in old.items() if k not in new and i in built}
        assert gone_built <= parked and not parked & set(new.values())
        history |= set(new.values()) | known
        plan = out


def test_a_dropped_layout_id_is_not_handed_out_again() -> None:
    plan = set_rules(IndexPlan(), rule(g([0, 2])), DIMS, MEASURES)  # (0,2) = 20001
    plan = set_rules(plan, rule(g([0])), DIMS, MEASURES, built_layout_ids=[20001])  # parked
    plan = set_rules(plan, rule(g([2, 0])), DIMS, MEASURES)  # (2,0): a second layout of index 20000
    assert layouts_by_order(plan)[(2, 0, *MEASURES)] == 20002
    plan = set_rules(plan, rule(g([0])), DIMS, MEASURES)  # 20002 was never built: dropped
    plan = set_rules(plan, rule(g([2, 0])), DIMS, MEASURES)
    assert layouts_by_order(plan)[(2, 0, *MEASURES)] == 20003
