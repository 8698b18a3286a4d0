"""Saving models: a model, its index plan and its dataflow are created, changed and deleted together,
in one project transaction (seed 002: the three correspond one to one).

These functions are the only writers of those documents outside the build; they apply the pure rules
of `model_rules` and `index_plan` and record the outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from precube.metadata import (
    AggregationGroup,
    AlreadyExistsError,
    Dataflow,
    DataflowStatus,
    IndexPlan,
    Layout,
    MetadataStore,
    Model,
    NotFoundError,
    RuleBasedIndex,
    SegmentDetails,
    SelectRule,
    Table,
    Transaction,
)
from precube.modeling import index_plan as plans
from precube.modeling.errors import InvalidIndexPlanError, InvalidModelError
from precube.modeling.model_rules import (
    broken_reason,
    build_model,
    retyped_columns,
    significant_changes,
    spec_of,
    used_columns,
)
from precube.modeling.model_spec import (
    AggregationGroupSpec,
    ComputedColumnSpec,
    DimensionSpec,
    MeasureSpec,
    ModelSpec,
    RulesSpec,
    SelectRuleSpec,
    parse_spec,
)


@dataclass(frozen=True)
class SavedModel:
    model: Model
    index_plan: IndexPlan
    dataflow: Dataflow
    significant_changes: tuple[str, ...] = ()
    recovered: bool = False  # the model was BROKEN and fits its tables now: OFFLINE until rebuilt


def broken_text(alias: str, detail: str | None, project: str) -> str:
    """Why a model is BROKEN and the commands that fix it: one line for every refusal that meets it."""
    return (
        f"model {alias} is BROKEN ({detail or 'SCHEMA'}): fix its spec (precube model update -p {project} FILE) "
        f"or its tables (then precube model check -p {project})"
    )


def find_model(tx: Transaction, alias: str) -> Model | None:
    upper = alias.upper()
    return next((m for m in tx.list(Model) if m.alias.upper() == upper), None)


def require_model(tx: Transaction, alias: str) -> Model:
    model = find_model(tx, alias)
    if model is None:
        raise NotFoundError(f"model {alias!r} does not exist in project {tx.project_name!r}")
    return model


def model_dims(model: Model) -> list[int]:
    return sorted(c.id for c in model.dimensions())


def model_measures(model: Model) -> list[int]:
    return sorted(m.id for m in model.measures())


def table_index_columns(model: Model) -> list[int]:
    """Columns of the base table index: every dimension and every column a measure reads."""
    used = used_columns(model)
    return sorted(c.id for c in model.live_columns() if c.column in used)


def rule_from_groups(
    model: Model,
    groups: Sequence[AggregationGroupSpec],
    global_dim_cap: int | None,
    base_layout_enabled: bool | None = None,
) -> RuleBasedIndex:
    """Aggregation groups written with names → a `RuleBasedIndex` with ids; unknown names are named."""

    # looked up once: a group may name thousands of columns (hostile or generated input)
    dimensions = {c.name.upper(): c.id for c in model.dimensions()}
    measures = {m.name.upper(): m.id for m in model.measures()}

    def dim(name: str, where: str) -> int:
        found = dimensions.get(name.upper())
        if found is None:
            raise InvalidIndexPlanError(f"{where}: {name} is not a dimension of model {model.alias}")
        return found

    def measure(name: str, where: str) -> int:
        found = measures.get(name.upper())
        if found is None:
            raise InvalidIndexPlanError(f"{where}: {name} is not a measure of model {model.alias}")
        return found

    result = []
    for i, g in enumerate(groups, start=1):
        where = f"aggregation group {i}"
        rule = g.select_rule
        result.append(
            AggregationGroup(
                includes=[dim(n, where) for n in g.includes],
                measures=[measure(n, where) for n in g.measures],
                select_rule=SelectRule(
                    mandatory_dims=[dim(n, where) for n in rule.mandatory_dims],
                    hierarchy_dims=[[dim(n, where) for n in h] for h in rule.hierarchy_dims],
                    joint_dims=[[dim(n, where) for n in j] for j in rule.joint_dims],
                    dim_cap=rule.dim_cap,
                ),
            )
        )
    return RuleBasedIndex(
        aggregation_groups=result, global_dim_cap=global_dim_cap, base_layout_enabled=base_layout_enabled is not False
    )


def rule_for(model: Model, plan: IndexPlan, rules: RulesSpec | ModelSpec) -> RuleBasedIndex:
    """The rule the groups of `rules` make for the model whose plan is `plan`; their base layout as asked, else as
    the plan's rules have it (None: yes)."""
    enabled = rules.base_layout_enabled
    if enabled is None and plan.rule_based_index is not None:
        enabled = plan.rule_based_index.base_layout_enabled
    return rule_from_groups(model, rules.aggregation_groups, rules.global_dim_cap, enabled)


