"""Edits of one part of a saved model, each in one project transaction: its name, its status, its partition,
its segment settings, and explicit removal of layouts. A whole-spec change is `model_store.update_model`;
these are what the CLI's `model config` and the REST API's `…/name`, `…/status`, `…/partition`, `…/config`
and `index_plans/index` deletes do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from precube.metadata import (
    Dataflow,
    DataflowStatus,
    IndexPlan,
    Job,
    MetadataStore,
    Model,
    NotFoundError,
    PartitionDesc,
    Project,
    SegmentConfig,
    SegmentConfigOverride,
    SegmentStatus,
    Transaction,
)
from precube.metadata.errors import AlreadyExistsError
from precube.metadata.index_plan import is_table_index
from precube.modeling import index_plan as plans
from precube.modeling.errors import InvalidIndexPlanError, InvalidModelError
from precube.modeling.model_rules import check_model_name
from precube.modeling.model_spec import ModelSpec
from precube.modeling.model_store import (
    ModelUpdate,
    SavedModel,
    broken_text,
    built_layouts,
    editable_spec,
    find_model,
    preview_update,
    require_model,
    update_model,
)


def resolve_model(tx: Transaction, ref: str) -> Model:
    """A model by uuid (Kylin's `model_id`) or by alias (`model_name`)."""
    found = next((m for m in tx.list(Model) if m.uuid == ref), None)
    return found if found is not None else require_model(tx, ref)


def rename_model(store: MetadataStore, project: str, alias: str, new_alias: str, writer: str = "precube") -> Model:
    """Give a model a new alias (unique in the project, compared case-insensitively); nothing else changes:
    segments and layouts refer to its uuid. Refused while one of its jobs is unfinished."""
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)
        other = find_model(tx, new_alias)
        if other is not None and other.uuid != model.uuid:
            raise AlreadyExistsError(f"model {new_alias!r} already exists in project {project!r}")
        # a job runs on its model's alias (the runner looks the model up by it): not under a job's feet
        unfinished = [j.uuid for j in tx.list(Job) if j.target_model == model.uuid and not j.state.is_final]
        if unfinished:
            raise InvalidModelError(
                f"model {model.alias} has unfinished jobs ({', '.join(unfinished)}): let them finish or discard "
                "them before renaming it"
            )
        model.alias = check_model_name(new_alias)
        return tx.update(model)


def set_model_status(
    store: MetadataStore, project: str, alias: str, status: DataflowStatus, writer: str = "precube"
) -> Dataflow:
    """Take a model ONLINE (answering queries) or OFFLINE (Kylin's rules: a BROKEN model cannot change, and
    one without a queryable segment cannot go online)."""
    if status not in (DataflowStatus.ONLINE, DataflowStatus.OFFLINE):
        raise InvalidModelError(f"status must be ONLINE or OFFLINE, not {status.value}")
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)
        dataflow = tx.require(Dataflow, model.uuid)
        if dataflow.status is DataflowStatus.BROKEN:
            raise InvalidModelError(broken_text(model.alias, dataflow.broken_detail, project))
        queryable = [s for s in dataflow.segments if s.status in (SegmentStatus.READY, SegmentStatus.WARNING)]
        if status is DataflowStatus.ONLINE and not queryable:
            raise InvalidModelError(f"model {model.alias} cannot go ONLINE: it has no READY segment")
        if dataflow.status is not status:
            dataflow.status = status
            dataflow = tx.update(dataflow)
        return dataflow


def preview_partition(store: MetadataStore, project: str, alias: str, desc: PartitionDesc | None) -> ModelUpdate:
    """What `set_partition` would do (a changed partition drops every built segment), saving nothing."""
    return preview_update(store, project, _with_partition(store, project, alias, desc))


def set_partition(
    store: MetadataStore, project: str, alias: str, desc: PartitionDesc | None, writer: str = "precube"
) -> SavedModel:
    """Change the model's partition column/format (None: full builds only); as any significant change, a
    different partition drops every built segment (their ranges were cut on the old column)."""
    return update_model(store, project, _with_partition(store, project, alias, desc), writer)


def _with_partition(store: MetadataStore, project: str, alias: str, desc: PartitionDesc | None) -> ModelSpec:
    with store.read(project) as tx:
        model = require_model(tx, alias)
        spec = editable_spec(model, tx.require(IndexPlan, model.uuid))
    spec.partition_desc = desc
    return spec


def segment_config_in_force(project: Project, model: Model) -> SegmentConfig:
    """The settings in force for `model`: its own fields, the project's for the rest."""
    base = project.segment_config
    return model.segment_config.over(base) if model.segment_config is not None else base.model_copy(deep=True)


def set_segment_config(
    store: MetadataStore,
    project: str,
    alias: str,
    changes: Callable[[SegmentConfig], dict[str, Any]],
    inherit: bool = False,
    writer: str = "precube",
) -> Model:
    """Override some of the model's segment settings: `changes(settings in force)` gives the fields to set
    (after dropping the model's own settings when `inherit`). Only the model document changes: no segment or
    layout, and the semantic version stays (not `update_model`, which may drop segments)."""
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)
        if inherit:
            model.segment_config = None
        update = changes(segment_config_in_force(tx.project(), model))
        if update:
            # validated as a whole: the changes may come as documents (REST) or objects (CLI)
            fields = (model.segment_config or SegmentConfigOverride()).model_dump(exclude_none=True) | update
            model.segment_config = SegmentConfigOverride.model_validate(fields)
        return tx.update(model)


@dataclass(frozen=True)
class RemovedLayouts:
    model: str
    removed: tuple[int, ...]
    to_be_deleted: tuple[int, ...]  # built: kept until their segments are rebuilt


def remove_model_layouts(
    store: MetadataStore,
    project: str,
    alias: str,
    layout_ids: Sequence[int],
    writer: str = "precube",
    table_only: bool = False,
) -> RemovedLayouts:
    """Remove layouts from a model's index plan (rule-based ones are black-listed so the rules do not bring
    them back; built ones wait in `to_be_deleted_indexes`). `table_only`: each must be a table index."""
    if not layout_ids:
        raise InvalidIndexPlanError("give at least one layout id")
    with store.transaction(project, writer) as tx:
        model = require_model(tx, alias)
        plan = tx.require(IndexPlan, model.uuid)
        present = {lay.id for lay in plan.all_layouts()}
        for layout_id in layout_ids:
            if layout_id not in present:
                raise NotFoundError(f"layout {layout_id} is not in the index plan of model {model.alias}")
            if table_only and not is_table_index(layout_id):
                raise InvalidIndexPlanError(f"layout {layout_id} is not a table index")
        built = built_layouts(tx, model)
        tx.replace(plans.remove_layouts(plan, layout_ids, built))
        ids = tuple(sorted(set(layout_ids)))
        return RemovedLayouts(model.alias, ids, tuple(i for i in ids if i in built))
