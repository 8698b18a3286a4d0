"""`precube jobs list|show|pause|resume|discard|restart|run`."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable

import typer
from rich.table import Table as RichTable

from precube.cli.context import (
    FORMAT,
    PROJECT,
    CliContext,
    OutputFormat,
    console,
    print_records,
    project_state,
    state,
    when,
)
from precube.cli.follow import hand_off, pause_running, result, scheduler, tell, wait_for
from precube.jobs.joblog import log_to
from precube.jobs.lease import Lease
from precube.jobs.lifecycle import Aftermath
from precube.jobs.queue import ready_jobs, recover
from precube.jobs.runner import SCAN, STEP_SECONDS
from precube.jobs.runner_lock import RunnerLock
from precube.jobs.submission import act, get_job, jobs_of
from precube.metadata import Job, JobAction, JobState
from precube.modeling.model_store import require_model

app = typer.Typer(
    help="Build, refresh and merge jobs: list, inspect, pause, resume, discard, restart.", no_args_is_help=True
)


@app.command("list")
def list_jobs(
    ctx: typer.Context,
    project: str = PROJECT,
    model: str | None = typer.Option(None, "--model", "-m", help="Only this model's jobs."),
    fmt: OutputFormat = FORMAT,
) -> None:
    """A project's jobs, newest first."""
    remote = state(ctx).remote()
    if remote is not None:
        from precube.cli import remote_jobs

        remote_jobs.list_jobs(remote, project, model, fmt)
        return
    store = project_state(ctx, project).store()
    target = None
    if model is not None:
        with store.read(project) as tx:
            target = require_model(tx, model).uuid
    runner_gone = Lease(store, project).holder() is None  # a RUNNING job then has nobody running it
    records = [
        {
            "job": job.uuid,
            "type": job.job_type.value,
            "model": job.model_alias or job.target_model or job.target_table,
            "state": job.state.value,
            "runner_gone": job.state is JobState.RUNNING and runner_gone,
            "progress": round(job.progress, 4),
            "created": job.create_time,
            "duration_s": round(job.duration_ms / 1000, 1),
        }
        for job in jobs_of(store, project, target)
    ]
    columns = {
        "job": lambda r: r["job"],
        "type": lambda r: r["type"],
        "model": lambda r: r["model"] or "",
        "state": lambda r: r["state"] + (" (its runner is gone: jobs resume)" if r["runner_gone"] else ""),
        "progress": lambda r: f"{r['progress']:.0%}",
        "created": lambda r: when(r["created"]),
        "duration": lambda r: f"{r['duration_s']:.1f} s",
    }
    print_records(fmt, records, columns, title=f"jobs of {project}")


@app.command("show")
def show(
    ctx: typer.Context,
    job_id: str = typer.Argument(..., help="Job id."),
    project: str = PROJECT,
    fmt: OutputFormat = FORMAT,
) -> None:
    """One job: its target, state, error, and each step's state, progress and output."""
    remote = state(ctx).remote()
    if remote is not None:
        from precube.cli import remote_jobs

        record = remote_jobs.detail(remote, project, job_id)
        if fmt is OutputFormat.json:
            console.print_json(json.dumps(record))
            return
        print_job(remote_jobs.as_job(record))
        return
    job = get_job(project_state(ctx, project).store(), project, job_id)
    if fmt is OutputFormat.json:
        console.print_json(json.dumps(job.model_dump(mode="json")))
        return
    print_job(job)


def print_job(job: Job) -> None:
    """A job's target, state, error and steps (`jobs show`, local or through a server)."""
    console.print(
        f"job [bold]{job.uuid}[/] {job.job_type.value} on {job.model_alias or job.target_model}: "
        f"[bold]{job.state.value}[/] {job.progress:.0%}, priority {job.priority}"
    )
    if job.time_range is not None:
        console.print(f"range: {job.time_range}", markup=False)
    segments = [*job.segment_ids, *([job.params["segment"]] if "segment" in job.params else [])]
    if segments:
        console.print(f"segments: {', '.join(dict.fromkeys(segments))}", markup=False)
    if job.error:
        console.print(f"error: {job.error}")
    view = RichTable("step", "state", "progress", "started", "ended", "duration", "output")
    for step in job.steps:
        ran = (step.end_time or 0) - (step.start_time or 0) if step.start_time and step.end_time else None
        view.add_row(
            step.name,
            step.state.value,
            f"{step.done}/{step.total}" if step.total else "",
            when(step.start_time),
            when(step.end_time),
            "" if ran is None else f"{ran / 1000:.1f} s",
            step.error or step.output,
        )
    console.print(view)
    for key in (SCAN, STEP_SECONDS):  # what a build read of its source and how long each of its steps took
        if key in job.params:
            console.print(job.params[key], markup=False)