def groups_of(model: Model, rule: RuleBasedIndex) -> list[AggregationGroupSpec]:
    """A rule's aggregation groups written with names (`rule_from_groups` read backwards)."""

    def name(column_id: int) -> str:
        return next(c.name for c in model.all_named_columns if c.id == column_id)

    def measure(measure_id: int) -> str:
        found = model.measure_by_id(measure_id)
        assert found is not None, f"measure {measure_id} of a rule is in model {model.alias}"
        return found.name

    return [
        AggregationGroupSpec(
            includes=[name(i) for i in g.includes],
            measures=[measure(i) for i in g.measures],
            select_rule=SelectRuleSpec(
                mandatory_dims=[name(i) for i in g.select_rule.mandatory_dims],
                hierarchy_dims=[[name(i) for i in h] for h in g.select_rule.hierarchy_dims],
                joint_dims=[[name(i) for i in j] for j in g.select_rule.joint_dims],
                dim_cap=g.select_rule.dim_cap,
            ),
        )
        for g in rule.aggregation_groups
    ]


def editable_spec(model: Model, plan: IndexPlan) -> ModelSpec:
    """Everything `update_model` accepts, as it stands: the model's spec with its index rules (aggregation
    groups, their global cap) and the base indexes it keeps, so `show` then `update` changes nothing."""
    spec = spec_of(model)
    rule = plan.rule_based_index
    if rule is not None and rule.aggregation_groups:
        spec.aggregation_groups = groups_of(model, rule)
        spec.global_dim_cap = rule.global_dim_cap
        spec.base_layout_enabled = False if rule.base_layout_enabled is False else None  # None: kept as it is
    spec.base_index_type = sorted(_base_kinds(spec, plan))  # type: ignore[arg-type]
    return spec


def _base_kinds(spec: ModelSpec, plan: IndexPlan | None) -> set[str]:
    """The base indexes to keep: the spec's; else both for a new model (`plan` None), else the plan's."""
    if spec.base_index_type is not None:
        return set(spec.base_index_type)
    if plan is None:
        return {"BASE_AGG_INDEX", "BASE_TABLE_INDEX"}
    return {"BASE_TABLE_INDEX" if lay.is_table_index else "BASE_AGG_INDEX" for lay in plan.all_layouts() if lay.base}


def _plan_for(model: Model, plan: IndexPlan, spec: ModelSpec, built: set[int], kinds: set[str]) -> IndexPlan:
    dims, measures = model_dims(model), model_measures(model)
    agg, table = "BASE_AGG_INDEX" in kinds, "BASE_TABLE_INDEX" in kinds
    plan = plans.ensure_base_indexes(plan, dims, measures, table_index_columns(model), agg=agg, table=table)
    if spec.aggregation_groups:
        plan = plans.set_rules(plan, rule_for(model, plan, spec), dims, measures, built)
    return plan


def spec_problems(store: MetadataStore, project: str, data: object) -> list[str]:
    """Every problem of a spec (its parsed data) against the project's tables, each with its path in the spec:
    the checks `create_model` and `update_model` make (`build_model`, then its aggregation groups), saving
    nothing; empty when it would save."""
    try:
        spec = parse_spec(data, "")
        with store.read(project) as tx:
            model = build_model(spec, {t.identity: t for t in tx.list(Table)})
        _plan_for(model, IndexPlan(uuid=model.uuid), spec, set(), _base_kinds(spec, None))
    except InvalidModelError as err:
        return list(err.problems)
    except InvalidIndexPlanError as err:
        return [f"aggregation_groups: {err.message}"]
    return []


