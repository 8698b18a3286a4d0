"""Aggregation-group expansion (reference §3.3/§3.4), checked against a brute-force oracle and Kylin's own cases."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precube.metadata.index_plan import AggregationGroup, RuleBasedIndex, SelectRule
from precube.modeling.agg_group import (
    MAX_RULE_COMBINATION,
    RULE_LIMIT_MESSAGE,
    Cuboid,
    count_group,
    expand_group,
    expand_rule,
    preview,
    rule_dimensions,
    validate_group,
)
from precube.modeling.errors import InvalidIndexPlanError, TooManyLayoutsError

M0, M1, M2 = 100_000, 100_001, 100_002


def group(
    includes: list[int],
    mandatory: list[int] | None = None,
    hierarchy: list[list[int]] | None = None,
    joint: list[list[int]] | None = None,
    dim_cap: int | None = None,
    measures: list[int] | None = None,
) -> AggregationGroup:
    rule = SelectRule(
        mandatory_dims=mandatory or [], hierarchy_dims=hierarchy or [], joint_dims=joint or [], dim_cap=dim_cap
    )
    return AggregationGroup(includes=includes, measures=measures or [], select_rule=rule)


def dims_of(cuboids: list[Cuboid]) -> list[tuple[int, ...]]:
    return [c.dims for c in cuboids]


WORKED = group([0, 1, 2, 3, 4, 5], mandatory=[0], hierarchy=[[1, 2, 3]], joint=[[4, 5]])


def test_worked_example_yields_eight_cuboids_including_mandatory_only() -> None:
    cuboids = expand_group(WORKED, [M1, M0], None)
    assert dims_of(cuboids) == [
        (0,),
        (0, 1),
        (0, 1, 2),
        (0, 4, 5),
        (0, 1, 2, 3),
        (0, 1, 4, 5),
        (0, 1, 2, 4, 5),
        (0, 1, 2, 3, 4, 5),
    ]
    assert all(c.measures == (M0, M1) for c in cuboids)
    assert cuboids[1].col_order == (0, 1, M0, M1)
    assert count_group(WORKED) == 8
    rule = RuleBasedIndex(aggregation_groups=[WORKED])
    assert len(expand_rule(rule, range(6), [M0])) == 8  # the base cuboid is already among them


def test_mandatory_only_invalid_drops_the_mandatory_cuboid() -> None:
    cuboids = expand_group(WORKED, [M0], None, mandatory_only_valid=False)
    assert len(cuboids) == 7 and (0,) not in dims_of(cuboids)
    assert count_group(WORKED, mandatory_only_valid=False) == 7


def test_joint_inside_hierarchy_is_a_whole_level() -> None:
    g = group([1, 2, 3, 4], hierarchy=[[1, 2, 3]], joint=[[2, 4]])
    assert sorted(dims_of(expand_group(g, [M0], None))) == sorted([(1,), (2, 4), (1, 2, 4), (1, 2, 3, 4)])
    # Kylin's estimate formula does not know the overlap: (3+1) * 2 - 1
    assert count_group(g) == 7
    # the cap counts the joint and the hierarchy both touched by {2,4}
    assert dims_of(expand_group(g, [M0], 1)) == [(1,)]
    assert count_group(g, global_dim_cap=1) == 1


def test_dims_follow_includes_order_and_group_measures_win() -> None:
    g = group([5, 3, 1], mandatory=[1], measures=[M2, M0])
    cuboids = expand_group(g, [M1], None)
    assert dims_of(cuboids) == [(1,), (5, 1), (3, 1), (5, 3, 1)]
    assert {c.measures for c in cuboids} == {(M0, M2)}


def test_group_dim_cap_overrides_global() -> None:
    g = group([1, 2, 3, 4], dim_cap=1)
    assert len(expand_group(g, [M0], 3)) == 4
    assert len(expand_group(group([1, 2, 3, 4]), [M0], 2)) == 10
    assert len(expand_group(group([1, 2, 3, 4], dim_cap=0), [M0], 2)) == 10  # 0 = use the global cap


def test_a_dim_cap_avoids_enumerating_every_subset() -> None:
    g = group(list(range(60)), dim_cap=2)
    assert len(expand_group(g, [M0], None)) == 60 + 60 * 59 // 2
    assert count_group(g) == 60 + 60 * 59 // 2


# Kylin CuboidSchedulerTest (index plan 82fa7671…): per-group and whole-rule counts for dim caps 3, 2, 1.
KYLIN_DIMS = [9, 13, 2, 8, 5, 6, 7, 3, 4, 16, 15, 14, 17, 22, 23, 24, 25, 18, 19, 20, 21]
KYLIN_MEASURES = [100000, 100001, 100002, 100003, 100004, 100005, 100007, 100008, 100009, 100010, 100011]


@pytest.mark.parametrize(("cap", "first", "second", "total"), [(3, 19, 15, 31), (2, 15, 11, 24), (1, 6, 5, 11)])
def test_kylin_cuboid_scheduler_dim_caps(cap: int, first: int, second: int, total: int) -> None:
    g1 = group([2, 8, 3, 4, 16, 5, 6, 7], hierarchy=[[5, 6, 7, 8]], joint=[[3, 4, 16]], dim_cap=cap)
    g2 = group(
        [2, 8, 3, 4, 16, 5, 6, 7, 9, 18, 19, 20, 21, 13, 14, 15, 17, 22, 23, 24, 25],
        mandatory=[2],
        joint=[[5, 6, 7, 8], [3, 4, 16], [9, 18, 19, 20, 21], [13, 14, 15, 17, 22, 23, 24, 25]],
        dim_cap=cap,
    )
    assert len(expand_group(g1, KYLIN_MEASURES, None)) == count_group(g1) == first
    assert len(expand_group(g2, KYLIN_MEASURES, None)) == count_group(g2) == second
    rule = RuleBasedIndex(dimensions=KYLIN_DIMS, measures=KYLIN_MEASURES, aggregation_groups=[g1, g2])
    assert len(expand_rule(rule, KYLIN_DIMS, KYLIN_MEASURES)) == total
    assert preview(rule, KYLIN_DIMS, KYLIN_MEASURES).total == total


def test_kylin_different_measures_per_group() -> None:
    """Groups 2-6 of Kylin's ncube_rule_different_measure.json (RuleBasedCuboidDescTest)."""
    inc = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15]
    m2, m3 = [100000, 100001, 100004, 100005, 100016], [100011, 100012, 100013, 100014]
    m4, m5, m6 = [100005, 100007, 100008], [100000, 100001, 100002], [100013, 100014, 100015, 100016]
    rule = RuleBasedIndex(
        aggregation_groups=[
            group(inc, [0, 6], [[1, 2, 3], [4, 5]], [[7, 8], [9, 13]], measures=m2),
            group(inc, [0, 1, 2, 3], [[4, 5], [6, 7]], [[8, 9], [13, 14]], measures=m3),
            group([16, 17, 18, 19, 20], hierarchy=[[16, 17, 18]], joint=[[19, 20]], measures=m4),
            group([16, 17, 18, 19, 20], mandatory=[16], joint=[[19, 20]], measures=m5),
            group([16, 17, 18, 19, 20], mandatory=[19], hierarchy=[[16, 17, 18]], measures=m6),
        ]
    )
    all_measures = sorted({*m2, *m3, *m4, *m5, *m6})
    cols = {c.col_order for c in expand_rule(rule, [*inc, 16, 17, 18, 19, 20], all_measures)}
    present = [
        ((0, 6), m2),
        ((0, 6, 14), m2),
        ((0, 1, 2, 6), m2),
        ((0, 4, 5, 6, 9, 13), m2),
        ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14), m2),
        ((0, 1, 2, 3), m3),
        ((0, 1, 2, 3, 6, 7, 13, 14), m3),
        ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15), m3),
        ((16,), m4),
        ((16, 17, 18, 19, 20), m4),
        ((19, 20), m4),
        ((16,), m5),
        ((16, 17, 19, 20), m5),
        ((19,), m6),
        ((16, 17, 19, 20), m6),
    ]
    absent = [
        ((1,), m2),
        ((0, 6, 7), m2),
        ((0, 3, 6), m2),
        ((0, 5, 6, 9), m2),
        ((0,), m3),
        ((0, 1, 2, 3, 5), m3),
        ((0, 1, 2, 3, 13), m3),
        ((17,), m4),
        ((16, 19), m4),
        ((16, 17, 18, 19), m4),
        ((19,), m5),
        ((16, 19), m5),
        ((16,), m6),
        ((17, 19), m6),
        ((18, 19, 20), m6),
    ]
    for dims, measures in present:
        assert (*dims, *measures) in cols
    for dims, measures in absent:
        assert (*dims, *measures) not in cols


