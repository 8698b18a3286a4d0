"""Kylin 5's `models` endpoints: list, create from the CLI's spec, `model_desc`, update (the semantic
change, with what it drops), name, status, partition, segment settings, delete.

Models are named by alias in paths (Kylin's public API); every write goes through `modeling` (the same
functions as `precube model …`), so the CLI and the server apply one set of rules."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jobs.removal import remove_model, segment_bytes
from precube.metadata import (
    AutoMergeTimeRange,
    Dataflow,
    DataflowStatus,
    IndexPlan,
    Model,
    PartitionDesc,
    RetentionRange,
    SegmentConfig,
    SegmentDetails,
    Transaction,
    VolatileRange,
)
from precube.modeling.model_edits import (
    preview_partition,
    rename_model,
    segment_config_in_force,
    set_model_status,
    set_partition,
    set_segment_config,
)
from precube.modeling.model_rules import check_model_name
from precube.modeling.model_spec import ModelSpec
from precube.modeling.model_store import (
    ModelUpdate,
    create_model,
    editable_spec,
    groups_of,
    preview_update,
    require_model,
    update_model,
)
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of
from precube.server.state import ServerState

router = APIRouter(tags=["models"])

READ = Depends(requires(Permission.QUERY))
WRITE = Depends(requires(Permission.MANAGEMENT))


class ModelRequest(ModelSpec):
    """`POST /api/models`: the CLI's model spec plus the project and the Kylin fields precube honours."""

    model_config = ConfigDict(extra="forbid")

    project: str
    management_type: Literal["MODEL_BASED"] = "MODEL_BASED"
    with_base_index: bool | None = None  # Kylin: False = no base indexes (unless base_index_type says which)

    def spec(self) -> ModelSpec:
        data = self.model_dump(exclude={"project", "management_type", "with_base_index"}, exclude_unset=True)
        spec = ModelSpec.model_validate(data)
        if self.with_base_index is False and spec.base_index_type is None:
            spec.base_index_type = []
        return spec


class ModelUpdateRequest(ModelRequest):
    """`PUT /api/models/{model_name}`: the edited spec (`alias` may be left out: the path names the model)."""

    alias: str = ""


class RenameRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    project: str
    new_model_name: str


class StatusRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    project: str
    status: Literal["ONLINE", "OFFLINE"]


class PartitionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    project: str
    partition_desc: PartitionDesc | None  # null: no partition (full builds only)


class ModelConfigRequest(BaseModel):
    """Kylin's `PUT /api/models/{model}/config` segment fields; each given one overrides the project's."""

    model_config = ConfigDict(extra="forbid")
    project: str
    auto_merge_enabled: bool | None = None
    auto_merge_time_ranges: list[AutoMergeTimeRange] | None = Field(None, min_length=1)
    auto_merge_thresholds_ms: list[int] | None = None  # precube: seed 001's duration thresholds
    volatile_range: VolatileRange | None = None
    retention_range: RetentionRange | None = None
    create_empty_segment_enabled: bool | None = None
    inherit: bool = False  # precube: drop the model's own settings first (`model config --inherit`)
    override_props: dict[str, str] = Field(default_factory=dict)

    def changes(self, _in_force: SegmentConfig) -> dict[str, Any]:
        if self.override_props:
            raise InvalidInputError("override_props: model properties are not supported; give segment settings")
        if self.auto_merge_thresholds_ms is not None and any(ms < 1 for ms in self.auto_merge_thresholds_ms):
            raise InvalidInputError("auto_merge_thresholds_ms: each threshold must be a positive duration in ms")
        if self.volatile_range is not None and self.volatile_range.volatile_range_number < 0:
            raise InvalidInputError("volatile_range.volatile_range_number must not be negative")
        if self.retention_range is not None and self.retention_range.retention_range_number < 1:
            raise InvalidInputError("retention_range.retention_range_number must be at least 1")
        fields = self.model_dump(exclude={"project", "inherit", "override_props"}, exclude_none=True)
        if "auto_merge_time_ranges" in fields and "auto_merge_thresholds_ms" not in fields:
            fields["auto_merge_thresholds_ms"] = []  # the calendar levels replace any thresholds, as the CLI does
        return fields


def _name(model_name: str) -> str:
    """A model name from a path, checked before it is looked up."""
    return check_model_name(model_name)


def _storage(tx: Transaction, model: Model) -> tuple[int, int]:
    """Bytes and rows of the model's built layouts, over its segments."""
    details = tx.list(SegmentDetails, model.uuid)
    return (
        sum(li.byte_size for d in details for li in d.layout_instances),
        sum(li.rows for d in details for li in d.layout_instances),
    )


