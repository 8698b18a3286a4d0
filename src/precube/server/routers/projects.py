"""Kylin 5's `projects` endpoints: list (only the projects the caller holds a permission on), create and delete
(system admins), and the project's settings: segment config, pushdown, overridden properties (project admins,
as Kylin's "edit project"; any member reads them)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jobs import lifecycle
from precube.jobs.project_settings import check_properties, pushdown_enabled, update_project_settings
from precube.jobs.removal import remove_project
from precube.metadata import Project
from precube.metadata.paths import check_project_name
from precube.metadata.project import AutoMergeTimeRange
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of
from precube.service.queries import PUSHDOWN_PROPERTY
from precube.sources.tables import check_identifier

router = APIRouter(tags=["projects"])

_TEXT = 4096  # longest description


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateProject(_Body):
    name: str = Field(max_length=200)
    description: str = Field("", max_length=_TEXT)
    override_kylin_properties: dict[str, str] = Field(default_factory=dict, max_length=200)
    default_database: str = Field("DEFAULT", max_length=200)  # precube's: the database of bare table names
    maintain_model_type: str = Field("MANUAL_MAINTAIN", pattern="^MANUAL_MAINTAIN$")


class VolatileRangeIn(_Body):
    volatile_range_number: int | None = Field(None, ge=0, le=100_000)
    volatile_range_enabled: bool | None = None
    volatile_range_type: AutoMergeTimeRange | None = None


class RetentionRangeIn(_Body):
    retention_range_number: int | None = Field(None, ge=1, le=100_000)
    retention_range_enabled: bool | None = None
    retention_range_type: AutoMergeTimeRange | None = None


class SegmentConfigIn(_Body):
    """Kylin's `SegmentConfigRequest`: a field left out keeps its value."""

    project: str | None = None
    auto_merge_enabled: bool | None = None
    auto_merge_time_ranges: list[AutoMergeTimeRange] | None = Field(None, min_length=1, max_length=8)
    auto_merge_thresholds_ms: list[int] | None = Field(None, max_length=16)  # precube's: merge by durations
    volatile_range: VolatileRangeIn | None = None
    retention_range: RetentionRangeIn | None = None
    create_empty_segment_enabled: bool | None = None


class PushDownConfigIn(_Body):
    project: str | None = None
    push_down_enabled: bool


class ProjectConfigIn(_Body):
    """Properties to set; a null value removes the property (the project then takes the server's default)."""

    project: str | None = None
    override_kylin_properties: dict[str, str | None] = Field(max_length=200)


def _same_project(caller: Caller, named: str | None) -> str:
    """The path's project; a body naming another one is refused rather than guessed between."""
    assert caller.project is not None  # the route's path names it
    if named is not None and named != caller.project:
        raise InvalidInputError(f"the body names project {named!r} but the path names {caller.project!r}")
    return caller.project


def _describe(p: Project, permission: Permission | None) -> dict[str, Any]:
    described = p.model_dump(mode="json")
    described["permission"] = permission.name if permission is not None else None
    return described


def _config(p: Project) -> dict[str, Any]:
    """The project's settings as Kylin's `project_config` names them."""
    seg = p.segment_config.model_dump(mode="json")
    return {
        "project": p.name,
        "description": p.description,
        "default_database": p.default_database,
        "maintain_model_type": p.maintain_model_type,
        "push_down_enabled": pushdown_enabled(p),
        "first_day_of_week": lifecycle.first_day_of_week(p),
        "override_kylin_properties": dict(p.override_kylin_properties),
        "segment_config": seg,
        **seg,
    }


@router.get("/projects")
def list_projects(
    request: Request,
    caller: Caller = Depends(requires(project_optional=True)),
    project: str | None = Query(None, max_length=200),
    exact: bool = False,
    paged: Paging = Depends(paging),
) -> dict[str, Any]:
    """The projects the caller holds a permission on (system admins: all), filtered by name (`exact`, else
    a case-insensitive substring)."""
    state = state_of(request)
    found = []
    for p in state.store.list_projects():
        if project is not None and (p.name != project if exact else project.lower() not in p.name.lower()):
            continue
        held = state.directory.permission(caller.user, p.name)
        if held is not None:
            found.append(_describe(p, held))
    return ok(page(found, paged))


