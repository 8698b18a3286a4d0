"""Layout ids and index-plan edits (reference §3.1, §3.4; seed 002 "IndexPlan"). Every function
returns a new IndexPlan and leaves its input untouched.

Followed: `RuleBasedIndex.genCuboidLayouts` (an identical layout — previous rule layout, explicit
layout, to-be-deleted layout, in that order — keeps its id; a black-listed layout regenerated keeps its
id and stays black-listed; a new layout of an existing index gets `index id + next_layout_offset`, else
`index_start_id + 1`, +10,000 per new index; rule layouts are `manual`), `IndexPlan.updateNextId`,
`createBaseAggIndex`/`createBaseTableIndex`, seed 002 (an old base becomes an ordinary layout).
Deviations: next ids and layout offsets never go down, so no id is handed out twice (seed 002: a
regenerated layout gets a brand-new id); disappearing rule layouts are kept in `to_be_deleted_indexes`
only when a segment holds them (`built_layout_ids`); the black list keeps only ids of the current
expansion (a layout that left the rule and comes back is new, seed 002).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence

from precube.metadata.entity import now_ms
from precube.metadata.index_plan import (
    INDEX_ID_STEP,
    TABLE_INDEX_START_ID,
    Index,
    IndexPlan,
    Layout,
    RuleBasedIndex,
    index_id_of,
    is_table_index,
)
from precube.modeling.agg_group import expand_rule, rule_dimensions, rule_measures
from precube.modeling.errors import InvalidIndexPlanError

# col_order, shard_by, sort_by, partition_by: what makes two layouts the same layout
_Key = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def _key(lay: Layout) -> _Key:
    return (
        tuple(lay.col_order),
        tuple(lay.shard_by_columns),
        tuple(lay.sort_by_columns),
        tuple(lay.partition_by_columns),
    )


def _plain_key(col_order: Sequence[int]) -> _Key:
    return (tuple(col_order), (), (), ())


def _layouts(indexes: Iterable[Index]) -> Iterator[tuple[Index, Layout]]:
    return ((index, layout) for index in indexes for layout in index.layouts)


def _every_index(plan: IndexPlan) -> list[Index]:
    return [*plan.indexes, *plan.rule_based_indexes, *plan.to_be_deleted_indexes]


def _all_ids(plan: IndexPlan) -> set[int]:
    """Every id the plan ever handed out and still remembers (ids in the rule mapping included)."""
    ids = {index.id for index in _every_index(plan)} | {lay.id for _, lay in _layouts(_every_index(plan))}
    if plan.rule_based_index is not None:
        ids |= set(plan.rule_based_index.layout_id_mapping) | set(plan.rule_based_index.layout_black_list)
    return ids


def _offsets(plan: IndexPlan) -> dict[int, int]:
    """Next layout offset per index id, over every index object and every id the plan remembers."""
    offsets: dict[int, int] = {}
    for index in _every_index(plan):
        offsets[index.id] = max(offsets.get(index.id, 1), index.next_layout_offset)
    for i in _all_ids(plan):
        offsets[index_id_of(i)] = max(offsets.get(index_id_of(i), 1), i % INDEX_ID_STEP + 1)
    return offsets


def _finish(plan: IndexPlan, offsets: dict[int, int]) -> IndexPlan:
    """Offsets and next ids never go down, so the id of a dropped layout is never handed out again."""
    for index in _every_index(plan):
        index.next_layout_offset = max(index.next_layout_offset, offsets.get(index.id, 1))
    ids = _all_ids(plan)  # IndexPlan.updateNextId: max existing id + 10,000, rounded down to an index id
    agg = [index_id_of(i) + INDEX_ID_STEP for i in ids if not is_table_index(i)]
    table = [index_id_of(i) + INDEX_ID_STEP for i in ids if is_table_index(i)]
    plan.next_aggregation_index_id = max([plan.next_aggregation_index_id, 0, *agg])
    plan.next_table_index_id = max([plan.next_table_index_id, TABLE_INDEX_START_ID, *table])
    return plan


def _identity(dims: Iterable[int], measures: Iterable[int], table: bool) -> tuple[bool, frozenset[int], frozenset[int]]:
    return table, frozenset(dims), frozenset(measures)  # what makes two layouts belong to one index


class _Allocator:
    """New layout ids for one edit: a layout of an existing index (same kind, same column sets) gets
    the index's next offset; otherwise a new index from the plan's next id."""

    def __init__(self, plan: IndexPlan) -> None:
        self.offsets = _offsets(plan)
        _finish(plan, self.offsets)
        self.next = {False: plan.next_aggregation_index_id, True: plan.next_table_index_id}  # by "is table"
        self.index_of: dict[tuple[bool, frozenset[int], frozenset[int]], int] = {}
        for index in _every_index(plan):
            self.index_of.setdefault(_identity(index.dimensions, index.measures, index.is_table_index), index.id)

    def reuse(self, layout_id: int, dims: Sequence[int], measures: Sequence[int]) -> None:
        """Record an id kept from an earlier layout, so later layouts of its index come after it."""
        index = index_id_of(layout_id)
        self.index_of.setdefault(_identity(dims, measures, is_table_index(layout_id)), index)
        self.offsets[index] = max(self.offsets.get(index, 1), layout_id % INDEX_ID_STEP + 1)

    def new_id(self, dims: Sequence[int], measures: Sequence[int], table: bool) -> int:
        identity = _identity(dims, measures, table)
        index = self.index_of.get(identity)
        if index is None:
            index = self.index_of[identity] = self.next[table]
            self.next[table] += INDEX_ID_STEP
        offset = self.offsets.get(index, 1)
        if offset >= INDEX_ID_STEP:
            raise InvalidIndexPlanError(f"index {index} has no free layout id left (at most {INDEX_ID_STEP - 1})")
        self.offsets[index] = offset + 1
        return index + offset


def _by_id(indexes: list[Index]) -> dict[int, Index]:
    return {index.id: index for index in indexes}


def _listed(indexes: dict[int, Index]) -> list[Index]:
    """Back to the stored form: indexes and their layouts by id."""
    for index in indexes.values():
        index.layouts.sort(key=lambda lay: lay.id)
    return sorted(indexes.values(), key=lambda i: i.id)


def _put(indexes: dict[int, Index], layout: Layout, dims: Sequence[int], measures: Sequence[int]) -> None:
    """Add `layout` to its index (created when missing), replacing a layout of the same id."""
    index = indexes.get(layout.index_id)
    if index is None:
        index = indexes[layout.index_id] = Index(id=layout.index_id, dimensions=list(dims), measures=list(measures))
    index.layouts = [*(lay for lay in index.layouts if lay.id != layout.id), layout]
    index.next_layout_offset = max(index.next_layout_offset, layout.id % INDEX_ID_STEP + 1)


def _take(indexes: dict[int, Index], layout_id: int) -> tuple[Index, Layout] | None:
    """Remove a layout (and its index when it becomes empty); return both, or None if absent."""
    index = indexes.get(index_id_of(layout_id))
    layout = next((lay for lay in index.layouts if lay.id == layout_id), None) if index else None
    if index is None or layout is None:
        return None
    index.layouts = [lay for lay in index.layouts if lay.id != layout_id]
    if not index.layouts:
        del indexes[index.id]
    return index, layout


def _blacklisted(old: RuleBasedIndex | None, mandatory_only_valid: bool) -> dict[_Key, int]:
    """Black-listed layouts of the previous rule, regenerated from it (precube stores only live ones)."""
    if old is None or not old.layout_black_list or not old.layout_id_mapping:
        return {}
    dims = old.dimensions or [d for g in old.aggregation_groups for d in g.includes]
    measures = old.measures or sorted({m for g in old.aggregation_groups for m in g.measures})
    try:
        cuboids = expand_rule(old, dims, measures, mandatory_only_valid)
    except InvalidIndexPlanError:
        return {}  # the old rule no longer expands: its black list cannot be matched (a major model change)
    if len(cuboids) != len(old.layout_id_mapping):
        return {}
    black = set(old.layout_black_list)
    return {_plain_key(c.col_order): i for c, i in zip(cuboids, old.layout_id_mapping, strict=True) if i in black}


def set_rules(
    plan: IndexPlan,
    rule: RuleBasedIndex,
    model_dims: Collection[int],
    model_measures: Collection[int],
    built_layout_ids: Collection[int] = (),
    *,
    mandatory_only_valid: bool = True,
) -> IndexPlan:
    """Replace the aggregation groups: validate, expand, assign ids (kept for unchanged layouts).

    `rule.dimensions`/`measures` are recomputed from the groups; `layout_id_mapping` is rebuilt
    (ids in expansion order, black-listed ones included); rule layouts that disappear go to
    `to_be_deleted_indexes` when in `built_layout_ids`, else are dropped.
    """
    new_rule = rule.model_copy(deep=True)
    groups = new_rule.aggregation_groups
    new_rule.dimensions = rule_dimensions(groups)
    new_rule.measures = rule_measures(groups, model_measures) if groups else []
    cuboids = expand_rule(new_rule, model_dims, model_measures, mandatory_only_valid)  # validates every group

    out = plan.model_copy(deep=True)
    old = out.rule_based_index
    black = set(new_rule.layout_black_list) | set(old.layout_black_list if old else ())
    previous = {_key(lay): lay for _, lay in _layouts(out.rule_based_indexes)}
    explicit = {_key(lay): lay for _, lay in _layouts(out.indexes) if not lay.is_table_index}
    deleted = {_key(lay): lay for _, lay in _layouts(out.to_be_deleted_indexes) if not lay.is_table_index}
    black_keys = _blacklisted(old, mandatory_only_valid)
    alloc = _Allocator(out)
    # a start given with the rule (e.g. Kylin metadata) is kept when it is above every id in the plan
    alloc.next[False] = new_rule.index_start_id = max(alloc.next[False], index_id_of(new_rule.index_start_id))
    mapping: list[int] = []
    rule_indexes: dict[int, Index] = {}
    to_be_deleted = _by_id(out.to_be_deleted_indexes)
    for cuboid in cuboids:
        key = _plain_key(cuboid.col_order)
        prev = previous.get(key)
        if prev is not None or key in explicit:
            layout_id = (prev or explicit[key]).id
        elif key in deleted:
            layout_id = deleted.pop(key).id
            _take(to_be_deleted, layout_id)  # in use again: no longer to be deleted
        elif key in black_keys:
            layout_id = black_keys[key]
            black.add(layout_id)
        else:
            layout_id = alloc.new_id(cuboid.dims, cuboid.measures, table=False)
        alloc.reuse(layout_id, cuboid.dims, cuboid.measures)
        mapping.append(layout_id)
        if layout_id not in black:
            update_time = prev.update_time if prev is not None else now_ms()
            layout = Layout(id=layout_id, col_order=list(cuboid.col_order), manual=True, update_time=update_time)
            _put(rule_indexes, layout, cuboid.dims, cuboid.measures)

    live = {lay.id for _, lay in _layouts(rule_indexes.values())} | {lay.id for _, lay in _layouts(out.indexes)}
    built = set(built_layout_ids)
    for index, layout in _layouts(out.rule_based_indexes):
        if layout.id not in live and layout.id in built:
            _put(to_be_deleted, layout, index.dimensions, index.measures)
    new_rule.layout_id_mapping = mapping
    new_rule.layout_black_list = sorted(black & set(mapping))
    new_rule.last_modify_time = now_ms()
    out.rule_based_index = new_rule
    out.rule_based_indexes = _listed(rule_indexes)
    out.to_be_deleted_indexes = _listed(to_be_deleted)
    return _finish(out, alloc.offsets)


def _check_columns(what: str, columns: Sequence[int], allowed: Collection[int]) -> None:
    known = set(allowed)
    seen: set[int] = set()
    for c in columns:
        if c not in known:
            raise InvalidIndexPlanError(f"{what} {c} is not a {what} of the model")
        if c in seen:
            raise InvalidIndexPlanError(f"{what} {c} is given twice")
        seen.add(c)


def _add_explicit(
    plan: IndexPlan,
    dims: Sequence[int],
    measures: Sequence[int],
    shard_by: Sequence[int],
    sort_by: Sequence[int],
    table: bool,
) -> tuple[IndexPlan, Layout]:
    for field, cols in [("shard_by", shard_by), ("sort_by", sort_by)]:
        for c in cols:
            if c not in dims:
                raise InvalidIndexPlanError(f"{field} column {c} is not among the index's columns {list(dims)}")
    out = plan.model_copy(deep=True)
    col_order = [*dims, *measures]
    key: _Key = (tuple(col_order), tuple(shard_by), tuple(sort_by), ())
    for _, lay in _layouts([*out.indexes, *out.rule_based_indexes]):
        if lay.is_table_index == table and _key(lay) == key:
            raise InvalidIndexPlanError(f"an identical layout already exists: layout {lay.id}")
    deleted = (lay for _, lay in _layouts(out.to_be_deleted_indexes) if lay.is_table_index == table)
    restored = next((lay for lay in deleted if _key(lay) == key), None)
    if restored is not None:
        to_be_deleted = _by_id(out.to_be_deleted_indexes)
        _take(to_be_deleted, restored.id)  # the same layout again: its data is still valid
        out.to_be_deleted_indexes = _listed(to_be_deleted)
        layout_id = restored.id
    else:
        layout_id = _Allocator(out).new_id(dims, measures, table)
    layout = Layout(
        id=layout_id, col_order=col_order, shard_by_columns=list(shard_by), sort_by_columns=list(sort_by), manual=True
    )
    explicit = _by_id(out.indexes)
    _put(explicit, layout, dims, measures)
    out.indexes = _listed(explicit)
    return _finish(out, _offsets(plan)), layout


def add_agg_index(
    plan: IndexPlan,
    dims: Sequence[int],
    measures: Sequence[int],
    shard_by: Sequence[int] = (),
    sort_by: Sequence[int] = (),
    *,
    model_dims: Collection[int],
    model_measures: Collection[int],
) -> tuple[IndexPlan, Layout]:
    """A user-defined agg layout: col_order = `dims` as given, then measures ascending (manual=True)."""
    _check_columns("dimension", dims, model_dims)
    _check_columns("measure", measures, model_measures)
    if not dims and not measures:
        raise InvalidIndexPlanError("an aggregate index needs at least one dimension or measure")
    return _add_explicit(plan, dims, sorted(measures), shard_by, sort_by, table=False)


def add_table_index(
    plan: IndexPlan,
    columns: Sequence[int],
    shard_by: Sequence[int] = (),
    sort_by: Sequence[int] = (),
    *,
    model_columns: Collection[int],
) -> tuple[IndexPlan, Layout]:
    """A user-defined table (detail) layout; ids from `next_table_index_id` (20,000,000,000 up)."""
    _check_columns("column", columns, model_columns)
    if not columns:
        raise InvalidIndexPlanError("a table index needs at least one column")
    return _add_explicit(plan, columns, [], shard_by, sort_by, table=True)


def _ensure_base(plan: IndexPlan, dims: list[int], measures: list[int], table: bool) -> None:
    col_order = [*dims, *measures]
    bases = [lay for _, lay in _layouts(plan.indexes) if lay.base and lay.is_table_index == table]
    current = next((lay for lay in bases if lay.col_order == col_order), None)
    for lay in bases:
        if lay is not current:
            lay.base = False  # seed 002: the old base stays, as an ordinary layout, until the user drops it
    if current is not None or not col_order:
        return
    key = _plain_key(col_order)

    def same(indexes: list[Index]) -> Layout | None:
        return next((lay for _, lay in _layouts(indexes) if _key(lay) == key and lay.is_table_index == table), None)

    found = same(plan.indexes)
    if found is not None:
        found.base = True
        return
    rule_layout, deleted = same(plan.rule_based_indexes), same(plan.to_be_deleted_indexes)
    if rule_layout is not None:
        layout_id = rule_layout.id  # the same data: one id, listed among the explicit indexes as base
    elif deleted is not None:
        layout_id = deleted.id
        to_be_deleted = _by_id(plan.to_be_deleted_indexes)
        _take(to_be_deleted, layout_id)
        plan.to_be_deleted_indexes = _listed(to_be_deleted)
    else:
        layout_id = _Allocator(plan).new_id(dims, measures, table)
    explicit = _by_id(plan.indexes)
    _put(explicit, Layout(id=layout_id, col_order=col_order, base=True), dims, measures)
    plan.indexes = _listed(explicit)


def ensure_base_indexes(
    plan: IndexPlan,
    model_dims: Collection[int],
    model_measures: Collection[int],
    table_columns: Collection[int],
    agg: bool = True,
    table: bool = True,
) -> IndexPlan:
    """Base agg index (all dims + all measures, ascending ids) and base table index (all `table_columns`),
    each only if asked for (`agg`, `table`).

    An up-to-date base is kept; when the model's columns changed the old base is demoted to an
    ordinary layout and a new base is created (or an identical existing layout is flagged base).
    """
    out = plan.model_copy(deep=True)
    if agg:
        _ensure_base(out, sorted(set(model_dims)), sorted(set(model_measures)), table=False)
    if table:
        _ensure_base(out, sorted(set(table_columns)), [], table=True)
    return _finish(out, _offsets(plan))


def remove_layouts(plan: IndexPlan, layout_ids: Iterable[int], built_layout_ids: Collection[int] = ()) -> IndexPlan:
    """Remove layouts: rule-based ones are black-listed (so re-expansion does not bring them back),
    built ones are kept in `to_be_deleted_indexes` until no segment holds them."""
    out = plan.model_copy(deep=True)
    built = set(built_layout_ids)
    explicit, rules = _by_id(out.indexes), _by_id(out.rule_based_indexes)
    to_be_deleted = _by_id(out.to_be_deleted_indexes)
    black = out.rule_based_index.layout_black_list if out.rule_based_index is not None else []
    for layout_id in layout_ids:
        from_explicit, from_rule = _take(explicit, layout_id), _take(rules, layout_id)
        for taken in (from_explicit, from_rule):
            if taken is not None and layout_id in built:
                index, layout = taken
                _put(to_be_deleted, layout.model_copy(update={"base": False}), index.dimensions, index.measures)
        if from_rule is not None and layout_id not in black:
            black.append(layout_id)  # RuleBasedIndex: a removed rule layout must not come back on re-expansion
        if from_explicit is None and from_rule is None:
            parked = _take(to_be_deleted, layout_id) if layout_id not in built else None
            if parked is None and not any(lay.id == layout_id for _, lay in _layouts(to_be_deleted.values())):
                raise InvalidIndexPlanError(f"layout {layout_id} is not in the index plan")
    out.indexes, out.rule_based_indexes = _listed(explicit), _listed(rules)
    out.to_be_deleted_indexes = _listed(to_be_deleted)
    return _finish(out, _offsets(plan))


def drop_to_be_deleted(plan: IndexPlan, still_built_ids: Collection[int]) -> IndexPlan:
    """Forget to-be-deleted layouts that no segment holds any more."""
    out = plan.model_copy(deep=True)
    keep = set(still_built_ids)
    for index in out.to_be_deleted_indexes:
        index.layouts = [lay for lay in index.layouts if lay.id in keep]
    out.to_be_deleted_indexes = [index for index in out.to_be_deleted_indexes if index.layouts]
    return _finish(out, _offsets(plan))
