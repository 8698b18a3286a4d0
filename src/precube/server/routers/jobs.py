"""Kylin 5's `jobs` endpoints (reference §6): list (QUERY; every visible project when no project is
given), detail and step output (QUERY), actions and deletion (OPERATION). A job is only ever looked up in
the project the caller names and holds a permission on: another project's job is a 404 there.

Kylin's job statuses stand for precube's states: PENDING = READY, RUNNING, FINISHED = SUCCEED, ERROR,
DISCARDED, STOPPED = PAUSED."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict

from precube.auth import Permission
from precube.errors import InvalidInputError
from precube.jobs.joblog import job_lines
from precube.jobs.submission import act, delete_jobs, get_job
from precube.metadata import Job, JobAction, JobState, JobType, NotFoundError
from precube.metadata.entity import now_ms
from precube.metadata.paths import check_name
from precube.server.envelope import Paging, ok, page, paging
from precube.server.security import Caller, requires, state_of

router = APIRouter(tags=["jobs"])

STATUS: dict[JobState, str] = {
    JobState.READY: "PENDING",
    JobState.RUNNING: "RUNNING",
    JobState.SUCCEED: "FINISHED",
    JobState.ERROR: "ERROR",
    JobState.DISCARDED: "DISCARDED",
    JobState.PAUSED: "STOPPED",
}
_STATES = {v: k for k, v in STATUS.items()}
DAY_MS = 86_400_000
# Kylin's time_filter: 0 the last day, 1 week, 2 month, 3 year, 4 all
WINDOW_MS: dict[int, int | None] = {0: DAY_MS, 1: 7 * DAY_MS, 2: 31 * DAY_MS, 3: 365 * DAY_MS, 4: None}


def _split(values: list[str] | None) -> list[str]:
    """Kylin takes lists as repeated parameters or comma-separated."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _job_id(job_id: str) -> str:
    return check_name(job_id, "job id")


def record(job: Job, project: str) -> dict[str, Any]:
    """A job as Kylin's `ExecutableResponse` shows it (plus precube's `state`)."""
    rng = job.time_range
    return {
        "id": job.uuid,
        "job_name": str(job.job_type),
        "job_status": STATUS[job.state],
        "state": str(job.state),
        "project": project,
        "target_model": job.target_model,
        "target_subject": job.model_alias or job.target_table,
        "target_segments": list(job.segment_ids),
        "data_range_start": rng.start if rng is not None else 0,
        "data_range_end": rng.end if rng is not None else 0,
        "priority": job.priority,
        "submitter": job.submitter,
        "create_time": job.create_time,
        "last_modified": job.last_modified,
        "exec_start_time": job.start_time or 0,
        "exec_end_time": job.end_time or 0,
        "duration": job.duration_ms,
        "step_ratio": round(job.progress, 4),
        "error": job.error,
        "params": dict(job.params),
    }


_SORT: dict[str, Callable[[dict[str, Any]], Any]] = {
    key: (lambda k: lambda r: (r[k] is None, r[k] or 0))(key)
    for key in ("create_time", "last_modified", "duration", "exec_start_time", "exec_end_time", "priority")
}
_SORT.update(
    {key: (lambda k: lambda r: str(r[k] or ""))(key) for key in ("id", "job_name", "job_status", "target_subject")}
)


@router.get("/jobs")
def jobs(
    request: Request,
    time_filter: int = Query(..., ge=0, le=4),
    statuses: list[str] | None = Query(None),
    job_names: list[str] | None = Query(None),
    key: str | None = Query(None, max_length=200),
    paged: Paging = Depends(paging),
    sort_by: str = "create_time",
    reverse: bool = True,
    caller: Caller = Depends(requires(Permission.QUERY, project_optional=True)),
) -> dict[str, Any]:
    """The jobs of the project (or of every project the caller may see), filtered and paged."""
    state = state_of(request)
    wanted_states = set()
    for name in _split(statuses):
        if name.upper() not in _STATES:
            raise InvalidInputError(f"unknown job status {name[:40]!r}: use one of {', '.join(_STATES)}")
        wanted_states.add(_STATES[name.upper()])
    types = set()
    for name in _split(job_names):
        try:
            types.add(JobType(name.upper()))
        except ValueError as err:
            known = ", ".join(t.value for t in JobType)
            raise InvalidInputError(f"unknown job name {name[:40]!r}: use one of {known}") from err
    if sort_by not in _SORT:
        raise InvalidInputError(f"sort_by must be one of {', '.join(_SORT)}, not {sort_by[:40]!r}")
    if caller.project is not None:
        projects = [caller.project]
    else:
        projects = sorted(
            p.name for p in state.store.list_projects() if state.directory.permission(caller.user, p.name) is not None
        )
    window = WINDOW_MS[time_filter]
    since = now_ms() - window if window is not None else None
    needle = key.lower() if key else None
    records = []
    for project in projects:
        with state.store.read(project) as tx:
            found = tx.list(Job)
        for job in found:
            if wanted_states and job.state not in wanted_states:
                continue
            if types and job.job_type not in types:
                continue
            if since is not None and job.create_time < since:
                continue
            if needle and needle not in job.uuid.lower() and needle not in (job.model_alias or "").lower():
                continue
            records.append(record(job, project))
    records.sort(key=_SORT[sort_by], reverse=reverse)
    return ok(page(records, paged))


class StatusRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["RESUME", "PAUSE", "DISCARD", "RESTART"]
    project: str
    job_ids: list[str] = []
    statuses: list[str] = []


@router.put("/jobs/status")
def change_status(
    request: Request, body: StatusRequest, caller: Caller = Depends(requires(Permission.OPERATION))
) -> dict[str, Any]:
    """Pause, resume, discard or restart jobs: those named, or (no ids) every job of the given statuses.
    Every named job is checked to exist before any is changed."""
    state, project = state_of(request), str(caller.project)
    action = JobAction(body.action)
    if body.job_ids:
        chosen = [get_job(state.store, project, _job_id(j)).uuid for j in body.job_ids]
    elif body.statuses:
        wanted = set()
        for name in body.statuses:
            if name.upper() not in _STATES:
                raise InvalidInputError(f"unknown job status {name[:40]!r}: use one of {', '.join(_STATES)}")
            wanted.add(_STATES[name.upper()])
        with state.store.read(project) as tx:
            chosen = [j.uuid for j in tx.list(Job) if j.state in wanted and j.state in action.sources]
    else:
        raise InvalidInputError("give job_ids, or statuses to act on every job in them")
    changed = [act(state.store, project, job_id, action, caller.writer) for job_id in chosen]
    return ok([{"id": j.uuid, "job_status": STATUS[j.state], "state": str(j.state)} for j in changed])


@router.get("/jobs/{job_id}/detail")
def detail(request: Request, job_id: str, caller: Caller = Depends(requires(Permission.QUERY))) -> dict[str, Any]:
    """The job's steps: status, progress and times (Kylin's `ExecutableStepResponse`)."""
    job = get_job(state_of(request).store, str(caller.project), _job_id(job_id))
    now = now_ms()
    steps = []
    for index, step in enumerate(job.steps):
        ended = step.end_time or (now if step.state is JobState.RUNNING else None)
        steps.append(
            {
                "id": f"{job.uuid}_{index:02d}",
                "sequence_id": index,
                "name": step.name,
                "step_status": STATUS[step.state],
                "state": str(step.state),
                "progress": round(step.fraction, 4),
                "done": step.done,
                "total": step.total,
                "exec_start_time": step.start_time or 0,
                "exec_end_time": step.end_time or 0,
                "duration": (ended - step.start_time) if step.start_time and ended else 0,
                "info": {"output": step.output},
                "error": step.error,
            }
        )
    return ok({**record(job, str(caller.project)), "steps": steps})


@router.get("/jobs/{job_id}/steps/{step_id}/output")
def step_output(
    request: Request, job_id: str, step_id: str, caller: Caller = Depends(requires(Permission.QUERY))
) -> dict[str, Any]:
    """The step's output: its last progress line and error, then the job log's lines written while it ran."""
    state = state_of(request)
    job = get_job(state.store, str(caller.project), _job_id(job_id))
    prefix, _, number = check_name(step_id, "step id").rpartition("_")
    if prefix != job.uuid or not number.isdigit() or int(number) >= len(job.steps):
        raise NotFoundError(f"job {job.uuid} has no step {step_id!r}")
    step = job.steps[int(number)]
    lines = [f"{step.name}: {STATUS[step.state]}"] + [t for t in (step.output, step.error) if t]
    if step.start_time:
        until = (step.end_time or now_ms()) + 1000
        lines += [
            line
            for line in job_lines(state.settings.home / "logs", job.uuid)
            if _within(line, step.start_time - 1000, until)
        ]
    return ok({"step_id": step_id, "job_id": job.uuid, "cmd_output": "\n".join(lines)})


def _within(line: str, start_ms: int, end_ms: int) -> bool:
    """Whether a job log line (it starts with logging's local `asctime`) was written in `[start, end]`."""
    try:
        stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S")) * 1000
    except ValueError:
        return False
    return start_ms <= stamp <= end_ms


@router.delete("/jobs")
def delete(
    request: Request,
    job_ids: list[str] = Query(...),
    caller: Caller = Depends(requires(Permission.OPERATION)),
) -> dict[str, Any]:
    """Delete finished or discarded jobs (all named, or none)."""
    ids = [_job_id(j) for j in _split(job_ids)]
    if not ids:
        raise InvalidInputError("give job_ids")
    deleted = delete_jobs(state_of(request).store, str(caller.project), ids, caller.writer)
    return ok([j.uuid for j in deleted])