@router.post("/projects")
def create_project(request: Request, body: CreateProject, caller: Caller = Depends(requires(admin=True))) -> Any:
    """Create a project; its creator becomes its ADMIN (as Kylin's owner)."""
    state = state_of(request)
    name = check_project_name(body.name)
    if "\0" in body.description:
        raise InvalidInputError("description holds a NUL character")
    properties = {k: v for k, v in check_properties(body.override_kylin_properties).items() if v is not None}
    project = Project(
        name=name,
        owner=caller.name,
        description=body.description,
        default_database=check_identifier(body.default_database, "database"),
        override_kylin_properties=properties,
    )
    created = state.store.create_project(project, writer=caller.writer)
    state.directory.grant(name, caller.name, Permission.ADMIN, writer=caller.writer)
    return ok(_describe(created, Permission.ADMIN))


@router.delete("/projects/{project}")
def delete_project(request: Request, project: str, caller: Caller = Depends(requires(admin=True))) -> Any:
    """Delete a project with its metadata, ACL and built data (as `precube project delete`); answers what was
    dropped. Refused while one of its jobs runs."""
    state = state_of(request)
    state.store.require_project(project)
    dropped = remove_project(state.store, state.settings.warehouse_root, project, caller.writer)
    state.queries.sessions.forget(project)
    state.directory.forget_cached()  # its ACL went with it
    if state.cache is not None:
        state.cache.clear(project, store=state.store.identity)  # a new project of that name starts empty
    return ok(
        {
            "project": dropped.project,
            "documents": dropped.documents,
            "models": list(dropped.models),
            "segments": dropped.segments,
            "data_bytes": dropped.data_bytes,
            "describe": dropped.describe(),
        }
    )


@router.get("/projects/{project}/segment_config")
def get_segment_config(
    request: Request, project: str, caller: Caller = Depends(requires(Permission.QUERY))
) -> dict[str, Any]:
    return ok(state_of(request).store.get_project(project).segment_config.model_dump(mode="json"))


@router.put("/projects/{project}/segment_config")
def put_segment_config(
    request: Request, project: str, body: SegmentConfigIn, caller: Caller = Depends(requires(Permission.ADMIN))
) -> dict[str, Any]:
    """Kylin's segment settings of the project (auto-merge, volatile range, retention); models take them
    unless they override them."""
    name = _same_project(caller, body.project)
    state = state_of(request)
    current = state.store.get_project(name).segment_config
    changes: dict[str, Any] = body.model_dump(
        exclude_none=True, exclude={"project", "volatile_range", "retention_range"}
    )
    if any(t <= 0 for t in body.auto_merge_thresholds_ms or []):
        raise InvalidInputError("auto_merge_thresholds_ms must be positive durations in milliseconds")
    if body.auto_merge_time_ranges is not None and body.auto_merge_thresholds_ms is None:
        changes["auto_merge_thresholds_ms"] = []  # calendar levels replace duration thresholds, as in the CLI
    if body.volatile_range is not None:
        given = body.volatile_range.model_dump(exclude_none=True)
        changes["volatile_range"] = current.volatile_range.model_copy(update=given)
    if body.retention_range is not None:
        given = body.retention_range.model_dump(exclude_none=True)
        changes["retention_range"] = current.retention_range.model_copy(update=given)
    updated = update_project_settings(state.store, name, caller.writer, segment_changes=changes)
    return ok(updated.segment_config.model_dump(mode="json"))


@router.put("/projects/{project}/push_down_config")
def put_push_down_config(
    request: Request, project: str, body: PushDownConfigIn, caller: Caller = Depends(requires(Permission.ADMIN))
) -> dict[str, Any]:
    """Turn pushdown on or off for the project (`kylin.query.pushdown-enabled`, which its queries honour)."""
    name = _same_project(caller, body.project)
    state = state_of(request)
    value = "true" if body.push_down_enabled else "false"
    updated = update_project_settings(state.store, name, caller.writer, properties={PUSHDOWN_PROPERTY: value})
    return ok({"project": name, "push_down_enabled": pushdown_enabled(updated)})


@router.get("/projects/{project}/project_config")
def get_project_config(
    request: Request, project: str, caller: Caller = Depends(requires(Permission.QUERY))
) -> dict[str, Any]:
    return ok(_config(state_of(request).store.get_project(project)))


@router.put("/projects/{project}/project_config")
@router.put("/projects/{project}/config")
def put_project_config(
    request: Request, project: str, body: ProjectConfigIn, caller: Caller = Depends(requires(Permission.ADMIN))
) -> dict[str, Any]:
    """Set (or with null remove) overridden properties; those precube reads are checked for their values."""
    name = _same_project(caller, body.project)
    state = state_of(request)
    updated = update_project_settings(state.store, name, caller.writer, properties=body.override_kylin_properties)
    return ok(_config(updated))