def test_rule_dimensions_merges_from_last_group() -> None:
    groups = [group(i) for i in ([1, 2, 3], [4, 3], [2, 4], [5, 4])]
    assert rule_dimensions(groups) == [1, 2, 5, 4, 3]
    kylin = [group([5, 18]), group([1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 16, 17, 18])]
    assert rule_dimensions(kylin) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 16, 17, 18]
    assert rule_dimensions([]) == []


def test_expand_rule_base_cuboid_and_duplicates() -> None:
    g1, g2 = group([2, 1, 3], mandatory=[2], joint=[[1, 3]]), group([2, 1], dim_cap=1)
    rule = RuleBasedIndex(aggregation_groups=[g1, g2])
    cuboids = expand_rule(rule, [1, 2, 3], [M0])
    # g1: (2,), (2,1,3); g2 adds (1,) ((2,) collapses); the base (2,1,3) is already there
    assert dims_of(cuboids) == [(2,), (2, 1, 3), (1,)]
    no_base = RuleBasedIndex(aggregation_groups=[group([1, 2], dim_cap=1)], base_layout_enabled=False)
    assert dims_of(expand_rule(no_base, [1, 2], [M0])) == [(1,), (2,)]
    with_base = no_base.model_copy(update={"base_layout_enabled": None})
    assert dims_of(expand_rule(with_base, [1, 2], [M0])) == [(1,), (2,), (1, 2)]
    assert expand_rule(RuleBasedIndex(), [1], [M0]) == []


