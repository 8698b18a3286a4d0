"""Running one job in this process: its operation from `precube.engine`, with each step's state and
progress persisted in the job's document as it goes, so another process (the CLI, a server) can follow
it, and a user's pause or discard stops it between two layouts.

The operations are resumable, so running a job again (after ERROR, or a resume) continues where it
stopped: the NEW segment is found again and the layouts it already holds are skipped.

Each run names itself in the job (`Job.runner`) when it starts, and every write it makes — progress, the NEW
segment, each layout, the final commit — checks in the same transaction that the job is still its own (RUNNING
or PAUSED by a user, and `runner` unchanged): a run whose process stalled while another took the project's
lease over and resumed the job stops at its next write and publishes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from precube.engine.context import BuildContext, BuildReport
from precube.jobs.engine_loss import ENGINE_RESUMES, put_back, resumed_note
from precube.jobs.errors import JobError
from precube.jobs.joblog import for_job
from precube.jobs.lease import LeaseLostError
from precube.jobs.reconcile import recorded
from precube.metadata import (
    Job,
    JobState,
    JobStats,
    JobStep,
    JobType,
    Model,
    Segment,
    TimeRange,
    Transaction,
    new_job_id,
)
from precube.metadata.entity import now_ms

if TYPE_CHECKING:
    from precube.jobs.spark_supervisor import SparkSupervisor

# The steps of each job type, in order; the build's progress stages name which one is running.
STEPS: dict[JobType, tuple[str, ...]] = {
    JobType.FULL_BUILD: ("dictionaries", "layers", "commit"),
    JobType.INC_BUILD: ("dictionaries", "layers", "commit"),
    JobType.INDEX_REFRESH: ("dictionaries", "layers", "commit"),
    JobType.INDEX_BUILD: ("layers", "commit"),
    JobType.INDEX_MERGE: ("merge", "commit"),
}
SAVE_EVERY_S = 0.5  # progress is written at most this often (and at every change of step)
SPARK_LOG = logging.getLogger("precube.jobs.spark")


class JobInterruptedError(JobError):
    """The job was paused or discarded while it ran; it stopped between two layouts."""

    code = "JOB_INTERRUPTED"


class JobTakenOverError(JobInterruptedError):
    """Another run (another process that took the project's lease over) owns the job now: this one stops
    without writing anything more."""

    code = "JOB_TAKEN_OVER"


OWN_STATES = (JobState.RUNNING, JobState.PAUSED)  # a user's pause lets the current layout finish and record


def _check_own(job: Job, runner: str) -> None:
    if job.runner != runner or job.state not in OWN_STATES:
        by = f"run {job.runner}" if job.runner != runner else f"nobody (it is {job.state.value})"
        raise JobTakenOverError(f"job {job.uuid} was taken over while this run ({runner}) ran it: now {by}")


def new_job(
    model: Model,
    job_type: JobType,
    time_range: TimeRange | None = None,
    segment_ids: tuple[str, ...] = (),
    layout_ids: tuple[int, ...] = (),
    priority: int = 3,
    submitter: str = "precube",
) -> Job:
    """A READY job on `model` with the steps of its type (submit it with `submission.submit`)."""
    if job_type not in STEPS:
        raise JobError(f"{job_type} jobs do not run on models")
    return Job(
        uuid=new_job_id(model.uuid),
        job_type=job_type,
        target_model=model.uuid,
        model_alias=model.alias,
        time_range=time_range,
        segment_ids=list(segment_ids),
        layout_ids=list(layout_ids),
        priority=priority,
        submitter=submitter,
        steps=[JobStep(name=name) for name in STEPS[job_type]],
    )


class _Recorder:
    """Writes a running job's progress to its document; raises when a user paused or discarded it, or another
    run took it over."""

    def __init__(self, ctx: BuildContext, job_id: str) -> None:
        self.ctx, self.job_id = ctx, job_id
        self.runner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"  # this run of the job
        self.saved_at = 0.0
        self.step = ""  # the step last written as running

    def update(
        self, change: Callable[[Job], None], force: bool = False, running: bool = True, start: bool = False
    ) -> Job | None:
        """Apply `change` to the stored job (None when throttled away); `running`: refuse to, and stop the
        build, if a user moved the job out of RUNNING meanwhile or another run took it over; `running` and
        `start`: refuse unless this process holds the project's job lease (`BuildContext.fence`)."""
        if not force and time.monotonic() - self.saved_at < SAVE_EVERY_S:
            return None
        with self.ctx.store.transaction(self.ctx.project, self.ctx.writer) as tx:
            job = tx.require(Job, self.job_id)
            if running or start:
                self._leased(tx)
            if running:
                _check_own(job, self.runner)
                if job.state is not JobState.RUNNING:
                    raise JobInterruptedError(f"job {self.job_id} was {job.state.value.lower()} while it ran")
            change(job)
            tx.update(job)
        self.saved_at = time.monotonic()
        return job

    def fence(self, tx: Transaction) -> None:
        """The build's writes are this run's only while the job and the project's job lease are."""
        self._leased(tx)
        _check_own(tx.require(Job, self.job_id), self.runner)

    def _leased(self, tx: Transaction) -> None:
        try:
            self.ctx.fence(tx)  # the scheduler's: its process holds the project's job lease
        except LeaseLostError as err:
            raise JobTakenOverError(f"job {self.job_id}: {err.message}") from err

    def progress(self, stage: str, done: int, total: int) -> None:
        self.ctx.progress(stage, done, total)
        first = stage.split(" ")[0]
        name = {"dictionary": "dictionaries", "layer": "layers"}.get(first, first)

        def change(job: Job) -> None:
            index = next((i for i, s in enumerate(job.steps) if s.name == name), None)
            if index is None:
                return
            _advance(job, index)
            step = job.steps[index]
            step.done, step.total, step.output = done, total, f"{stage}: {done}/{total}"

        if name != self.step:
            for_job(self.job_id).info("step %s: %s", name, stage)
        self.update(change, force=name != self.step or done >= total)  # a step's end is always written
        self.step = name


def _advance(job: Job, step: int) -> None:
    """Make `step` the running one: the steps before it are done."""
    now = now_ms()
    for earlier in job.steps[:step]:
        if earlier.state is not JobState.SUCCEED:
            earlier.state, earlier.end_time = JobState.SUCCEED, now
            earlier.start_time = earlier.start_time or now
    current = job.steps[step]
    if current.state is not JobState.RUNNING:
        current.state, current.start_time, current.error = JobState.RUNNING, current.start_time or now, None


Preflight = Callable[[BuildContext, Job], None]  # raises to refuse a started job before any work (`jobs.disk`)


def _no_preflight(ctx: BuildContext, job: Job) -> None:
    pass


def run_job(
    ctx: BuildContext,
    job_id: str,
    spark: SparkSupervisor | None = None,
    preflight: Preflight = _no_preflight,
    ticket: int | None = None,
) -> Job:
    """Run a READY job to its end here: SUCCEED, ERROR (with the error on the job and its step), or left
    PAUSED/DISCARDED by a user. Returns the job as stored at the end; raises `OutcomeNotRecordedError` (carrying
    the write) when the store refuses the job's outcome, so that the job does not stay RUNNING (`jobs.reconcile`).
    With `spark` (the supervisor of `ctx.spark`) and `ticket` (the generation of its session that `ctx.spark` is,
    `SparkSupervisor.current`; None: no session), a job that fails because the session died is READY again
    instead (`engine_loss.put_back`)."""
    recorder = _Recorder(ctx, job_id)
    note: list[str] = []

    def start(job: Job) -> None:
        job.move_to(JobState.RUNNING)
        job.start_time = job.start_time or now_ms()
        job.error = None
        job.runner = recorder.runner
        if spark is not None:
            note[:] = filter(None, [resumed_note(job, spark.resumes)])

    log = for_job(job_id)
    try:
        job = recorder.update(start, force=True, running=False, start=True)
    except JobTakenOverError as err:  # launched just as this process lost the lease: the holder runs it
        log.warning("not started: %s", err.message)
        with ctx.store.read(ctx.project) as tx:
            return tx.require(Job, job_id)
    assert job is not None
    log.info(
        "%s on model %s%s started", job.job_type.value, job.model_alias, f" {job.time_range}" if job.time_range else ""
    )
    for line in note:
        log.info("%s", line)
    report = BuildReport()
    build_ctx = dataclasses.replace(ctx, job_id=job_id, progress=recorder.progress, fence=recorder.fence, report=report)
    try:
        preflight(build_ctx, job)
        segment, source_rows = _execute(build_ctx, job)
    except JobInterruptedError as err:
        with ctx.store.read(ctx.project) as tx:
            stopped = tx.require(Job, job_id)
        if isinstance(err, JobTakenOverError):
            log.warning("stopped: %s", err.message)
        else:
            log.warning("stopped: %s by a user", stopped.state.value)
        return stopped
    except Exception as err:  # noqa: BLE001 (any failure, Spark's included, ends the job in ERROR, resumable)
        lost = spark.lost(err, ticket) if spark is not None else None
        if lost is not None:
            assert spark is not None
            return _engine_lost(recorder, job_id, lost, spark.resumes, err)
        message = f"{type(err).__name__}: {err}"
        log.error("failed (resumable): %s", message.splitlines()[0])

        def fail(failed: Job) -> None:
            if failed.state is not JobState.RUNNING:  # a user's pause, discard or restart came first: it stands
                return
            if failed.runner != recorder.runner:  # another run has it now: its state is not this run's to set
                return
            failed.move_to(JobState.ERROR)
            failed.error = message
            failed.params.pop(ENGINE_RESUMES, None)  # a resume by a user starts the count of automatic ones again
            step = failed.current_step
            if step is not None:
                step.state, step.error, step.end_time = JobState.ERROR, message, now_ms()

        return recorded(job_id, lambda: _forced(recorder.update(fail, force=True, running=False)))
    done = recorded(job_id, lambda: _succeed(ctx, job, segment, source_rows, report))
    for line in filter(None, (done.params.get(SCAN), done.params.get(STEP_SECONDS))):
        log.info("%s", line)
    log.info("succeeded in %.1f s%s", done.duration_ms / 1000, f": segment {segment.name}" if segment else "")
    return done


def _engine_lost(recorder: _Recorder, job_id: str, reason: str, most: int, err: Exception) -> Job:
    """The session died under the job: READY again to resume on the next one, or ERROR after `most` resumes.
    The raw error is logged for debugging only: the job's log and document say what happened in words."""
    first = (str(err).strip().splitlines() or [""])[0]
    SPARK_LOG.debug("job %s lost its build engine: %s: %s", job_id, type(err).__name__, first)
    log = for_job(job_id)
    outcome: list[bool] = []

    def back(job: Job) -> None:
        if job.state is not JobState.RUNNING or job.runner != recorder.runner:  # a user's action or another run
            return
        outcome.append(put_back(job, reason, most))

    ended = recorded(job_id, lambda: _forced(recorder.update(back, force=True, running=False)))
    if outcome == [True]:
        log.warning(
            "the build engine stopped (%s); the job resumes once it has restarted (%s of at most %d)",
            reason,
            ended.params[ENGINE_RESUMES],
            most,
        )
    elif outcome == [False]:
        log.error("failed (resumable): %s", ended.error)
    return ended


def _forced(job: Job | None) -> Job:
    assert job is not None, "a forced update is never throttled away"
    return job


SCAN = "source_scan"  # Job.params: what the build read of its source, and what it skipped
STEP_SECONDS = "step_seconds"  # Job.params: the seconds of each step of the build operation


def _succeed(ctx: BuildContext, ran: Job, segment: Segment | None, source_rows: int, report: BuildReport) -> Job:
    with ctx.store.transaction(ctx.project, ctx.writer) as tx:
        job = tx.require(Job, ran.uuid)
        if job.runner != ran.runner:
            # Committed, then stalled past the lease while another run took the job over: the job's state is
            # that run's to set (it finds the segment built and fails on the overlap; a user discards it).
            return job
        _advance(job, len(job.steps) - 1)
        for step in job.steps:  # every step ran to its end (a throttled write may have missed the last count)
            step.done = step.total or step.done
        last = job.steps[-1]
        last.state, last.end_time = JobState.SUCCEED, now_ms()
        job.params.update(ran.params)
        if segment is not None:  # the job's result, kept after the segment itself is merged away
            job.params.update(segment=segment.id, segment_name=segment.name, source_rows=str(segment.source_count))
            last.output = f"segment {segment.name} ({segment.id}): {segment.source_count} source rows"
        if report.scans:  # told where the source is read: the first step's
            job.params[SCAN] = "; ".join(scan.describe() for scan in report.scans)
            first = job.steps[0]
            first.output = f"{first.output}; {job.params[SCAN]}" if first.output else job.params[SCAN]
        if report.steps:
            job.params[STEP_SECONDS] = f"steps: {report.describe_steps()}"
        # The operation has committed its segment: the work is done even if a user paused or discarded
        # the job in its last moments, so it ends SUCCEED whatever state it was moved to meanwhile.
        job.state = JobState.SUCCEED
        job.end_time = now_ms()
        day = time.strftime("%Y-%m-%d", time.gmtime(job.end_time / 1000))
        stats = tx.get(JobStats, day) or JobStats(uuid=day)
        stats.add(job, source_rows)
        if stats.mvcc >= 0:  # the day already has a document
            tx.update(stats)
        else:
            tx.create(stats)
        return tx.update(job)


def _execute(ctx: BuildContext, job: Job) -> tuple[Segment | None, int]:
    """Run the job's operation; returns the segment it made (builds, refreshes, merges) and the source rows
    it read."""
    # the engine (and its sources, pyarrow.dataset, yaml) is imported by the process that runs a job, not by
    # every server that only queues one (~140 ms of `precube serve`'s start)
    from precube.engine.operations import build_layouts, build_segment, merge_segments, refresh_segment

    alias = job.model_alias or job.target_model
    assert alias is not None, "model jobs carry their model"
    if job.job_type in (JobType.FULL_BUILD, JobType.INC_BUILD):
        segment = build_segment(ctx, alias, job.time_range)
        return segment, segment.source_count
    if job.job_type is JobType.INDEX_REFRESH:
        [target] = job.segment_ids
        segment = refresh_segment(ctx, alias, target)
        return segment, segment.source_count
    if job.job_type is JobType.INDEX_MERGE:
        return merge_segments(ctx, alias, job.segment_ids), 0  # a merge reads no source
    if job.job_type is JobType.INDEX_BUILD:
        built = build_layouts(ctx, alias, job.layout_ids or None, job.segment_ids or None)
        job.params["layouts_built"] = str(sum(len(v) for v in built.values()))
        return None, 0
    raise JobError(f"{job.job_type} jobs do not run on models")
