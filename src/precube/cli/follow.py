"""What the CLI does with the jobs it submits: `--wait` runs them in this process (when no other process
holds the project's job lease; otherwise it watches that one) with a live progress bar per job, until
they end together with the jobs that follow them on their models (retention and auto-merge); without
`--wait` it hands them to a background `precube jobs run` (one per home and project: `jobs.runner_lock`) and
returns."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from precube.cli.context import CliContext, console, err_console, when
from precube.engine.context import BuildContext
from precube.errors import PrecubeError
from precube.jobs.lease import Lease
from precube.jobs.lifecycle import AUTO_MERGE, Aftermath, followed
from precube.jobs.runner import SCAN, STEP_SECONDS
from precube.jobs.runner_lock import RunnerLock
from precube.jobs.scheduler import Listener, Scheduler
from precube.jobs.submission import act
from precube.metadata import Job, JobAction, JobState, JobType, MetadataStore

POLL_S = 0.5
_OVER = frozenset({JobState.SUCCEED, JobState.DISCARDED, JobState.ERROR, JobState.PAUSED})  # nothing more happens


def scheduler(cli: CliContext, project: str, listener: Listener) -> Scheduler:
    """A scheduler on this process's supervised Spark session, as the settings configure it."""
    spark = cli.spark_supervisor()
    ctx = BuildContext(spark.session, cli.store(), project, cli.settings.warehouse_root, cli.writer)
    jobs = cli.settings.jobs
    return Scheduler(
        ctx, jobs.concurrency, POLL_S, jobs.lease_ttl_s, listener, spark=spark, min_free_bytes=jobs.min_free_bytes
    )


def result(job: Job, project: str) -> str:
    """One line on how a job ended."""
    if job.state is JobState.SUCCEED:
        p = job.params
        if job.job_type is JobType.INDEX_BUILD:
            return f"built {p.get('layouts_built', '0')} layouts into existing segments (job {job.uuid})"
        verb = {JobType.INDEX_REFRESH: "refreshed", JobType.INDEX_MERGE: "merged into"}.get(job.job_type, "built")
        if job.submitter == AUTO_MERGE:
            verb = f"auto-merge: {verb}"
        rng = job.time_range
        span = f", [{when(rng.start)}, {when(rng.end)})" if rng is not None else ""
        rows = int(p.get("source_rows", "0"))
        name, segment = p.get("segment_name", "?"), p.get("segment", "?")
        told = "".join(f"\n  {escape(p[key])}" for key in (SCAN, STEP_SECONDS) if key in p)
        return f"{verb} segment [bold]{name}[/] ({segment}): {rows:,} source rows{span}{told}"
    if job.state is JobState.ERROR:
        return (
            f"[bold red]job {job.uuid} ({job.job_type}) failed:[/] {escape(job.error or '')}\n"
            f"  resume it with: precube jobs resume {job.uuid} --project {project}"
        )
    return f"job {job.uuid} ({job.job_type}) is {job.state}"


def tell(aftermath: Aftermath | None) -> None:
    """Print what followed a successful job: retention's removals, the auto-merge job, or why none."""
    if aftermath is None:
        return
    for segment in aftermath.removed:
        console.print(f"retention: removed segment {segment.name} ({segment.id})")
    if aftermath.merge is not None and aftermath.merge.time_range is not None:
        rng = aftermath.merge.time_range
        console.print(f"auto-merge: job {aftermath.merge.uuid} merges [{when(rng.start)}, {when(rng.end)})")
    if aftermath.skipped:
        console.print(escape(aftermath.skipped))


def _jobs(store: MetadataStore, project: str, models: set[str | None]) -> list[Job]:
    with store.read(project) as tx:
        return sorted((j for j in tx.list(Job) if j.target_model in models), key=lambda j: j.create_time)