def test_per_group_limit_names_the_group() -> None:
    ok = group(list(range(12)))  # 4095 cuboids
    assert len(expand_group(ok, [M0], None)) == 4095
    rule = RuleBasedIndex(aggregation_groups=[ok, group(list(range(13)))])
    with pytest.raises(TooManyLayoutsError, match=r"aggregation group 2: .*maximum number\(4096\).*8191"):
        expand_rule(rule, range(13), [M0])
    with pytest.raises(TooManyLayoutsError, match="aggregation group 1"):
        expand_group(ok, [M0], None, max_combination=100)
    result = preview(rule, range(13), [M0])
    assert result.group_counts == (4095, 8191) and result.groups_over_limit == (2,)
    assert result.exceeds_limit and not result.total_exact


def test_rule_limit_uses_kylin_message() -> None:
    groups = [group(list(range(12 * i, 12 * i + 12))) for i in range(11)]  # 11 x 4095 distinct
    rule = RuleBasedIndex(aggregation_groups=groups)
    with pytest.raises(TooManyLayoutsError) as err:
        expand_rule(rule, range(132), [M0])
    assert str(err.value) == RULE_LIMIT_MESSAGE
    assert "exceeds the maximum number(40960)" in RULE_LIMIT_MESSAGE
    result = preview(rule, range(132), [M0])
    assert result.total == 11 * 4095 + 1 and result.total_exact and result.exceeds_limit
    assert result.total > MAX_RULE_COMBINATION and not result.groups_over_limit


@pytest.mark.parametrize(
    ("g", "message"),
    [
        (group([]), "aggregation group 2: includes is empty"),
        (group([1, 7], mandatory=[7, 9]), "aggregation group 2: mandatory dimension 9 is not in includes"),
        (group([1, 99]), "dimension 99 in includes is not a dimension of the model"),
        (group([1, 1]), "includes contains a duplicate"),
        (group([1, 2], measures=[M0, 5]), "measure 5 is not a measure of the model"),
        (group([1, 2, 3], hierarchy=[[1, 4]]), "hierarchy dimension 4 is not in includes"),
        (group([1, 2, 3], joint=[[1]]), "joint [1] needs at least 2"),
        (group([1, 2, 3], hierarchy=[[1, 2], [2, 3]]), "dimension 2 is in more than one hierarchy"),
        (group([1, 2, 3], joint=[[1, 2], [2, 3]]), "dimension 2 is in more than one joint"),
        (group([1, 2, 3, 4], hierarchy=[[1, 2, 3]], joint=[[1, 2]]), "overlaps more than one dimension of hierarchy"),
        (group([1, 2, 3, 4], hierarchy=[[1, 2], [3, 4]], joint=[[1, 3]]), "overlaps more than one hierarchy"),
        (group([1, 2], dim_cap=-1), "dim_cap -1 is negative"),
    ],
)
def test_validate_group_names_group_and_value(g: AggregationGroup, message: str) -> None:
    with pytest.raises(InvalidIndexPlanError) as err:
        validate_group(g, 2, range(10), [M0, M1])
    assert message in str(err.value)
    assert str(err.value).startswith("aggregation group 2: ")


def test_expand_rule_validates_groups() -> None:
    rule = RuleBasedIndex(aggregation_groups=[group([1, 2]), group([1, 7], mandatory=[7, 8])])
    with pytest.raises(InvalidIndexPlanError, match="aggregation group 2: mandatory dimension 8 is not in includes"):
        expand_rule(rule, range(10), [M0])
    stale = RuleBasedIndex(dimensions=[1], aggregation_groups=[group([1, 2])])
    with pytest.raises(InvalidIndexPlanError, match="dimension 2 is not in the rule's dimensions"):
        expand_rule(stale, range(10), [M0])