def model_summary(tx: Transaction, project: str, model: Model) -> dict[str, Any]:
    """One entry of `GET /api/models`."""
    dataflow = tx.require(Dataflow, model.uuid)
    ranges = [s.seg_range for s in dataflow.segments]
    size, _rows = _storage(tx, model)
    return {
        "uuid": model.uuid,
        "alias": model.alias,
        "name": model.alias,
        "project": project,
        "owner": model.owner,
        "description": model.description,
        "fact_table": model.fact_table,
        "root_fact_table": model.fact_table,
        "management_type": model.management_type,
        "status": dataflow.status.value,
        "broken_reason": dataflow.broken_reason,
        "broken_detail": dataflow.broken_detail,
        "segment_count": len(dataflow.segments),
        "segment_ranges": {
            "start": min((r.start for r in ranges), default=None),
            "end": max((r.end for r in ranges), default=None),
        },
        "total_indexes": len(tx.require(IndexPlan, model.uuid).all_layouts()),
        "storage": size,
        "partition_desc": model.partition_desc.model_dump(mode="json") if model.partition_desc else None,
        "semantic_version": model.semantic_version,
        "last_modified": model.last_modified,
        "create_time": model.create_time,
    }


SORT_KEYS = {
    "last_modify": lambda m: m["last_modified"],
    "last_modified": lambda m: m["last_modified"],
    "create_time": lambda m: m["create_time"],
    "alias": lambda m: m["alias"].upper(),
    "name": lambda m: m["alias"].upper(),
    "storage": lambda m: m["storage"],
    "segment_count": lambda m: m["segment_count"],
    "total_indexes": lambda m: m["total_indexes"],
}


@router.get("/models")
def list_models(
    request: Request,
    caller: Caller = READ,
    model_name: str | None = None,
    exact: bool = False,
    status: list[str] = Query(default_factory=list),
    table: str | None = None,
    paged: Paging = Depends(paging),
    sort_by: str = "last_modify",
    reverse: bool = True,
) -> dict[str, Any]:
    """A project's models, filtered by name (fuzzy unless `exact`), status and table, sorted and paged."""
    project = caller.scoped
    wanted = {s.strip().upper() for item in status for s in item.split(",") if s.strip()}
    unknown = wanted - {s.value for s in DataflowStatus}
    if unknown:
        raise InvalidInputError(f"status: unknown {', '.join(sorted(unknown))}; use ONLINE, OFFLINE, WARNING, BROKEN")
    if sort_by not in SORT_KEYS:
        raise InvalidInputError(f"sort_by: unknown {sort_by!r}; use one of {', '.join(SORT_KEYS)}")
    items = []
    with state_of(request).store.read(project) as tx:
        for model in tx.list(Model):
            if model_name is not None:
                name, alias = model_name.upper(), model.alias.upper()
                if not (alias == name if exact else name in alias):
                    continue
            if table is not None and not any(
                table.upper() in t.upper() for t in [model.fact_table, *(j.table for j in model.join_tables)]
            ):
                continue
            entry = model_summary(tx, project, model)
            if not wanted or entry["status"] in wanted:
                items.append(entry)
    items.sort(key=SORT_KEYS[sort_by], reverse=reverse)
    return ok(page(items, paged))


