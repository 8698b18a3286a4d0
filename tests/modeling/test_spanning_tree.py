"""Spanning tree: derivation, parent choice and build layers (reference §4.1), against brute force."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from precube.metadata.index_plan import TABLE_INDEX_START_ID, Layout
from precube.modeling.spanning_tree import build_layers, choose_parent, fully_derives, plan_parents

M0, M1 = 100_000, 100_001
TABLE = TABLE_INDEX_START_ID


def lay(layout_id: int, *cols: int) -> Layout:
    return Layout(id=layout_id, col_order=list(cols))


def test_fully_derives() -> None:
    base = lay(1, 1, 2, 3, M0, M1)
    assert fully_derives(base, lay(10001, 1, 3, M0))
    assert fully_derives(base, lay(10002, 3, 2, 1, M1, M0))  # same set, another order: derivable
    assert not fully_derives(base, base)
    assert not fully_derives(lay(10001, 1, 3, M0), base)
    assert not fully_derives(lay(20001, 1, 2, M0), lay(30001, 1, M1))  # a measure it lacks
    assert not fully_derives(lay(20001, 1, 2, M0), lay(30001, 4, M0))  # a dimension it lacks
    assert not fully_derives(lay(TABLE + 1, 1, 2, 3), lay(40001, 1, 2))  # table never feeds agg
    assert fully_derives(lay(TABLE + 1, 1, 2, 3), lay(TABLE + 10001, 2))


def test_choose_parent_fewest_rows_then_columns_then_id() -> None:
    child = lay(90001, 1, M0)
    built = {
        1: (lay(1, 1, 2, 3, M0), 50),
        10001: (lay(10001, 1, 2, M0), 50),
        20001: (lay(20001, 2, 1, M0), 50),
        30001: (lay(30001, 1, 4, M0, M1), 10),
        40001: (lay(40001, 2, M0), 1),  # cannot derive the child
    }
    assert choose_parent(child, built) == built[30001][0]
    del built[30001]
    assert choose_parent(child, built) == built[10001][0]  # 2 dims + 1 measure beats 4 columns; lower id wins
    assert choose_parent(lay(50001, 5, M0), built) is None


def test_layers_of_a_small_cube() -> None:
    base = lay(1, 1, 2, 3, M0)
    ab, ab2, bc, a, c = (
        lay(10001, 1, 2, M0),
        lay(10002, 2, 1, M0),
        lay(20001, 2, 3, M0),
        lay(30001, 1, M0),
        lay(40001, 3, M0),
    )
    layers = build_layers([c, a, bc, ab2, ab, base])
    assert [[x.id for x in layer] for layer in layers] == [[1], [10001, 10002, 20001], [30001, 40001]]
    # with the base already built, its children start the build and read it
    assert [[x.id for x in layer] for layer in build_layers([a, ab, c])] == [[10001, 40001], [30001]]
    parents = plan_parents([ab, ab2, a, c], {10001: 40, 10002: 30, 30001: 5, 40001: 7}, {1: (base, 100)})
    assert parents == {10001: 1, 10002: 1, 30001: 10002, 40001: 1}
    assert plan_parents([a], {}) == {30001: None}
    assert build_layers([]) == []


# ---------------------------------------------------------------- brute-force oracle


@st.composite
def layouts(draw: st.DrawFn) -> list[Layout]:
    out = []
    for i in range(draw(st.integers(0, 14))):
        table = draw(st.booleans()) and draw(st.booleans())
        dims = draw(st.lists(st.integers(0, 4), min_size=1, max_size=5, unique=True))
        measures = [] if table else draw(st.lists(st.sampled_from([M0, M1]), max_size=2, unique=True))
        start = TABLE if table else 0
        out.append(Layout(id=start + (i + 1) * 10000 + draw(st.integers(1, 3)), col_order=dims + sorted(measures)))
    return out


def strictly(parent: Layout, child: Layout) -> bool:
    return fully_derives(parent, child) and len(parent.col_order) > len(set(child.col_order))


def oracle_layers(nodes: list[Layout]) -> dict[int, int]:
    """Fixpoint: a layout is placed once all its direct (minimal) parents are placed, one layer below."""
    direct = {}
    for y in nodes:
        ups = [x for x in nodes if strictly(x, y)]
        direct[y.id] = [x for x in ups if not any(strictly(x, z) for z in ups)]
    layer: dict[int, int] = {}
    while len(layer) < len(nodes):
        ready = {y.id for y in nodes if y.id not in layer and all(p.id in layer for p in direct[y.id])}
        for y_id in ready:
            layer[y_id] = max((layer[p.id] + 1 for p in direct[y_id]), default=0)
    return layer


@settings(max_examples=300, deadline=None)
@given(layouts(), layouts(), st.data())
def test_layers_and_parents_match_brute_force(to_build: list[Layout], old: list[Layout], data: st.DataObject) -> None:
    to_build = list({x.id: x for x in to_build}.values())
    built = {x.id: (x, data.draw(st.integers(1, 100))) for x in old if x.id not in {y.id for y in to_build}}
    rows = {x.id: data.draw(st.integers(1, 100)) for x in to_build}
    layers = build_layers(to_build, built)
    expected = oracle_layers(to_build)
    assert {x.id: k for k, layer in enumerate(layers) for x in layer} == expected
    for layer in layers:
        assert layer == sorted(layer, key=lambda x: (-len(x.col_order), x.id))
    parents = plan_parents(to_build, rows, built)
    known = {**{i: (x, r) for i, (x, r) in built.items()}, **{x.id: (x, rows[x.id]) for x in to_build}}
    for y in to_build:
        options = [
            (r, len(x.col_order), x.id)
            for x, r in known.values()
            if fully_derives(x, y) and (x.id in built or expected[x.id] < expected[y.id])
        ]
        assert parents[y.id] == (min(options)[2] if options else None)
    for k, layer in enumerate(layers):  # layer 0 reads built layouts or the flat table
        for y in layer:
            if k == 0:
                assert parents[y.id] is None or parents[y.id] in built
                chosen = choose_parent(y, built)
                assert parents[y.id] == (chosen.id if chosen else None)