def test_mandatory_inside_hierarchy_or_joint_as_in_kylin_rule_files() -> None:
    """Kylin 5's ncube_rule_different_measure.json has mandatory dim 2 in hierarchy [2, 3]: allowed."""
    g = group([1, 2, 3], mandatory=[2], hierarchy=[[2, 3]])
    validate_group(g, 1, range(5), [M0])
    assert {c.dims for c in expand_group(g, [M0], None)} == {(2,), (1, 2), (2, 3), (1, 2, 3)}
    assert count_group(g, global_dim_cap=9) == 4  # with a cap the count is exact
    j = group([1, 2, 3], mandatory=[1], joint=[[1, 2]])
    assert {c.dims for c in expand_group(j, [M0], None)} == {(1, 2), (1, 2, 3)}


# ---------------------------------------------------------------- brute-force oracle over all subsets


@st.composite
def groups(draw: st.DrawFn) -> tuple[AggregationGroup, int | None, bool]:
    dims = draw(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True))
    rest = list(dims)
    mandatory = [rest.pop() for _ in range(draw(st.integers(0, min(2, len(rest)))))]
    hierarchies: list[list[int]] = []
    joints: list[list[int]] = []
    normals: list[int] = []
    while rest:
        kind = draw(st.sampled_from(["normal", "hierarchy", "joint"]))
        size = draw(st.integers(2, 4))
        if kind == "normal" or len(rest) < 2:
            normals.append(rest.pop())
        else:
            chunk, rest = rest[:size], rest[size:]
            (hierarchies if kind == "hierarchy" else joints).append(chunk)
    for h in hierarchies:  # sometimes one level of a hierarchy is a joint with free dims
        if draw(st.booleans()) and normals:
            level = draw(st.sampled_from(h))
            joints.append([level, normals.pop()])
    grouped = [d for unit in hierarchies + joints for d in unit]
    if grouped and draw(st.booleans()):  # Kylin allows (with a warning) a mandatory dim inside a unit
        mandatory.append(draw(st.sampled_from(grouped)))
    cap = draw(st.none() | st.integers(0, 4))
    g = group(dims, mandatory, hierarchies, joints, dim_cap=cap)
    return g, draw(st.none() | st.integers(0, 4)), draw(st.booleans())


def oracle(g: AggregationGroup, global_cap: int | None, mandatory_only_valid: bool) -> set[frozenset[int]]:
    """Filter every subset of includes by the rules of reference §3.3 (v2: a joint that replaces a
    hierarchy level may be present without the levels above it)."""
    rule = g.select_rule
    mandatory = set(rule.mandatory_dims)
    joints = [set(j) for j in rule.joint_dims]
    hiers = []
    for h in rule.hierarchy_dims:
        prefixes: list[set[int]] = [set()]
        acc: set[int] = set()
        for d in h:
            acc |= next((j for j in joints if d in j), {d})
            prefixes.append(set(acc))
        hiers.append((prefixes, acc))
    used = mandatory.union(*joints, *(set(h) for h in rule.hierarchy_dims))
    normals = set(g.includes) - used
    cap = rule.dim_cap if rule.dim_cap else (global_cap or 0)
    found = set()
    includes = g.includes
    for bits in range(1 << len(includes)):
        s = {d for i, d in enumerate(includes) if bits >> i & 1}
        if not mandatory <= s or not s or (s == mandatory and not mandatory_only_valid):
            continue
        if any(j & s and not j <= s for j in joints):
            continue
        ok = True
        for prefixes, full in hiers:
            joined = set().union(*(j for j in joints if j <= s and j <= full))
            ok = ok and any(s & full == p | joined for p in prefixes)
        if not ok:
            continue
        weight = len(normals & s) + sum(1 for j in joints if j & s) + sum(1 for _, full in hiers if full & s)
        if cap > 0 and weight > cap:
            continue
        found.add(frozenset(s))
    return found


@settings(max_examples=400, deadline=None)
@given(groups())
def test_expansion_matches_brute_force(case: tuple[AggregationGroup, int | None, bool]) -> None:
    g, global_cap, mandatory_only_valid = case
    validate_group(g, 1, range(31), [M0])
    cuboids = expand_group(g, [M0], global_cap, mandatory_only_valid)
    expected = oracle(g, global_cap, mandatory_only_valid)
    assert {frozenset(c.dims) for c in cuboids} == expected
    assert len(cuboids) == len(expected)
    position = {d: i for i, d in enumerate(g.includes)}
    assert all(list(c.dims) == sorted(c.dims, key=position.__getitem__) for c in cuboids)
    capped = bool(g.select_rule.dim_cap) or bool(global_cap)
    rule = g.select_rule
    overlap = any(set(j) & set(h) for j in rule.joint_dims for h in rule.hierarchy_dims)
    # Kylin's formula (the uncapped count) over-counts when units overlap each other or the mandatory dims
    mandatory_in_unit = bool(set(rule.mandatory_dims) & {d for u in rule.joint_dims + rule.hierarchy_dims for d in u})
    if capped or not (overlap or mandatory_in_unit):
        assert count_group(g, global_cap, mandatory_only_valid) == len(expected)
