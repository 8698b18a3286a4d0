"""`build`, `refresh`, `merge`, `segments`, `segment delete` and `jobs …` through a server's REST API
(`--server`): no metadata store opened, no Spark; the server's job service runs the jobs; `--wait` follows
them by polling their detail. The output is that of the local commands."""

from __future__ import annotations

import time
from typing import Any

import typer

from precube.cli.build import SEGMENT_COLUMNS
from precube.cli.context import OutputFormat, confirm_drop, console, print_records, when
from precube.cli.follow import result
from precube.errors import InvalidInputError
from precube.metadata import Job, JobAction, JobState, JobStep, JobType, TimeRange
from precube.remote import Remote

POLL_S = 0.5
_OVER = ("FINISHED", "ERROR", "DISCARDED", "STOPPED")  # Kylin's statuses after which nothing more happens


def as_job(record: dict[str, Any]) -> Job:
    """A job of the API (`/jobs` record or detail) as precube's `Job`, for the local commands' texts."""
    start, end = int(record.get("data_range_start") or 0), int(record.get("data_range_end") or 0)
    steps = [
        JobStep(
            name=s["name"],
            state=JobState(s["state"]),
            start_time=s["exec_start_time"] or None,
            end_time=s["exec_end_time"] or None,
            done=s["done"],
            total=s["total"],
            output=(s.get("info") or {}).get("output", ""),
            error=s.get("error"),
        )
        for s in record.get("steps", [])
    ]
    return Job(
        uuid=record["id"],
        job_type=JobType(record["job_name"]),
        state=JobState(record["state"]),
        target_model=record.get("target_model"),
        model_alias=record.get("target_subject"),
        segment_ids=record.get("target_segments", []),
        time_range=TimeRange.of(start, end) if end else None,
        priority=record.get("priority", 3),
        submitter=record.get("submitter", ""),
        params=record.get("params", {}),
        steps=steps,
        start_time=record.get("exec_start_time") or None,
        end_time=record.get("exec_end_time") or None,
        error=record.get("error"),
        create_time=record.get("create_time", 0),
        last_modified=record.get("last_modified", 0),
    )


def detail(remote: Remote, project: str, job_id: str) -> dict[str, Any]:
    found: dict[str, Any] = remote.call("GET", f"/jobs/{job_id}/detail", params={"project": project})
    return found


def submitted(remote: Remote, project: str, jobs: list[dict[str, Any]], wait: bool) -> None:
    """Tell the jobs the server took; with `wait`, follow each to its end (exit 1 if one did not succeed)."""
    details = [detail(remote, project, j["job_id"]) for j in jobs]
    for job in details:
        console.print(f"submitted job [bold]{job['id']}[/] ({job['job_name']} on {job['target_subject']})")
    if not wait:
        console.print(f"the server {remote.url} runs it")
        console.print(f"follow with: precube --server {remote.url} jobs list --project {project}")
        return
    follow(remote, project, [j["id"] for j in details])


def follow(remote: Remote, project: str, job_ids: list[str]) -> None:
    """Poll the jobs' detail until each ends; print how (the local `result` line)."""
    pending, failed = list(job_ids), False
    while pending:
        for job_id in list(pending):
            record = detail(remote, project, job_id)
            if record["job_status"] in _OVER:
                pending.remove(job_id)
                console.print(result(as_job(record), project))
                failed = failed or record["job_status"] != "FINISHED"
        if pending:
            time.sleep(POLL_S)
    if failed:
        raise typer.Exit(1)


def build(remote: Remote, project: str, model: str, body: dict[str, Any], wait: bool) -> None:
    answer = remote.call("POST", f"/models/{model}/segments", json={"project": project, **body})
    submitted(remote, project, answer["jobs"], wait)


def index_build(remote: Remote, project: str, model: str, priority: int, wait: bool) -> None:
    answer = remote.call("POST", f"/models/{model}/indexes", json={"project": project, "priority": priority})
    submitted(remote, project, answer["jobs"], wait)


