"""Kylin 5's `index_plans` endpoints: a model's aggregation groups (read, replace, preview the layout count,
diff), its layouts with their built rows and bytes per segment, and table indexes.

Aggregation groups name dimensions and measures by name (as the CLI's rules files do) or by Kylin's ids;
a model is named by `model` (its uuid or its alias), `model_id` or `model_name`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jobs.plans import index_build_job
from precube.jobs.submission import submit
from precube.metadata import Dataflow, IndexPlan, Layout, MetadataStore, Model, SegmentDetails, Transaction
from precube.metadata.index_plan import index_id_of
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.agg_group import preview as preview_rule
from precube.modeling.errors import InvalidIndexPlanError, SegmentRuleError
from precube.modeling.model_edits import remove_model_layouts, resolve_model
from precube.modeling.model_spec import AggregationGroupSpec, RulesSpec, SelectRuleSpec
from precube.modeling.model_store import (
    add_model_table_index,
    diff_rules,
    groups_of,
    model_dims,
    model_measures,
    require_model,
    rule_for,
    set_model_rules,
)
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of

router = APIRouter(tags=["index_plans"])

READ = Depends(requires(Permission.QUERY))
WRITE = Depends(requires(Permission.MANAGEMENT))
Column = str | int  # a name, or Kylin's id


class SelectRuleRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mandatory_dims: list[Column] = Field(default_factory=list)
    hierarchy_dims: list[list[Column]] = Field(default_factory=list)
    joint_dims: list[list[Column]] = Field(default_factory=list)
    dim_cap: int | None = Field(None, ge=1)


class AggGroupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    includes: list[Column]
    measures: list[Column] = Field(default_factory=list)  # empty: every measure
    select_rule: SelectRuleRequest = Field(default_factory=SelectRuleRequest)
    index_range: str | None = None  # Kylin's BATCH/STREAMING/HYBRID; precube builds batch only


class ModelRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    project: str
    model: str | None = None
    model_id: str | None = None
    model_name: str | None = None

    def ref(self) -> str:
        given = [r for r in (self.model, self.model_id, self.model_name) if r is not None]
        if len(given) != 1:
            raise InvalidInputError("give the model as one of model, model_id or model_name")
        return given[0]


class RuleRequest(ModelRef):
    """`PUT /api/index_plans/rule`, `…/agg_groups`, `…/agg_index_count`, `…/rule_based_index_diff`."""

    aggregation_groups: list[AggGroupRequest]
    global_dim_cap: int | None = Field(None, ge=1)
    base_layout_enabled: bool | None = None  # the groups' base layout too; None: as the model's rules do
    scheduler_version: int = 2
    load_data: bool = False  # then build the new layouts into the READY segments (an index build job)
    restore_deleted_index: bool = False


class TableIndexRequest(ModelRef):
    """`POST /api/index_plans/table_index`: columns by name (or id), in order."""

    col_order: list[Column] = Field(min_length=1)
    shard_by_columns: list[Column] = Field(default_factory=list)
    sort_by_columns: list[Column] = Field(default_factory=list)
    load_data: bool = False


def _model(request: Request, project: str, ref: str) -> Model:
    with state_of(request).store.read(project) as tx:
        return resolve_model(tx, ref)


def _column(model: Model, value: Column, where: str) -> str:
    """A column given by name or id, as its name (names are what the rules functions take)."""
    if isinstance(value, str):
        return value
    found = model.column_by_id(value)
    if found is None:
        raise InvalidIndexPlanError(f"{where}: {value} is not a column id of model {model.alias}")
    return found.name


def _measure(model: Model, value: Column, where: str) -> str:
    if isinstance(value, str):
        return value
    found = model.measure_by_id(value)
    if found is None:
        raise InvalidIndexPlanError(f"{where}: {value} is not a measure id of model {model.alias}")
    return found.name


def _groups(model: Model, groups: list[AggGroupRequest]) -> list[AggregationGroupSpec]:
    out = []
    for i, g in enumerate(groups, start=1):
        where = f"aggregation group {i}"

        def col(v: Column, where: str = where) -> str:
            return _column(model, v, where)

        rule = g.select_rule
        out.append(
            AggregationGroupSpec(
                includes=[col(v) for v in g.includes],
                measures=[_measure(model, v, where) for v in g.measures],
                select_rule=SelectRuleSpec(
                    mandatory_dims=[col(v) for v in rule.mandatory_dims],
                    hierarchy_dims=[[col(v) for v in h] for h in rule.hierarchy_dims],
                    joint_dims=[[col(v) for v in j] for j in rule.joint_dims],
                    dim_cap=rule.dim_cap,
                ),
            )
        )
    return out


def _rules(model: Model, body: RuleRequest) -> RulesSpec:
    return RulesSpec(
        aggregation_groups=_groups(model, body.aggregation_groups),
        global_dim_cap=body.global_dim_cap,
        base_layout_enabled=body.base_layout_enabled,
    )


def _build_new_layouts(store: MetadataStore, project: str, alias: str, caller: Caller) -> str | None:
    """Kylin's `load_data`: an index build job for the layouts the READY segments lack (None: none lacks one)."""
    try:
        job = index_build_job(store, project, alias)
    except SegmentRuleError:
        return None  # every READY segment holds every layout, or there is no segment
    job.submitter = caller.name
    return submit(store, project, job, caller.writer).uuid