def wait_for(cli: CliContext, project: str, submitted: Sequence[Job]) -> list[Job]:
    """Run or watch `submitted` and what follows them until all end; print how each ended. Exits 1 when
    one of `submitted` did not succeed."""
    store = cli.store()
    models = {j.target_model for j in submitted}
    targets = {j.uuid for j in submitted}
    reported = {j.uuid: j.state for j in _jobs(store, project, models)}
    ended: dict[str, Job] = {}
    runner: Scheduler | None = None
    columns = (TextColumn("{task.description:<44}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"))
    with Progress(*columns, TimeElapsedColumn(), console=err_console) as bars:
        tasks: dict[str, TaskID] = {}

        def over() -> bool:
            jobs = _jobs(store, project, models)
            for job in jobs:
                step = job.current_step
                label = f"{job.job_type.value} {job.model_alias} {step.name if step else ''}"
                if job.state in _OVER:
                    if reported.get(job.uuid) is not job.state:
                        reported[job.uuid] = job.state
                        console.print(result(job, project))
                        if job.uuid in targets:
                            ended[job.uuid] = job
                    if job.uuid in tasks:
                        bars.remove_task(tasks.pop(job.uuid))
                    continue
                if job.uuid not in tasks:
                    tasks[job.uuid] = bars.add_task(label, total=100)
                bars.update(tasks[job.uuid], completed=job.progress * 100, description=label)
            active = any(j.state in (JobState.READY, JobState.RUNNING) for j in jobs)
            # a job's retention and auto-merge come after it ends: wait for them too, while a runner is there
            unfollowed = any(not followed(j) for j in jobs if j.uuid in ended)
            pending = unfollowed and Lease(store, project).holder() is not None
            return targets <= ended.keys() and not active and not pending

        try:
            while not over():
                if runner is None and Lease(store, project).holder() is None:
                    runner = scheduler(cli, project, lambda _job, aftermath: tell(aftermath))
                if runner is not None:
                    runner.tick()
                    runner.wait()
                else:
                    time.sleep(POLL_S)
        except KeyboardInterrupt:
            pause_running(cli, project, runner)
            raise
        finally:
            if runner is not None:
                runner.stop()
    if any(ended[t].state is not JobState.SUCCEED for t in targets):
        raise typer.Exit(1)
    return [ended[t] for t in targets]


def pause_running(cli: CliContext, project: str, runner: Scheduler | None) -> None:
    """Ctrl-C while this process runs jobs: pause them (they stop after their current layout, so the
    process can exit); they continue where they stopped once resumed."""
    for job in runner.running if runner is not None else []:
        try:
            act(cli.store(), project, job.uuid, JobAction.PAUSE, cli.writer)
        except PrecubeError:  # it ended meanwhile
            continue
        err_console.print(f"pausing job {job.uuid}; resume it with: precube jobs resume {job.uuid} -p {project}")


def runner_args(cli: CliContext, project: str) -> list[str]:
    """The command line of a background job runner for `project`, with this CLI's configuration."""
    args = [sys.executable, "-m", "precube"]
    if cli.config is not None:
        args += ["--config", str(cli.config)]
    if cli.home is not None:
        args += ["--home", str(cli.home)]
    return [*args, "jobs", "run", "--project", project]


def hand_off(cli: CliContext, project: str, submitted: Sequence[Job]) -> None:
    """Leave the jobs to the process holding the project's job lease, starting a background runner when
    none does; print how to follow them."""
    for job in submitted:
        console.print(f"submitted job [bold]{job.uuid}[/] ({job.job_type} on {job.model_alias})")
    holder = Lease(cli.store(), project).holder()
    if holder is not None:
        console.print(f"the job runner {holder.owner} will run it")
    elif (lock := RunnerLock.try_take(cli.settings.home, project)) is None:
        console.print("the job runner this home is starting will run it")
    else:
        logs = cli.settings.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"jobs-{project}.log"
        try:
            with log.open("ab") as out:
                subprocess.Popen(
                    runner_args(cli, project),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # outlives this command and its terminal
                    pass_fds=(lock.fd,),  # the runner holds the lock from now on, for as long as it runs
                    env={**os.environ, "PYSPARK_PYTHON": sys.executable, **lock.handing_env()},
                )
        finally:
            lock.close()
        console.print(f"started a background job runner (log: {log})")
    console.print(f"follow with: precube jobs list --project {project}")
