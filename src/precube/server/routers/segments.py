"""Kylin 5's `segments` endpoints (reference §6): list a model's segments (QUERY); build, refresh, merge,
delete them and build missing indexes (OPERATION). Builds, refreshes and merges become jobs the job
service runs; the answer names them (`{"jobs": [{"job_name", "job_id"}]}`).

`DELETE …/segments?dry_run=true` answers the preview of what a delete drops (the text `precube segment
delete` shows) and drops nothing; without it the segments go and the answer carries the same preview."""

from __future__ import annotations

import re
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jobs.build_range import REST, build_range
from precube.jobs.lifecycle import delete_segments
from precube.jobs.plans import build_job, index_build_job, merge_job, refresh_job
from precube.jobs.removal import preview_segment_removal
from precube.jobs.segment_listing import SegmentView, list_segments
from precube.jobs.submission import submit_all
from precube.metadata import Dataflow, Job, TimeRange
from precube.metadata.paths import check_name
from precube.modeling.model_store import require_model
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of

router = APIRouter(tags=["segments"])

_MS = re.compile(r"^\d{1,15}$")
Priority = Field(default=3, ge=0, le=4)


def _ms(value: str | None, name: str) -> int | None:
    """Epoch ms of a Kylin time parameter (a string of digits); None when not given."""
    if value is None or value == "":
        return None
    if not _MS.match(value):
        raise InvalidInputError(f"{name} must be epoch milliseconds (digits), not {value[:40]!r}")
    return int(value)


def _model_name(name: str) -> str:
    return check_name(name, "model name")


def _jobs(jobs: list[Job]) -> dict[str, Any]:
    return {"jobs": [{"job_name": str(j.job_type), "job_id": j.uuid} for j in jobs]}


def _submit(request: Request, caller: Caller, jobs: list[Job]) -> dict[str, Any]:
    """Record the jobs as submitted by the signed-in user (Kylin's job list shows who), answer their ids."""
    for job in jobs:
        job.submitter = caller.name
    return ok(_jobs(submit_all(state_of(request).store, caller.scoped, jobs, caller.writer)))


def _segment(view: SegmentView, planned: int) -> dict[str, Any]:
    seg = view.segment
    return {
        "id": seg.id,
        "name": seg.name,
        "create_time_utc": seg.create_time_utc,
        "status": str(seg.status),
        "status_to_display": str(view.status),
        "segRange": {"date_range_start": seg.range.start, "date_range_end": seg.range.end},
        "start_time": str(seg.range.start),  # Kylin gives the range's ends as strings of ms
        "end_time": str(seg.range.end),
        "source_count": view.source_rows,
        "bytes_size": view.data_bytes,
        "index_count": view.layouts,
        "index_count_total": planned,
        "last_build_time": seg.last_build_time,
    }


_SORT = {
    "start_time": lambda r: r["segRange"]["date_range_start"],
    "end_time": lambda r: r["segRange"]["date_range_end"],
    "create_time": lambda r: r["create_time_utc"],
    "create_time_utc": lambda r: r["create_time_utc"],
    "last_modified": lambda r: r["last_build_time"],
    "last_build_time": lambda r: r["last_build_time"],
    "name": lambda r: r["name"],
    "source_count": lambda r: r["source_count"] if r["source_count"] is not None else -1,
    "bytes_size": lambda r: r["bytes_size"] if r["bytes_size"] is not None else -1,
    "index_count": lambda r: r["index_count"],
}


@router.get("/models/{model_name}/segments")
def segments(
    request: Request,
    model_name: str,
    start: str | None = None,
    end: str | None = None,
    status: str | None = None,
    paged: Paging = Depends(paging),
    sort_by: str = "last_modified",
    reverse: bool = True,
    caller: Caller = Depends(requires(Permission.QUERY)),
) -> dict[str, Any]:
    """A model's segments overlapping `[start, end)`, of display status `status`, paged."""
    state, project = state_of(request), str(caller.project)
    if sort_by not in _SORT:
        raise InvalidInputError(f"sort_by must be one of {', '.join(_SORT)}, not {sort_by[:40]!r}")
    listing = list_segments(state.store, state.settings.warehouse_root, project, _model_name(model_name))
    lo, hi = _ms(start, "start"), _ms(end, "end")
    wanted = TimeRange.of(lo or 0, hi) if hi is not None else TimeRange.of(lo or 0, TimeRange.full().end)
    records = [
        _segment(v, listing.planned_layouts)
        for v in listing.segments
        if v.segment.range.overlaps(wanted) and (status is None or str(v.status) == status.upper())
    ]
    records.sort(key=_SORT[sort_by], reverse=reverse)
    model = {"model": listing.model.alias, "model_status": str(listing.dataflow.status)}
    return ok({**page(records, paged), **model})


class BuildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str
    start: str | None = None  # epoch ms; default: the end of the last segment
    end: str | None = None  # epoch ms; omit both for the full build of a model without partition column
    build_all_indexes: bool = True
    priority: int = Priority