def _rule_answer(tx: Transaction, model: Model) -> dict[str, Any]:
    plan = tx.require(IndexPlan, model.uuid)
    rule = plan.rule_based_index
    groups = groups_of(model, rule) if rule is not None else []
    rule_layouts = {lay.id for index in plan.rule_based_indexes for lay in index.layouts}
    return {
        "model_id": model.uuid,
        "model_name": model.alias,
        "aggregation_groups": [g.model_dump(mode="json") for g in groups],
        "global_dim_cap": rule.global_dim_cap if rule is not None else None,
        "base_layout_enabled": rule.base_layout_enabled is not False if rule is not None else True,
        "scheduler_version": rule.scheduler_version if rule is not None else 2,
        "rule_layouts": len(rule_layouts),
        "total_layouts": len(plan.all_layouts()),
    }


@router.get("/index_plans/rule")
def get_rule(
    request: Request, model: str = Query(..., description="model uuid or alias"), caller: Caller = READ
) -> dict[str, Any]:
    """The model's aggregation groups, by name."""
    project = caller.scoped
    with state_of(request).store.read(project) as tx:
        return ok(_rule_answer(tx, resolve_model(tx, model)))


def _set_rules(request: Request, body: RuleRequest, caller: Caller) -> dict[str, Any]:
    state, project = state_of(request), caller.scoped
    model = _model(request, project, body.ref())
    rules = _rules(model, body)
    diff = diff_rules(state.store, project, model.alias, rules)
    set_model_rules(state.store, project, model.alias, rules, caller.writer)
    job_id = _build_new_layouts(state.store, project, model.alias, caller) if body.load_data else None
    with state.store.read(project) as tx:
        answer = _rule_answer(tx, require_model(tx, model.alias))
    answer |= {
        "added_layouts": list(diff.added),
        "removed_layouts": list(diff.removed),
        "dropped_built_layouts": list(diff.dropped_built),
        "job_id": job_id,
    }
    return ok(answer)