def change(remote: Remote, project: str, model: str, kind: str, targets: list[str], priority: int, wait: bool) -> None:
    """REFRESH or MERGE segments named by id or name (the server tells which each is)."""
    listed = segment_records(remote, project, model)["value"]
    ids = {s["id"] for s in listed}
    by_name = {s["name"]: s["id"] for s in listed}
    chosen = [t if t in ids else by_name.get(t, t) for t in targets]
    body = {"project": project, "type": kind, "ids": chosen, "priority": priority}
    submitted(remote, project, remote.call("PUT", f"/models/{model}/segments", json=body)["jobs"], wait)


def segment_records(remote: Remote, project: str, model: str) -> dict[str, Any]:
    params = {"project": project, "sort_by": "start_time", "reverse": "false", "page_size": 10_000}
    found: dict[str, Any] = remote.call("GET", f"/models/{model}/segments", params=params)
    return found


def segments_in(remote: Remote, project: str, model: str, start: int, end: int) -> list[str]:
    """The ids of the segments holding data of `[start, end)` (what a refresh of the range rebuilds)."""
    params = {"project": project, "start": str(start), "end": str(end), "page_size": 10_000}
    found = remote.call(
        "GET", f"/models/{model}/segments", params={**params, "sort_by": "start_time", "reverse": "false"}
    )
    if not found["value"]:
        raise InvalidInputError(f"model {model} has no segment in {TimeRange.of(start, end)} to refresh")
    return [str(s["id"]) for s in found["value"]]


def segments(remote: Remote, project: str, model: str, fmt: OutputFormat) -> None:
    listed = segment_records(remote, project, model)
    records = [
        {
            "segment": s["name"],
            "id": s["id"],
            "start": int(s["start_time"]),
            "end": int(s["end_time"]),
            "status": s["status_to_display"],
            "source_rows": s["source_count"],
        }
        for s in listed["value"]
    ]
    print_records(fmt, records, SEGMENT_COLUMNS, title=f"{listed['model']}: {listed['model_status']}")


def delete_segments(remote: Remote, project: str, model: str, targets: list[str], yes: bool, dry_run: bool) -> None:
    listed = segment_records(remote, project, model)["value"]
    ids = {s["id"] for s in listed}
    kind = "ids" if all(t in ids for t in targets) else "names"
    params: dict[str, Any] = {"project": project, "purge": "false", kind: targets}
    preview = remote.call("DELETE", f"/models/{model}/segments", params={**params, "dry_run": "true"})
    if not confirm_drop(preview["preview"], yes, dry_run):
        return
    for s in remote.call("DELETE", f"/models/{model}/segments", params=params)["segments"]:
        rng = TimeRange.of(int(s["start_time"]), int(s["end_time"]))
        console.print(f"deleted segment [bold]{s['name']}[/] ({s['id']}), {rng}")


def list_jobs(remote: Remote, project: str, model: str | None, fmt: OutputFormat) -> None:
    params = {"project": project, "time_filter": 4, "page_size": 100_000, "sort_by": "create_time"}
    found = remote.call("GET", "/jobs", params=params)["value"]
    records = [
        {
            "job": j["id"],
            "type": j["job_name"],
            "model": j["target_subject"],
            "state": j["state"],
            "runner_gone": False,  # the server runs them
            "progress": j["step_ratio"],
            "created": j["create_time"],
            "duration_s": round(j["duration"] / 1000, 1),
        }
        for j in found
        if model is None or (j["target_subject"] or "").upper() == model.upper()
    ]
    columns = {
        "job": lambda r: r["job"],
        "type": lambda r: r["type"],
        "model": lambda r: r["model"] or "",
        "state": lambda r: r["state"],
        "progress": lambda r: f"{r['progress']:.0%}",
        "created": lambda r: when(r["created"]),
        "duration": lambda r: f"{r['duration_s']:.1f} s",
    }
    print_records(fmt, records, columns, title=f"jobs of {project}")


def act(remote: Remote, project: str, job_id: str, action: JobAction, wait: bool) -> None:
    body = {"project": project, "job_ids": [job_id], "action": action.value}
    [changed] = remote.call("PUT", "/jobs/status", json=body)
    console.print(f"job {changed['id']}: {changed['state']}")
    if wait and changed["state"] == JobState.READY.value:
        follow(remote, project, [changed["id"]])