def create_model(store: MetadataStore, project: str, spec: ModelSpec, writer: str = "precube") -> SavedModel:
    """Validate and save a new model with its index plan (base indexes + the spec's groups) and an
    empty OFFLINE dataflow."""
    with store.transaction(project, writer) as tx:
        if find_model(tx, spec.alias) is not None:
            raise AlreadyExistsError(f"model {spec.alias!r} already exists in project {project!r}")
        tables = {t.identity: t for t in tx.list(Table)}
        model = build_model(spec, tables)
        plan = _plan_for(model, IndexPlan(uuid=model.uuid), spec, set(), _base_kinds(spec, None))
        dataflow = Dataflow(uuid=model.uuid, status=DataflowStatus.OFFLINE)
        return SavedModel(tx.create(model), tx.create(plan), tx.create(dataflow))


@dataclass(frozen=True)
class ModelUpdate:
    """What applying a spec would do: the model and plan to save, and what they drop."""

    model: Model
    plan: IndexPlan
    dataflow: Dataflow
    significant_changes: tuple[str, ...]  # non-empty: every built segment is dropped (seed 002)
    dropped_segments: tuple[str, ...]  # their ids
    dropped_layouts: tuple[int, ...]  # built layouts of the old plan the new one no longer has


def _updated(tx: Transaction, spec: ModelSpec) -> ModelUpdate:
    old = require_model(tx, spec.alias)
    tables = {t.identity: t for t in tx.list(Table)}
    model = build_model(spec, tables, old)
    reasons = tuple(significant_changes(old, model))
    before = plan = tx.require(IndexPlan, model.uuid)
    kinds = _base_kinds(spec, plan)
    dataflow = tx.require(Dataflow, model.uuid)
    built = was_built = built_layouts(tx, model)
    dropped_segments: tuple[str, ...] = ()
    if reasons:
        dropped_segments = tuple(s.id for s in dataflow.segments)
        built = set()
        plan = IndexPlan(uuid=model.uuid)  # ids start over: the old layouts describe data that is gone
    # an aggregate layout holds dimensions and measures; a table index any live column (measures read some)
    live = set(model_dims(model)) | set(model_measures(model))
    readable = {c.id for c in model.live_columns()}
    stale = [
        lay.id for lay in plan.all_layouts() if not set(lay.col_order) <= (readable if lay.is_table_index else live)
    ]
    if stale:
        plan = plans.remove_layouts(plan, stale, built)
    plan = _plan_for(model, plan, spec, built, kinds)
    kept = {lay.id for lay in plan.all_layouts()} if not reasons else set()
    dropped_layouts = tuple(sorted(lay.id for lay in before.all_layouts() if lay.id in was_built - kept))
    return ModelUpdate(model, plan, dataflow, reasons, dropped_segments, dropped_layouts)


def preview_update(store: MetadataStore, project: str, spec: ModelSpec) -> ModelUpdate:
    """What `update_model` would do with `spec`, saving nothing."""
    with store.read(project) as tx:
        return _updated(tx, spec)


def update_model(store: MetadataStore, project: str, spec: ModelSpec, writer: str = "precube") -> SavedModel:
    """Apply an edited spec. A significant change bumps `semantic_version`, drops every built segment
    and rebuilds the index plan from scratch (seed 002); other edits keep segments and layout ids."""
    with store.transaction(project, writer) as tx:
        update = _updated(tx, spec)
        if update.significant_changes:
            _drop_segments(tx, update.dataflow)
        # the check `check_models` makes: a spec that repairs a BROKEN model recovers it
        tables = {t.identity: t for t in tx.list(Table)}
        broken = update.dataflow.status is DataflowStatus.BROKEN
        recovered = broken and broken_reason(update.model, tables) is None
        if recovered:
            _recover(update.dataflow)
        # replace: the documents were read in this same transaction, so nothing can slip in between
        model, plan = tx.replace(update.model), tx.replace(update.plan)
        return SavedModel(model, plan, tx.update(update.dataflow), update.significant_changes, recovered)


