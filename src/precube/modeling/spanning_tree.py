"""Which layout is built from which (reference §4.1).

Followed: `IndexEntity.fullyDerive` (same kind, child columns ⊆ parent columns), the default
(non-adaptive) `AdaptiveSpanningTree` / `NForestSpanningTree`: a layout with no parent among the
layouts being built reads the fewest-rows already-built layout that derives it, else the flat table;
any other layout waits until all its direct parents are built and reads the fewest-rows one.

Choices and deviations:
- The tree is over layouts, not indexes. Two different layouts with the same column set (another
  order or shard) derive each other: a built sibling holds exactly the rows the child needs, so it
  is the cheapest parent. Among the layouts being built such siblings never wait for each other
  (they share a layer, like the layouts of one Kylin index).
- `plan_parents` lets a layout read any earlier-layer layout that derives it, not only its direct
  parents, since estimated rows need not shrink along a chain; ties go to fewer columns, then lower id.
- Cost is quadratic in the number of distinct column sets being built (bit masks keep it cheap).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from precube.metadata.index_plan import Layout

_NOTHING_BUILT: Mapping[int, tuple[Layout, int]] = MappingProxyType({})


class _Columns:
    """Column sets as bit masks, computed once per layout (the same check as `fully_derives`)."""

    def __init__(self) -> None:
        self.bits: dict[int, int] = {}
        self.masks: dict[int, int] = {}  # by object identity: the layouts outlive this helper

    def mask(self, layout: Layout) -> int:
        mask = self.masks.get(id(layout))
        if mask is None:
            mask = 0
            for col in layout.col_order:
                mask |= 1 << self.bits.setdefault(col, len(self.bits))
            self.masks[id(layout)] = mask
        return mask

    def derives(self, parent: Layout, child: Layout) -> bool:
        if parent.id == child.id or parent.is_table_index != child.is_table_index:
            return False
        child_mask = self.mask(child)
        return self.mask(parent) & child_mask == child_mask


def fully_derives(parent: Layout, child: Layout) -> bool:
    """Whether `child` can be computed from `parent` alone: both agg or both table layouts, different
    layouts, and every column of the child (dims and measures alike) is in the parent."""
    if parent.id == child.id or parent.is_table_index != child.is_table_index:
        return False
    return set(child.col_order) <= set(parent.col_order)


def _cost(layout: Layout, rows: int | None) -> tuple[bool, int, int, int]:
    """Fewest rows first (unknown rows last), then fewest columns, then lowest id."""
    return rows is None, rows or 0, len(layout.col_order), layout.id


def choose_parent(child: Layout, built: Mapping[int, tuple[Layout, int]]) -> Layout | None:
    """The built layout (id → (layout, rows)) to read `child` from; None means the flat table."""
    candidates = [(layout, rows) for layout, rows in built.values() if fully_derives(layout, child)]
    if not candidates:
        return None
    return min(candidates, key=lambda c: _cost(*c))[0]


def _layer_of(to_build: Sequence[Layout]) -> dict[int, int]:
    """Layer per layout id: 0 without a strict superset among `to_build`, else 1 + the deepest one.

    The deepest strict superset is always a direct (minimal) parent, so this is "all direct parents
    in earlier layers" with each layout placed as early as possible.
    """
    columns = _Columns()
    shapes: dict[tuple[bool, int], list[Layout]] = {}
    for layout in to_build:
        shapes.setdefault((layout.is_table_index, columns.mask(layout)), []).append(layout)
    order = sorted(shapes, key=lambda s: -s[1].bit_count())
    depth: dict[tuple[bool, int], int] = {}
    for shape in order:  # every strict superset has more columns, so it is done before
        table, mask = shape
        depth[shape] = max(
            (d + 1 for (t, m), d in depth.items() if t == table and m != mask and m & mask == mask), default=0
        )
    return {layout.id: depth[shape] for shape, layouts in shapes.items() for layout in layouts}


def build_layers(
    to_build: Sequence[Layout], built: Mapping[int, tuple[Layout, int]] = _NOTHING_BUILT
) -> list[list[Layout]]:
    """Layouts grouped in build layers; inside a layer the widest layouts (likely parents) come first,
    then lower ids. `built` does not change the layers (it only offers parents to layer 0)."""
    del built  # accepted so callers pass the same arguments as to plan_parents
    first: dict[int, Layout] = {}
    for layout in to_build:
        first.setdefault(layout.id, layout)  # a layout listed twice is built once
    unique = list(first.values())
    layer = _layer_of(unique)
    layers: list[list[Layout]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for layout in unique:
        layers[layer[layout.id]].append(layout)
    return [sorted(lay, key=lambda x: (-len(x.col_order), x.id)) for lay in layers]


def plan_parents(
    to_build: Sequence[Layout],
    estimated_rows: Mapping[int, int],
    built: Mapping[int, tuple[Layout, int]] = _NOTHING_BUILT,
) -> dict[int, int | None]:
    """Parent layout id per layout to build (None = flat table), assuming `estimated_rows` (by layout
    id; a missing estimate ranks after every known one) for the layouts not built yet."""
    columns = _Columns()
    # readable layouts, cheapest first: the first one that derives a child is its parent
    available = sorted(((_cost(lay, rows), lay) for lay, rows in built.values()), key=lambda c: c[0])
    parents: dict[int, int | None] = {}
    for layer in build_layers(to_build):
        for child in layer:
            parent = next((lay for _, lay in available if columns.derives(lay, child)), None)
            parents[child.id] = parent.id if parent is not None else None
        # layouts of this layer become readable only for the next layers
        available += [(_cost(child, estimated_rows.get(child.id)), child) for child in layer]
        available.sort(key=lambda c: c[0])
    return parents
