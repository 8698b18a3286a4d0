"""Free disk space before a build (`jobs.disk`): refused before any work with one line, resumable once space
returns; the estimate from the model's segments; what `/ready` reports; and a real full disk (a small tmpfs
holding the SQLite store and the warehouse) that cannot record the failure until space is freed."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precube.engine.context import BuildContext
from precube.jobs import disk
from precube.jobs.errors import InsufficientDiskSpaceError
from precube.jobs.runner import STEPS
from precube.jobs.scheduler import Scheduler
from precube.jobs.submission import act, get_job, submit
from precube.metadata import (
    Dataflow,
    Job,
    JobAction,
    JobState,
    JobStep,
    JobType,
    LayoutInstance,
    MetadataStore,
    Project,
    Segment,
    SegmentDetails,
    TimeRange,
    new_job_id,
    open_store,
)
from tests.jobs.conftest import until

DAY = 86_400_000
MB = 1024 * 1024
MODEL = "0b3c9a8e-1111-2222-3333-444455556666"


def _job(job_type: JobType = JobType.INC_BUILD, segment_ids: tuple[str, ...] = ()) -> Job:
    return Job(
        uuid=new_job_id(MODEL),
        job_type=job_type,
        target_model=MODEL,
        model_alias="m",
        time_range=TimeRange.of(40 * DAY, 41 * DAY) if job_type is JobType.INC_BUILD else None,
        segment_ids=list(segment_ids),
        steps=[JobStep(name=name) for name in STEPS[job_type]],
    )


def _run(store: MetadataStore, warehouse: Path, job_id: str, **kwargs: Any) -> Job:
    ctx = BuildContext(None, store, "ssb", str(warehouse), writer="test")  # type: ignore[arg-type]
    runner = Scheduler(ctx, poll_s=0.05, **kwargs)
    try:
        until(lambda: get_job(store, "ssb", job_id).state not in (JobState.READY, JobState.RUNNING), runner.tick)
    finally:
        runner.stop()
    return get_job(store, "ssb", job_id)


def test_a_build_without_room_is_refused_before_any_work_and_resumes_once_there_is(
    project: MetadataStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []

    def build(ctx: BuildContext, job: Job) -> tuple[None, int]:
        built.append(job.uuid)
        return None, 0

    monkeypatch.setattr("precube.jobs.runner._execute", build)
    job = submit(project, "ssb", _job())
    more_than_any_disk = disk.free_bytes(tmp_path) + 1024**4
    refused = _run(project, tmp_path / "warehouse", job.uuid, min_free_bytes=more_than_any_disk)
    assert refused.state is JobState.ERROR and built == []
    assert refused.error is not None and "\n" not in refused.error
    assert refused.error.startswith(f"InsufficientDiskSpaceError: not enough free disk space for job {job.uuid}: ")
    assert "the warehouse" in refused.error and "[jobs] min_free_mb" in refused.error
    act(project, "ssb", job.uuid, JobAction.RESUME)  # space returned (here: the floor lowered again)
    assert _run(project, tmp_path / "warehouse", job.uuid).state is JobState.SUCCEED and built == [job.uuid]


def test_the_estimate_follows_the_models_segments(
    project: MetadataStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    segments = [Segment(name=f"s{i}", seg_range=TimeRange.of(i * DAY, (i + 1) * DAY)) for i in range(2)]
    with project.transaction("ssb") as tx:
        tx.create(Dataflow(uuid=MODEL, segments=segments))
        for segment, size in zip(segments, (10 * MB, 30 * MB), strict=True):
            layouts = [LayoutInstance(layout_id=1, byte_size=size // 3), LayoutInstance(layout_id=2, byte_size=size)]
            tx.create(SegmentDetails(uuid=segment.id, dataflow=MODEL, layout_instances=layouts))
    ctx = BuildContext(None, project, "ssb", str(tmp_path / "warehouse"))  # type: ignore[arg-type]
    build, merge = _job(), _job(JobType.INDEX_MERGE, tuple(s.id for s in segments))
    assert disk.estimate(ctx, build) == 40 * MB  # the largest segment: 30 MB + 10 MB
    assert disk.estimate(ctx, merge) == 40 * MB + 40 * MB // 3  # both merged segments, rewritten
    assert disk.estimate(ctx, _job(JobType.INDEX_BUILD)) == 0  # added layouts: unknown before they are built

    monkeypatch.setattr(disk, "free_bytes", lambda path: 100 * MB)
    disk.ensure_space(ctx, build, min_free_bytes=60 * MB)  # 100 MB free >= 60 + 40
    with pytest.raises(InsufficientDiskSpaceError, match=r"has 100 MB free, the job needs 101 MB"):
        disk.ensure_space(ctx, build, min_free_bytes=61 * MB)


def test_what_ready_reports_of_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'home' / 'metadata.db'}"
    assert disk.metadata_dir(url) == tmp_path / "home"
    assert disk.metadata_dir("sqlite:///:memory:") is None and disk.metadata_dir("postgresql://h/db") is None
    free = {tmp_path / "warehouse": 500 * MB, tmp_path / "home": 50 * MB}
    monkeypatch.setattr(disk, "free_bytes", lambda path: free[path])
    assert disk.report(str(tmp_path / "warehouse"), url, 10 * MB) == {
        "free_bytes": 50 * MB,
        "min_free_bytes": 10 * MB,
        "low": False,
        "where": "metadata",
    }
    assert disk.report(str(tmp_path / "warehouse"), url, 100 * MB)["low"] is True
    assert disk.report("s3://bucket/warehouse", "postgresql://h/db", MB) == {
        "free_bytes": None,  # nothing local to measure
        "min_free_bytes": MB,
        "low": False,
        "where": None,
    }


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs (the test runs as root in its sandbox; skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> None:
    """Write `path` until the disk is full."""
    with path.open("wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * (256 * 1024))
            out.flush()


def test_a_full_disk_under_the_store_leaves_no_job_running(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case for real: the SQLite store and the warehouse on one small disk that the build fills;
    the failure cannot be recorded, the job stays RUNNING with its outcome kept, `/ready`'s report says low; once
    space is freed the job is ERROR (resumable), and resumed it succeeds."""
    store = open_store(f"sqlite:///{small_disk / 'metadata.db'}")
    store.create_project(Project(name="ssb", default_database="SSB"))
    filler = small_disk / "filler"
    fills = [True]

    def build(ctx: BuildContext, job: Job) -> tuple[None, int]:
        if fills[0]:
            _fill(filler)
            raise OSError(28, "No space left on device")
        return None, 0

    monkeypatch.setattr("precube.jobs.runner._execute", build)
    job = submit(store, "ssb", _job())
    ctx = BuildContext(None, store, "ssb", str(small_disk / "warehouse"), writer="test")  # type: ignore[arg-type]
    runner = Scheduler(ctx, poll_s=0.05, min_free_bytes=MB)
    try:
        until(lambda: runner.reconciler.kept == [job.uuid], runner.tick)
        assert get_job(store, "ssb", job.uuid).state is JobState.RUNNING
        assert disk.report(str(small_disk / "warehouse"), store.url, MB)["low"] is True
        filler.unlink()
        until(lambda: get_job(store, "ssb", job.uuid).state is not JobState.RUNNING, runner.tick)
    finally:
        runner.stop()
    failed = get_job(store, "ssb", job.uuid)
    assert failed.state is JobState.ERROR and failed.error == "OSError: [Errno 28] No space left on device"
    assert disk.report(str(small_disk / "warehouse"), store.url, MB)["low"] is False
    fills[0] = False
    act(store, "ssb", job.uuid, JobAction.RESUME)
    assert _run(store, small_disk / "warehouse", job.uuid, min_free_bytes=MB).state is JobState.SUCCEED
    store.close()