def add_to_model(
    store: MetadataStore,
    project: str,
    alias: str,
    measures: Sequence[MeasureSpec] = (),
    computed_columns: Sequence[ComputedColumnSpec] = (),
    writer: str = "precube",
) -> SavedModel:
    """The model with these computed columns (each a dimension) and measures added (new ids; nothing built is
    dropped): what `index recommend --apply` adds."""
    with store.read(project) as tx:
        model = require_model(tx, alias)
        spec = editable_spec(model, tx.require(IndexPlan, model.uuid))
    spec.computed_columns = [*spec.computed_columns, *computed_columns]
    added = [DimensionSpec(column=f"{model.root_alias}.{cc.column_name}") for cc in computed_columns]
    spec.simplified_dimensions = [*spec.simplified_dimensions, *added]
    spec.simplified_measures = [*spec.simplified_measures, *measures]
    return update_model(store, project, spec, writer)


def apply_recommended(
    store: MetadataStore,
    project: str,
    alias: str,
    groups: Sequence[AggregationGroupSpec],
    measures: Sequence[MeasureSpec] = (),
    computed_columns: Sequence[ComputedColumnSpec] = (),
    writer: str = "precube",
) -> IndexPlan:
    """What `index recommend --apply` does: the recommended measures and computed columns added to the model,
    its groups made the model's rules, without their base layout (every dimension of them: no recommended
    statement needs it, each group answers its own; TPC-H's was 35 columns, nearly one row per order line)."""
    if measures or computed_columns:
        add_to_model(store, project, alias, measures, computed_columns, writer)
    rules = RulesSpec(aggregation_groups=list(groups), base_layout_enabled=False)
    return set_model_rules(store, project, alias, rules, writer)


def built_layouts(tx: Transaction, model: Model) -> set[int]:
    """Layouts built in at least one segment of the model."""
    return {li.layout_id for d in tx.list(SegmentDetails, model.uuid) for li in d.layout_instances}


def set_model_rules(
    store: MetadataStore, project: str, alias: str, rules: RulesSpec, writer: str = "precube"
) -> IndexPlan:
    """Replace a model's aggregation groups; unchanged layouts keep their ids (reference §3.4)."""
    with store.transaction(project, writer) as tx:
        return tx.replace(_with_rules(tx, alias, rules)[0])


@dataclass(frozen=True)
class RulesDiff:
    """What replacing a model's aggregation groups would change (Kylin's `rule_based_index_diff`)."""

    added: tuple[int, ...]  # layouts the plan would gain (new ids, or ids restored from to-be-deleted)
    removed: tuple[int, ...]  # layouts it would lose
    restored: tuple[int, ...]  # of `added`: built layouts taken back from to-be-deleted (Kylin's rollback)
    dropped_built: tuple[int, ...]  # of `removed`: built ones, whose data then stops answering queries


def diff_rules(store: MetadataStore, project: str, alias: str, rules: RulesSpec) -> RulesDiff:
    """What `set_model_rules` with these rules would add and remove, saving nothing."""
    with store.read(project) as tx:
        plan, before, built = _with_rules(tx, alias, rules)
    old, new = {lay.id for lay in before.all_layouts()}, {lay.id for lay in plan.all_layouts()}
    parked = {lay.id for index in before.to_be_deleted_indexes for lay in index.layouts}
    return RulesDiff(
        tuple(sorted(new - old)),
        tuple(sorted(old - new)),
        tuple(sorted((new - old) & parked)),
        tuple(sorted((old - new) & built)),
    )


def _with_rules(tx: Transaction, alias: str, rules: RulesSpec) -> tuple[IndexPlan, IndexPlan, set[int]]:
    """The model's plan with these rules (`base_layout_enabled` None: as its rules did), the plan before, and the
    layouts built in its segments."""
    model = require_model(tx, alias)
    before = tx.require(IndexPlan, model.uuid)
    built = built_layouts(tx, model)
    rule = rule_for(model, before, rules)
    return plans.set_rules(before, rule, model_dims(model), model_measures(model), built), before, built


