"""No job left behind (`jobs.reconcile`): an outcome the store refused is recorded once it takes writes again; the
lease holder's sweep settles a RUNNING job no run of its process stands for, and leaves its live runs alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from precube.engine.context import BuildContext
from precube.jobs import reconcile, scheduler
from precube.jobs.queue import DIED
from precube.jobs.runner import STEPS
from precube.jobs.scheduler import Scheduler
from precube.jobs.submission import get_job, submit
from precube.metadata import (
    Job,
    JobState,
    JobStep,
    JobType,
    MetadataStore,
    StoreUnavailableError,
    TimeRange,
    new_job_id,
)
from tests.jobs.conftest import until

DAY = 86_400_000
MODEL = "0b3c9a8e-1111-2222-3333-444455556666"


def _submit(store: MetadataStore, day: int) -> str:
    job = Job(
        uuid=new_job_id(MODEL),
        job_type=JobType.INC_BUILD,
        target_model=MODEL,
        model_alias="m",
        time_range=TimeRange.of(day * DAY, (day + 1) * DAY),
        steps=[JobStep(name=name) for name in STEPS[JobType.INC_BUILD]],
    )
    return submit(store, "ssb", job).uuid


class _Disk:
    """Makes the store refuse every write while `full`, as SQLite on a full disk does."""

    def __init__(self, store: MetadataStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        real = store.backend.begin

        @contextmanager
        def begin(writer: str, readonly: bool) -> Iterator[Any]:
            if self.full and not readonly:
                raise StoreUnavailableError("metadata store failed: database or disk is full")
            with real(writer, readonly) as tx:
                yield tx

        monkeypatch.setattr(store.backend, "begin", begin)


def _scheduler(store: MetadataStore, tmp_path: Path, **kwargs: Any) -> Scheduler:
    ctx = BuildContext(None, store, "ssb", str(tmp_path / "warehouse"), writer="test")  # type: ignore[arg-type]
    return Scheduler(ctx, poll_s=0.05, **kwargs)


def test_an_outcome_the_full_store_refused_is_recorded_once_it_takes_writes(
    project: MetadataStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's full disk: the build fails, its ERROR cannot be written; the job stays RUNNING (not settled as
    dead: its outcome is known here) until space returns, then shows that very error, resumable."""
    disk = _Disk(project, monkeypatch)

    def build_fills_the_disk(ctx: BuildContext, job: Job) -> tuple[None, int]:
        disk.full = True
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("precube.jobs.runner._execute", build_fills_the_disk)
    monkeypatch.setattr(reconcile, "SWEEP_S", 0.0)  # a sweep at every turn: it must leave the kept outcome alone
    job_id = _submit(project, 0)
    ended: list[Job] = []
    runner = _scheduler(project, tmp_path, listener=lambda job, _after: ended.append(job))
    try:
        until(lambda: runner.reconciler.kept == [job_id], runner.tick)
        for _ in range(10):  # the store still refuses: RUNNING, kept, retried with backoff
            runner.tick()
            time.sleep(0.05)
        assert get_job(project, "ssb", job_id).state is JobState.RUNNING
        assert runner.reconciler.kept == [job_id] and ended == []
        disk.full = False  # space freed
        until(lambda: get_job(project, "ssb", job_id).state is not JobState.RUNNING, runner.tick)
    finally:
        disk.full = False
        runner.stop()
    failed = get_job(project, "ssb", job_id)
    assert failed.state is JobState.ERROR and failed.error == "OSError: [Errno 28] No space left on device"
    assert runner.reconciler.kept == [] and [(j.uuid, j.state) for j in ended] == [(job_id, JobState.ERROR)]


def test_the_sweep_settles_a_running_job_without_a_run_and_leaves_live_runs_alone(
    project: MetadataStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()

    def slow_build(ctx: BuildContext, job: Job) -> tuple[None, int]:
        assert release.wait(30)
        return None, 0

    monkeypatch.setattr("precube.jobs.runner._execute", slow_build)
    monkeypatch.setattr(reconcile, "SWEEP_S", 0.0)
    live = _submit(project, 0)
    runner = _scheduler(project, tmp_path)
    try:
        until(lambda: get_job(project, "ssb", live).state is JobState.RUNNING, runner.tick)
        # A job left RUNNING while this process holds the lease: e.g. a run whose outcome was dropped.
        orphan = _submit(project, 1)
        with project.transaction("ssb") as tx:
            job = tx.require(Job, orphan)
            job.move_to(JobState.RUNNING)
            job.runner = "somehost:1:gone"
            tx.update(job)
        until(lambda: get_job(project, "ssb", orphan).state is not JobState.RUNNING, runner.tick)
        settled = get_job(project, "ssb", orphan)
        assert settled.state is JobState.ERROR and settled.error == DIED  # `queue.recover`'s rule
        assert get_job(project, "ssb", live).state is JobState.RUNNING  # its run is alive here
        release.set()
        until(lambda: get_job(project, "ssb", live).state is JobState.SUCCEED, runner.tick)
    finally:
        release.set()
        runner.stop()


def test_a_run_that_ends_on_a_bug_leaves_no_job_running(
    project: MetadataStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's scheduler (`resume`): the job a run left RUNNING without a word is READY again at the next
    turn (`shutdown.take_over`'s rule), and runs."""
    real_run = scheduler.run_job
    calls: list[str] = []

    def buggy_once(ctx: BuildContext, job_id: str, *args: Any) -> Job:
        calls.append(job_id)
        if len(calls) > 1:
            return real_run(ctx, job_id, *args)
        with project.transaction("ssb") as tx:
            job = tx.require(Job, job_id)
            job.move_to(JobState.RUNNING)
            tx.update(job)
        raise RuntimeError("a bug")

    monkeypatch.setattr(scheduler, "run_job", buggy_once)
    monkeypatch.setattr("precube.jobs.runner._execute", lambda ctx, job: (None, 0))
    job_id = _submit(project, 0)
    runner = _scheduler(project, tmp_path, resume=True)
    try:
        until(lambda: get_job(project, "ssb", job_id).state is JobState.SUCCEED, runner.tick)
    finally:
        runner.stop()
    assert calls == [job_id, job_id]


def test_a_kept_outcome_that_can_no_longer_be_recorded_is_dropped_then_settled(project: MetadataStore) -> None:
    from precube.jobs.queue import recover
    from precube.metadata import NotFoundError

    job_id = _submit(project, 0)
    with project.transaction("ssb") as tx:
        job = tx.require(Job, job_id)
        job.move_to(JobState.RUNNING)
        tx.update(job)

    def gone() -> Job:
        raise NotFoundError("no such job")

    keeper = reconcile.Reconciler(project, "ssb", "test", recover)
    keeper.keep(reconcile.OutcomeNotRecordedError(job_id, gone, OSError("full")))
    keeper.force_sweep()
    assert keeper.sweep(live=()) == []  # kept: its outcome is known, it is not settled as dead
    time.sleep(reconcile.RETRY_FIRST_S)
    assert keeper.retry() == [] and keeper.kept == []  # not retryable: dropped, left to the sweep
    keeper.force_sweep()
    assert [(j.uuid, j.state, j.error) for j in keeper.sweep(live=())] == [(job_id, JobState.ERROR, DIED)]