@router.post("/models/{model_name}/segments")
def build(
    request: Request, model_name: str, body: BuildRequest, caller: Caller = Depends(requires(Permission.OPERATION))
) -> dict[str, Any]:
    """Build a new segment (Kylin's INC_BUILD, or FULL_BUILD of a model without partition column)."""
    if not body.build_all_indexes:
        raise InvalidInputError("build_all_indexes=false is not supported: a new segment holds every index")
    state, project, model = state_of(request), str(caller.project), _model_name(model_name)
    rng = build_range(state.store, project, model, _ms(body.start, "start"), _ms(body.end, "end"), REST)
    job = build_job(state.store, project, model, rng, body.priority)
    return _submit(request, caller, [job])


class ChangeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str
    type: Literal["REFRESH", "MERGE"] = "REFRESH"
    ids: list[str] | None = None
    names: list[str] | None = None
    refresh_all_indexes: bool = True
    priority: int = Priority


def _targets(ids: list[str] | None, names: list[str] | None) -> list[str]:
    if bool(ids) == bool(names):
        raise InvalidInputError("give the segments as ids or as names (one of the two, not empty)")
    chosen = ids or names or []
    for target in chosen:
        check_name(target, "segment id" if ids else "segment name")
    return chosen


@router.put("/models/{model_name}/segments")
def refresh_or_merge(
    request: Request, model_name: str, body: ChangeRequest, caller: Caller = Depends(requires(Permission.OPERATION))
) -> dict[str, Any]:
    """REFRESH: rebuild each segment from source (one job each); MERGE: contiguous segments into one."""
    state, project, model = state_of(request), str(caller.project), _model_name(model_name)
    targets = _targets(body.ids, body.names)
    if body.type == "MERGE":
        jobs = [merge_job(state.store, project, model, targets, body.priority)]
    else:
        jobs = [refresh_job(state.store, project, model, t, body.priority) for t in targets]
    return _submit(request, caller, jobs)


@router.delete("/models/{model_name}/segments")
def delete(
    request: Request,
    model_name: str,
    purge: bool = Query(...),
    ids: list[str] | None = Query(None),
    names: list[str] | None = Query(None),
    force: bool = False,
    dry_run: bool = False,
    caller: Caller = Depends(requires(Permission.OPERATION)),
) -> dict[str, Any]:
    """Delete segments (`purge=true`: all of them), refused for one a job works on (`force` does not
    change that). The answer: the preview (`dry_run=true`: only the preview, nothing dropped)."""
    state, project, model = state_of(request), str(caller.project), _model_name(model_name)
    if purge:
        if ids or names:
            raise InvalidInputError("purge=true deletes every segment: give no ids or names with it")
        with state.store.read(project) as tx:
            targets = [s.id for s in tx.require(Dataflow, require_model(tx, model).uuid).segments]
        if not targets:
            raise InvalidInputError(f"model {model} has no segment to purge")
    else:
        targets = _targets(_split(ids), _split(names))
    preview = preview_segment_removal(state.store, state.settings.warehouse_root, project, model, targets)
    answer: dict[str, Any] = {
        "preview": preview.describe(),
        "dry_run": dry_run,
        "segments": [
            {"id": s.id, "name": s.name, "start_time": str(s.range.start), "end_time": str(s.range.end)}
            for s in preview.segments
        ],
        "bytes_size": preview.data_bytes,
    }
    if not dry_run:
        delete_segments(state.store, project, model, targets, caller.writer)
    return ok(answer)


def _split(values: list[str] | None) -> list[str] | None:
    """Kylin takes lists as repeated parameters or comma-separated."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str
    start: str
    end: str


@router.post("/models/{model_name}/segments/check")
def check(
    request: Request, model_name: str, body: CheckRequest, caller: Caller = Depends(requires(Permission.QUERY))
) -> dict[str, Any]:
    """The segments overlapping `[start, end)`: what a build of that range would collide with."""
    state, project = state_of(request), str(caller.project)
    lo, hi = _ms(body.start, "start"), _ms(body.end, "end")
    assert lo is not None and hi is not None  # both required
    if lo >= hi:
        raise InvalidInputError(f"start ({lo}) must be before end ({hi})")
    listing = list_segments(state.store, state.settings.warehouse_root, project, _model_name(model_name))
    wanted = TimeRange.of(lo, hi)
    overlapping = [
        {"id": v.segment.id, "name": v.segment.name, "start": str(v.segment.range.start),
         "end": str(v.segment.range.end), "status_to_display": str(v.status)}
        for v in listing.segments
        if v.segment.range.overlaps(wanted)
    ]  # fmt: skip
    return ok({"segments_overlap": overlapping})


class IndexBuildRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: str
    priority: int = Priority


@router.post("/models/{model_name}/indexes")
def build_indexes(
    request: Request, model_name: str, body: IndexBuildRequest, caller: Caller = Depends(requires(Permission.OPERATION))
) -> dict[str, Any]:
    """Build the layouts of the index plan that READY segments lack (`precube build --add-layouts`)."""
    state, project = state_of(request), str(caller.project)
    job = index_build_job(state.store, project, _model_name(model_name), body.priority)
    return _submit(request, caller, [job])