def add_model_table_index(
    store: MetadataStore,
    project: str,
    alias: str,
    columns: Sequence[str],
    shard_by: Sequence[str] = (),
    sort_by: Sequence[str] = (),
    writer: str = "precube",
) -> Layout:
    """Add a table (detail) index over named model columns."""
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)

        def ids(names: Sequence[str]) -> list[int]:
            found = []
            for name in names:
                col = model.column_by_name(name)
                if col is None:
                    raise InvalidIndexPlanError(f"table index: {name} is not a column of model {model.alias}")
                found.append(col.id)
            return found

        plan = tx.require(IndexPlan, model.uuid)
        live = [c.id for c in model.live_columns()]
        plan, layout = plans.add_table_index(plan, ids(columns), ids(shard_by), ids(sort_by), model_columns=live)
        tx.replace(plan)
        return layout


def _drop_segments(tx: Transaction, dataflow: Dataflow) -> None:
    for details in tx.list(SegmentDetails, dataflow.uuid):
        tx.delete(details)
    dataflow.segments = []
    if dataflow.status is not DataflowStatus.BROKEN:
        dataflow.status = DataflowStatus.OFFLINE


def _recover(dataflow: Dataflow) -> None:
    """A BROKEN model that fits its tables again: OFFLINE (its segments were dropped) until rebuilt."""
    dataflow.status, dataflow.broken_reason, dataflow.broken_detail = DataflowStatus.OFFLINE, None, None


def delete_model(store: MetadataStore, project: str, alias: str, writer: str = "precube") -> Model:
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)
        dataflow = tx.get(Dataflow, model.uuid)
        if dataflow is not None:
            _drop_segments(tx, dataflow)
            tx.delete(dataflow)
        plan = tx.get(IndexPlan, model.uuid)
        if plan is not None:
            tx.delete(plan)
        tx.delete(model)
        return model


@dataclass(frozen=True)
class BrokenCheck:
    model: str
    reason: str | None  # why it is broken now, None if it fits its tables
    changed: bool  # whether this check changed its status
    # computed columns recorded with another type than Spark's (`retyped_columns`): name → (recorded, Spark's)
    retyped: dict[str, tuple[str, str]] = field(default_factory=dict)


def models_broken_by(
    store: MetadataStore, project: str, changed: Sequence[Table]
) -> list[tuple[Model, str, list[str]]]:
    """The models that `changed` tables (not saved yet) would break, each with the reason and the ids of the
    segments `check_models` would then drop: what a reload must show before it happens."""
    found = []
    with store.read(project) as tx:
        tables = {t.identity: t for t in tx.list(Table)} | {t.identity: t for t in changed}
        for model in tx.list(Model):
            dataflow = tx.require(Dataflow, model.uuid)
            reason = broken_reason(model, tables)
            if reason is not None and dataflow.broken_detail != reason:
                found.append((model, reason, [s.id for s in dataflow.segments]))
    return found


def check_models(store: MetadataStore, project: str, writer: str = "precube") -> list[BrokenCheck]:
    """Re-check every model against the project's tables (after a reload). A model that no longer
    fits becomes BROKEN (reason SCHEMA) and loses its segments, whose data no longer match the
    source (seed 002); a broken model that fits again recovers, OFFLINE until rebuilt."""
    results = []
    with store.transaction(project, writer) as tx:
        tables = {t.identity: t for t in tx.list(Table)}
        for model in tx.list(Model):
            dataflow = tx.require(Dataflow, model.uuid)
            reason = broken_reason(model, tables)
            was_broken = dataflow.status is DataflowStatus.BROKEN
            if reason is not None and (not was_broken or dataflow.broken_detail != reason):
                _drop_segments(tx, dataflow)
                dataflow.status, dataflow.broken_reason, dataflow.broken_detail = (
                    DataflowStatus.BROKEN,
                    "SCHEMA",
                    reason,
                )
                tx.update(dataflow)
            elif reason is None and was_broken:
                _recover(dataflow)
                tx.update(dataflow)
            retyped = retyped_columns(model, tables) if reason is None else {}
            results.append(BrokenCheck(model.alias, reason, (reason is not None) != was_broken, retyped))
    return results