@router.post("/models")
def create(request: Request, body: ModelRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """Create a model from the CLI's spec, with its index plan (base indexes and the spec's groups) and an
    empty OFFLINE dataflow."""
    state, project = state_of(request), caller.scoped
    saved = create_model(state.store, project, body.spec(), writer=caller.writer)
    with state.store.read(project) as tx:
        return ok(model_summary(tx, project, saved.model))


@router.get("/models/{project}/{model_name}/model_desc")
def model_desc(request: Request, model_name: str, caller: Caller = READ) -> dict[str, Any]:
    """The model as stored, with its dimensions and measures by name, its aggregation groups and the
    editable spec (what `PUT /api/models/{model_name}` takes back)."""
    project = caller.scoped
    with state_of(request).store.read(project) as tx:
        model = require_model(tx, _name(model_name))
        plan = tx.require(IndexPlan, model.uuid)
        desc = model.model_dump(mode="json")
        rule = plan.rule_based_index
        desc |= {
            "name": model.alias,
            "project": project,
            "status": tx.require(Dataflow, model.uuid).status.value,
            "dimensions": [
                {"id": c.id, "name": c.name, "column": c.column, "datatype": c.datatype} for c in model.dimensions()
            ],
            "measures": [
                {
                    "id": m.id,
                    "name": m.name,
                    "expression": m.function.expression.value,
                    "parameter_value": [p.model_dump(mode="json") for p in m.function.parameters],
                    "return_type": m.function.returntype,
                }
                for m in model.measures()
            ],
            "aggregation_groups": [
                g.model_dump(mode="json") for g in (groups_of(model, rule) if rule is not None else [])
            ],
            "global_dim_cap": rule.global_dim_cap if rule is not None else None,
            "spec": editable_spec(model, plan).model_dump(mode="json", exclude_defaults=True),
        }
        return ok(desc)


def _update_answer(state: ServerState, project: str, found: ModelUpdate, saved: bool) -> dict[str, Any]:
    size = segment_bytes(state.settings.warehouse_root, project, found.model.uuid, list(found.dropped_segments))
    return {
        "uuid": found.model.uuid,
        "alias": found.model.alias,
        "saved": saved,
        "semantic_version": found.model.semantic_version,
        "significant_changes": list(found.significant_changes),
        "dropped_segments": list(found.dropped_segments),
        "dropped_bytes": size,
        "dropped_layouts": list(found.dropped_layouts),
        "layouts": len(found.plan.all_layouts()),
    }


def _update(request: Request, caller: Caller, spec: ModelSpec, dry_run: bool) -> dict[str, Any]:
    """Preview the update (what it drops: segments on a significant change, built layouts it no longer has),
    then apply it unless `dry_run`."""
    state, project = state_of(request), caller.scoped
    found = preview_update(state.store, project, spec)
    answer = _update_answer(state, project, found, saved=False)  # measured before the segments go
    if not dry_run:
        saved = update_model(state.store, project, spec, writer=caller.writer)
        answer |= {"saved": True, "semantic_version": saved.model.semantic_version}
    return ok(answer)


@router.put("/models/semantic")
def update_semantic(
    request: Request, body: ModelRequest, caller: Caller = WRITE, dry_run: bool = False
) -> dict[str, Any]:
    """Kylin's semantic update: the body's `alias` names the model; `dry_run` only tells what it would drop."""
    return _update(request, caller, body.spec(), dry_run)


@router.put("/models/{model_name}")
def update(
    request: Request, model_name: str, body: ModelUpdateRequest, caller: Caller = WRITE, dry_run: bool = False
) -> dict[str, Any]:
    """Apply an edited spec to the model (as `precube model update`); `dry_run`: only what it would drop."""
    name = _name(model_name)
    if body.alias and body.alias.upper() != name.upper():
        raise InvalidInputError(f"alias {body.alias!r} is not {name!r}: rename with PUT /api/models/{name}/name")
    body.alias = name if not body.alias else body.alias
    return _update(request, caller, body.spec(), dry_run)


@router.put("/models/{model_name}/name")
def rename(request: Request, model_name: str, body: RenameRequest, caller: Caller = WRITE) -> dict[str, Any]:
    project = caller.scoped
    model = rename_model(state_of(request).store, project, _name(model_name), body.new_model_name, caller.writer)
    return ok({"uuid": model.uuid, "alias": model.alias})


@router.put("/models/{model_name}/status")
def status(request: Request, model_name: str, body: StatusRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """ONLINE (it answers queries; needs a READY segment) or OFFLINE (queries go elsewhere)."""
    project = caller.scoped
    dataflow = set_model_status(
        state_of(request).store, project, _name(model_name), DataflowStatus(body.status), caller.writer
    )
    return ok({"uuid": dataflow.uuid, "status": dataflow.status.value})


@router.put("/models/{model_name}/partition")
def partition(
    request: Request, model_name: str, body: PartitionRequest, caller: Caller = WRITE, dry_run: bool = False
) -> dict[str, Any]:
    """Change the partition column and format; a different partition drops every built segment (Kylin)."""
    state, project, name = state_of(request), caller.scoped, _name(model_name)
    found = preview_partition(state.store, project, name, body.partition_desc)
    answer = _update_answer(state, project, found, saved=False)
    if not dry_run:
        saved = set_partition(state.store, project, name, body.partition_desc, caller.writer)
        answer |= {"saved": True, "semantic_version": saved.model.semantic_version}
    return ok(answer)


def _config_answer(state: ServerState, project: str, alias: str) -> dict[str, Any]:
    with state.store.read(project) as tx:
        model = require_model(tx, alias)
        in_force = segment_config_in_force(tx.project(), model)
    own = model.segment_config.model_dump(mode="json", exclude_none=True) if model.segment_config else {}
    return {"model": model.alias, "segment_config": own, "in_force": in_force.model_dump(mode="json")}


@router.get("/models/{model_name}/config")
def get_config(request: Request, model_name: str, caller: Caller = READ) -> dict[str, Any]:
    """The model's own segment settings and those in force (the project's for the rest)."""
    return ok(_config_answer(state_of(request), caller.scoped, _name(model_name)))


@router.put("/models/{model_name}/config")
def put_config(request: Request, model_name: str, body: ModelConfigRequest, caller: Caller = WRITE) -> dict[str, Any]:
    """Override the given segment settings for this model (as `precube model config`): only the model
    document changes, no segment or layout."""
    state, project, name = state_of(request), caller.scoped, _name(model_name)
    set_segment_config(state.store, project, name, body.changes, body.inherit, caller.writer)
    return ok(_config_answer(state, project, name))


@router.delete("/models/{model_name}")
def delete(request: Request, model_name: str, caller: Caller = WRITE) -> dict[str, Any]:
    """Delete the model with its index plan and segments; answers what was dropped."""
    state, project, name = state_of(request), caller.scoped, _name(model_name)
    found = remove_model(state.store, state.settings.warehouse_root, project, name, caller.writer)
    return ok(
        {
            "model": found.model,
            "uuid": found.uuid,
            "segments": found.segments,
            "data_bytes": found.data_bytes,
            "layouts": found.layouts,
        }
    )