def _action(action: JobAction) -> Callable[..., None]:
    def command(
        ctx: typer.Context,
        job_id: str = typer.Argument(..., help="Job id, or a unique start of it."),
        project: str = PROJECT,
        wait: bool = typer.Option(False, "--wait", "-w", help="Run it here and block until it ends (resume, restart)."),
    ) -> None:
        remote = state(ctx).remote()
        if remote is not None:
            from precube.cli import remote_jobs

            remote_jobs.act(remote, project, job_id, action, wait)
            return
        cli = project_state(ctx, project)
        store = cli.store()
        if action is JobAction.RESUME and Lease(store, project).holder() is None:
            for orphan in recover(store, project, cli.writer):  # RUNNING with nobody running it: ERROR now
                console.print(f"job {orphan.uuid} was left RUNNING by a runner that is gone")
        job = act(store, project, job_id, action, cli.writer)
        console.print(f"job {job.uuid}: {job.state.value}")
        if job.state is not JobState.READY:
            return
        if wait:  # resumed or restarted: run it, as `build` does
            wait_for(cli, project, [job])
        else:
            hand_off(cli, project, [])

    command.__doc__ = {
        JobAction.PAUSE: "Pause a job (a running one stops after its current layout).",
        JobAction.RESUME: "Make a paused or failed job ready again; it continues where it stopped.",
        JobAction.DISCARD: "Discard a job for good.",
        JobAction.RESTART: "Run a job again from its first step.",
    }[action]
    return command


for _action_kind in JobAction:
    app.command(_action_kind.value.lower())(_action(_action_kind))


@app.command("run")
def run(
    ctx: typer.Context,
    project: str = PROJECT,
    serve: bool = typer.Option(False, "--serve", help="Keep running and take new jobs until interrupted."),
) -> None:
    """Run the project's READY jobs in this process (the background runner `build` starts), until none is
    left, or with --serve until interrupted. Jobs a dead process left RUNNING become ERROR first."""
    cli = project_state(ctx, project)
    holder = Lease(cli.store(), project).holder()
    if holder is not None:
        console.print(f"the job runner {holder.owner} runs the jobs of project {project}")
        return
    lock = RunnerLock.inherited() or RunnerLock.try_take(cli.settings.home, project)
    if lock is None:
        console.print(f"a job runner of project {project} is starting or running in this home: it runs them")
        return
    try:
        _run(cli, project, serve, lock)
    finally:
        lock.release()


def _run(cli: CliContext, project: str, serve: bool, lock: RunnerLock) -> None:
    """`run` while holding the project's runner lock (`jobs.runner_lock`)."""
    if not serve and sys.stdout.isatty():  # in a terminal: the live progress of `build --wait`
        waiting = ready_jobs(cli.store(), project)
        if waiting:
            wait_for(cli, project, waiting)
        else:
            console.print(f"project {project} has no READY job")
        return
    log_to(sys.stdout)  # a background runner's log: time, level and job on every line

    def told(job: Job, aftermath: Aftermath | None) -> None:
        console.print(result(job, project))
        tell(aftermath)

    while True:
        runner = scheduler(cli, project, told)
        try:
            if serve:
                runner.start()
                while True:  # until Ctrl-C
                    time.sleep(1)
            runner.run_until_idle()
        except KeyboardInterrupt:
            pause_running(cli, project, runner)
            raise
        finally:
            runner.stop()  # gives the lease back
            for job in runner.recovered:
                console.print(f"job {job.uuid} was left RUNNING by a process that died: now ERROR, resumable")
        # A job submitted while this runner was stopping saw the lease or the lock held and started no runner:
        # unlock first, then look, so such a job is either seen here or starts a runner of its own.
        lock.release()
        if not ready_jobs(cli.store(), project):
            return
        taken = RunnerLock.try_take(cli.settings.home, project)
        if taken is None:  # a runner started meanwhile: it runs them
            return
        lock.fd, taken.fd = taken.fd, -1