@router.put("/index_plans/rule")
def put_rule(request: Request, body: RuleRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """Replace the model's aggregation groups (unchanged layouts keep their ids; built layouts the new rules
    drop are named in the answer); `load_data` builds the new layouts into the READY segments."""
    return _set_rules(request, body, caller)


@router.put("/index_plans/agg_groups")
def put_agg_groups(request: Request, body: RuleRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """Kylin's public name of `PUT /api/index_plans/rule`."""
    return _set_rules(request, body, caller)


@router.put("/index_plans/agg_index_count")
def agg_index_count(request: Request, body: RuleRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """How many layouts the groups yield, per group and in all (with their base layout if enabled), saving nothing:
    what `precube index preview` shows. A group over the limit is FAIL (saving it would be refused)."""
    project = caller.scoped
    with state_of(request).store.read(project) as tx:
        model = resolve_model(tx, body.ref())
        rule = rule_for(model, tx.require(IndexPlan, model.uuid), _rules(model, body))
    found = preview_rule(rule, model_dims(model), model_measures(model))

    def result(count: int, over: bool) -> dict[str, Any]:
        return {"result": count, "status": "FAIL" if over else "SUCCESS"}

    return ok(
        {
            "agg_index_counts": [result(n, n > found.group_limit) for n in found.group_counts],
            "total_count": result(found.total, found.exceeds_limit),
            "total_exact": found.total_exact,
            "group_limit": found.group_limit,
            "total_limit": found.total_limit,
        }
    )


@router.put("/index_plans/rule_based_index_diff")
def rule_based_index_diff(request: Request, body: RuleRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """The layouts the groups would add and remove (Kylin's increase/decrease/rollback counts), saving nothing."""
    project = caller.scoped
    model = _model(request, project, body.ref())
    diff = diff_rules(state_of(request).store, project, model.alias, _rules(model, body))
    return ok(
        {
            "model_id": model.uuid,
            "increase_layouts": len(diff.added) - len(diff.restored),
            "decrease_layouts": len(diff.removed),
            "rollback_layouts": len(diff.restored),
            "added_layouts": list(diff.added),
            "removed_layouts": list(diff.removed),
            "dropped_built_layouts": list(diff.dropped_built),
        }
    )


def _source(layout: Layout, rule_ids: set[int]) -> str:
    if layout.base:
        return "BASE_TABLE_INDEX" if layout.is_table_index else "BASE_AGG_INDEX"
    if layout.auto:
        return "RECOMMENDED_TABLE_INDEX" if layout.is_table_index else "RECOMMENDED_AGG_INDEX"
    return "CUSTOM_TABLE_INDEX" if layout.is_table_index or layout.id not in rule_ids else "CUSTOM_AGG_INDEX"


def _layouts(tx: Transaction, model: Model) -> list[dict[str, Any]]:
    """Each layout of the plan (to-be-deleted ones LOCKED) with its rows and bytes in each segment."""
    plan = tx.require(IndexPlan, model.uuid)
    dataflow = tx.require(Dataflow, model.uuid)
    names = {c.id: c.name for c in model.all_named_columns} | {m.id: m.name for m in model.all_measures}
    built: dict[int, list[dict[str, Any]]] = {}
    for details in tx.list(SegmentDetails, model.uuid):
        segment = dataflow.segment(details.uuid)
        for li in details.layout_instances:
            built.setdefault(li.layout_id, []).append(
                {
                    "segment_id": details.uuid,
                    "segment_name": segment.name if segment is not None else None,
                    "rows": li.rows,
                    "bytes": li.byte_size,
                    "ready": li.is_ready,
                }
            )
    rule_ids = {lay.id for index in plan.rule_based_indexes for lay in index.layouts}
    segments = len(dataflow.segments)
    parked = [lay for index in plan.to_be_deleted_indexes for lay in index.layouts]
    found = []
    for layout, locked in [*((lay, False) for lay in plan.all_layouts()), *((lay, True) for lay in parked)]:
        per_segment = sorted(built.get(layout.id, []), key=lambda s: str(s["segment_name"]))
        ready = sum(1 for s in per_segment if s["ready"])
        # ONLINE: built in every segment; NO_BUILD also when only some hold it (an index build fills the rest)
        status = "LOCKED" if locked else ("ONLINE" if segments and ready >= segments else "NO_BUILD")
        found.append(
            {
                "id": layout.id,
                "index_id": index_id_of(layout.id),
                "type": "TABLE" if layout.is_table_index else "AGG",
                "source": _source(layout, rule_ids),
                "status": status,
                "dimensions": [names.get(i, str(i)) for i in layout.col_order if i < MEASURE_ID_BASE],
                "measures": [names.get(i, str(i)) for i in layout.col_order if i >= MEASURE_ID_BASE],
                "col_order": [names.get(i, str(i)) for i in layout.col_order],
                "shard_by_columns": [names.get(i, str(i)) for i in layout.shard_by_columns],
                "sort_by_columns": [names.get(i, str(i)) for i in layout.sort_by_columns],
                "data_size": sum(s["bytes"] for s in per_segment),
                "rows": sum(s["rows"] for s in per_segment),
                "segments": per_segment,
                "last_modified": layout.update_time,
            }
        )
    return found


@dataclass(frozen=True)
class IndexFilter:
    """The filters, order and page of an index listing (Kylin's query parameters)."""

    status: list[str]
    sources: list[str]
    key: str | None
    sort_by: str
    reverse: bool
    paged: Paging


def index_filter(
    status: list[str] = Query(default_factory=list),
    sources: list[str] = Query(default_factory=list),
    key: str | None = None,
    sort_by: str = "id",
    reverse: bool = False,
    paged: Paging = Depends(paging),
) -> IndexFilter:
    return IndexFilter(status, sources, key, sort_by, reverse, paged)


def _list_indexes(request: Request, project: str, ref: str, f: IndexFilter) -> dict[str, Any]:
    status, sources, key, sort_by, reverse = f.status, f.sources, f.key, f.sort_by, f.reverse

    def split(values: list[str]) -> set[str]:
        return {v.strip().upper() for item in values for v in item.split(",") if v.strip()}

    sort_keys = {"id": "id", "data_size": "data_size", "rows": "rows", "last_modified": "last_modified"}
    if sort_by not in sort_keys:
        raise InvalidInputError(f"sort_by: unknown {sort_by!r}; use one of {', '.join(sort_keys)}")
    with state_of(request).store.read(project) as tx:
        model = resolve_model(tx, ref)
        items = _layouts(tx, model)
    wanted_status, wanted_sources = split(status), split(sources)
    if key:
        needle = key.upper()
        items = [i for i in items if needle in str(i["id"]) or any(needle in c.upper() for c in i["col_order"])]
    items = [
        i
        for i in items
        if (not wanted_status or i["status"] in wanted_status) and (not wanted_sources or i["source"] in wanted_sources)
    ]
    items.sort(key=lambda i: i[sort_keys[sort_by]], reverse=reverse)
    return ok(page(items, f.paged) | {"model_id": model.uuid, "model_name": model.alias})


@router.get("/models/{model_name}/indexes")
def model_indexes(
    request: Request,
    model_name: str,
    caller: Caller = READ,
    filters: IndexFilter = Depends(index_filter),
) -> dict[str, Any]:
    """The model's layouts: id, AGG/TABLE, source, status, dimensions, measures, rows and bytes per segment."""
    return _list_indexes(request, caller.scoped, model_name, filters)


@router.get("/index_plans/index")
def indexes(
    request: Request,
    model: str = Query(..., description="model uuid or alias"),
    caller: Caller = READ,
    filters: IndexFilter = Depends(index_filter),
) -> dict[str, Any]:
    """As `GET /api/models/{model_name}/indexes`, the model given by `model` (uuid or alias)."""
    return _list_indexes(request, caller.scoped, model, filters)


@router.post("/index_plans/table_index")
def add_table_index(request: Request, body: TableIndexRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """Add a table (detail) index over model columns, in `col_order`."""
    state, project = state_of(request), caller.scoped
    model = _model(request, project, body.ref())

    def names(values: list[Column], where: str) -> list[str]:
        return [_column(model, v, where) for v in values]

    layout = add_model_table_index(
        state.store,
        project,
        model.alias,
        names(body.col_order, "col_order"),
        names(body.shard_by_columns, "shard_by_columns"),
        names(body.sort_by_columns, "sort_by_columns"),
        caller.writer,
    )
    job_id = _build_new_layouts(state.store, project, model.alias, caller) if body.load_data else None
    return ok({"id": layout.id, "model_id": model.uuid, "job_id": job_id})


def _ids(values: list[str]) -> list[int]:
    found = []
    for item in values:
        for v in item.split(","):
            text = v.strip()
            if not text.isdigit() or len(text) > 18:
                raise InvalidInputError(f"index_ids: {text!r} is not a layout id")
            found.append(int(text))
    if not found:
        raise InvalidInputError("index_ids: give at least one layout id")
    return found


def _removed(request: Request, caller: Caller, ref: str, ids: list[int], table_only: bool) -> dict[str, Any]:
    project = caller.scoped
    model = _model(request, project, ref)
    done = remove_model_layouts(state_of(request).store, project, model.alias, ids, caller.writer, table_only)
    return ok({"model_id": model.uuid, "removed": list(done.removed), "to_be_deleted": list(done.to_be_deleted)})


@router.delete("/index_plans/table_index/{layout_id}")
def delete_table_index(
    request: Request, layout_id: int, model: str = Query(..., description="model uuid or alias"), caller: Caller = WRITE
) -> dict[str, Any]:
    """Remove a table index (a built one stays until its segments are rebuilt)."""
    return _removed(request, caller, model, [layout_id], table_only=True)


@router.delete("/index_plans/index")
def delete_indexes(
    request: Request,
    model: str = Query(..., description="model uuid or alias"),
    index_ids: list[str] = Query(...),
    caller: Caller = WRITE,
) -> dict[str, Any]:
    """Remove layouts by id (comma-separated or repeated): rule-based ones are black-listed so the rules do not
    bring them back; built ones stay until their segments are rebuilt."""
    return _removed(request, caller, model, _ids(index_ids), table_only=False)
