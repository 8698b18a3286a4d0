"""A build killed with SIGKILL in the middle of its layer stage, in a process of its own: the READY
segment stays queryable and unchanged throughout, nothing partial turns READY, a restarted runner finds
the job dead, resumes it to the right data, and GC leaves no unreferenced directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from precube.cli.app import run
from precube.engine.context import BuildContext
from precube.metadata import (
    Dataflow,
    IndexPlan,
    Job,
    JobState,
    JobType,
    Segment,
    SegmentDetails,
    SegmentStatus,
    TimeRange,
    open_store,
)
from precube.metadata.dataflow import time_text
from precube.modeling.model_store import require_model
from precube.storage.paths import segment_path
from tests.cli.home import ssb_home
from tests.engine.conftest import SPEC
from tests.engine.test_operations import _views, check_segment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _snapshot(root: Path, model: str, segment: str) -> dict[str, list[dict[str, Any]]]:
    """Every layout of a segment as rows: what a query reading it would see."""
    path = Path(segment_path(str(root), "ssb", model, segment))
    return {d.name: sorted(pq.read_table(d).to_pylist(), key=repr) for d in sorted(path.iterdir())}


def test_sigkill_mid_layer_then_resume(
    spark: SparkSession, tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    cli = ssb_home(home, ssb_dir, SPEC)
    model = ["-p", "ssb", "-m", "sales"]
    assert run([*cli, "build", "--wait", *model, "--start", "1992-01-01", "--end", "1992-02-01"]) == 0

    store = open_store(f"sqlite:///{home / 'metadata.db'}")
    warehouse = home / "warehouse"

    def state() -> tuple[str, list[tuple[str, SegmentStatus]], dict[str, list[int]]]:
        with store.read("ssb") as tx:
            m = require_model(tx, "sales")
            segments = tx.require(Dataflow, m.uuid).segments
            layouts = {
                s.id: [li.layout_id for li in d.layout_instances]
                for s in segments
                if (d := tx.get(SegmentDetails, m.uuid, s.id)) is not None
            }
        return m.uuid, [(s.id, s.status) for s in segments], layouts

    model_uuid, [(old, _)], _ = state()
    before = _snapshot(warehouse, model_uuid, old)
    assert len(before) >= 8

    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    build = [sys.executable, "-m", "precube", *cli, "build", "--wait", *model, "--end", "1992-03-01"]
    proc = subprocess.Popen(build, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while True:  # until the new segment holds a layout: the layer stage is under way
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "the build ended"
            assert time.monotonic() < deadline, "the build never reached its layers"
            _, segments, layouts = state()
            ready = [s for s, status in segments if status is not SegmentStatus.NEW]
            assert ready == [old]  # nothing partial ever READY
            assert _snapshot(warehouse, model_uuid, old) == before  # queryable, unchanged
            new = [s for s, status in segments if status is SegmentStatus.NEW]
            if new and layouts.get(new[0]):
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and its JVM, as a crash would
        proc.wait()

    _, segments, layouts = state()
    [new] = [s for s, status in segments if status is SegmentStatus.NEW]
    done_before_kill = len(layouts[new])
    assert 1 <= done_before_kill < len(before)
    assert [s for s, status in segments if status is not SegmentStatus.NEW] == [old]
    with store.read("ssb") as tx:
        [job] = [j for j in tx.list(Job) if j.job_type is JobType.INC_BUILD and j.state is JobState.RUNNING]

    # The dead runner's job shows as such; a resume takes it at once (the lease is free) and finishes it here.
    capsys.readouterr()  # what the commands before printed
    assert run([*cli, "jobs", "list", "-p", "ssb", "--format", "json"]) == 0
    [listed] = [j for j in json.loads(capsys.readouterr().out) if j["job"] == job.uuid]
    assert listed["state"] == "RUNNING" and listed["runner_gone"] is True
    assert _snapshot(warehouse, model_uuid, old) == before
    assert run([*cli, "jobs", "resume", job.uuid[:8], "-p", "ssb", "--wait"]) == 0
    assert "was left RUNNING by a runner that is gone" in capsys.readouterr().out
    with store.read("ssb") as tx:
        assert tx.require(Job, job.uuid).state is JobState.SUCCEED
    _, segments, layouts = state()
    assert sorted(segments) == sorted([(old, SegmentStatus.READY), (new, SegmentStatus.READY)])
    assert _snapshot(warehouse, model_uuid, old) == before

    _views(spark, ssb_dir)
    ctx = BuildContext(spark, store, "ssb", str(warehouse))
    assert check_segment(ctx, "sales", new, "1992-02-01", "1992-03-01") >= 8

    assert run([*cli, "gc", "-p", "ssb", "--grace-hours", "0"]) == 0
    model_dir = warehouse / "ssb" / model_uuid
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(["dict", "snapshot", old, new])
    for segment in (old, new):
        on_disk = sorted(int(p.name) for p in (model_dir / segment).iterdir())
        assert on_disk == sorted(layouts[segment])
    store.close()


@pytest.mark.parametrize("kind", ["refresh", "merge", "add-layouts"])
def test_sigkill_of_a_refresh_merge_or_add_layouts_then_resume(
    spark: SparkSession, tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A refresh, merge or add-layouts job killed between two layouts leaves the segments it works on
    queryable and unchanged (a refresh or merge: LOCKED by its NEW segment); `jobs resume --wait` takes the
    dead runner's job at once and ends with every segment READY, holding the plan's layouts."""
    home = tmp_path / "home"
    cli = ssb_home(home, ssb_dir, SPEC)
    model = ["-p", "ssb", "-m", "sales"]
    for start, end in (("1992-01-01", "1992-01-15"), ("1992-01-15", "1992-02-01")):
        assert run([*cli, "build", "--wait", *model, "--start", start, "--end", end]) == 0
    store = open_store(f"sqlite:///{home / 'metadata.db'}")
    warehouse = home / "warehouse"

    def segments() -> tuple[str, list[Segment]]:
        with store.read("ssb") as tx:
            m = require_model(tx, "sales")
            return m.uuid, sorted(tx.require(Dataflow, m.uuid).segments, key=lambda s: s.range)

    model_uuid, before = segments()
    kept = {s.id: _snapshot(warehouse, model_uuid, s.id) for s in before}
    if kind == "add-layouts":  # a second group: its layouts are built into both READY segments
        rules = tmp_path / "rules.yaml"
        groups = [{"includes": ["D_YEAR", "C_REGION", "S_REGION"]}, {"includes": ["LO_SHIPMODE", "C_REGION"]}]
        rules.write_text(json.dumps({"aggregation_groups": groups}))
        assert run([*cli, "index", "set-rules", *model, str(rules)]) == 0
        command = [sys.executable, "-m", "precube", *cli, "build", "--wait", "--add-layouts", *model]
    else:
        targets = [before[0].id] if kind == "refresh" else [s.id for s in before]
        command = [sys.executable, "-m", "precube", *cli, kind, "--wait", *model, *targets]
    with store.read("ssb") as tx:
        held_before = {s.id: len(tx.require(SegmentDetails, model_uuid, s.id).layout_instances) for s in before}
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while True:  # until its NEW segment holds a layout
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else f"the {kind} ended"
            assert time.monotonic() < deadline, f"the {kind} never wrote a layout"
            _, now = segments()
            new = [s for s in now if s.status is SegmentStatus.NEW]
            with store.read("ssb") as tx:
                held = [d for s in new if (d := tx.get(SegmentDetails, model_uuid, s.id)) and d.layout_instances]
                grown = [
                    s
                    for s in before
                    if len(tx.require(SegmentDetails, model_uuid, s.id).layout_instances) > held_before[s.id]
                ]
            if held or grown:  # a layout of the job is written
                break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    _, now = segments()
    assert [s.id for s in now if s.status is not SegmentStatus.NEW] == [s.id for s in before]
    now_held = {s.id: _snapshot(warehouse, model_uuid, s.id) for s in before}
    assert {i: {k: v for k, v in held.items() if k in kept[i]} for i, held in now_held.items()} == kept  # unchanged
    with store.read("ssb") as tx:
        [job] = [j for j in tx.list(Job) if j.state is JobState.RUNNING]
    capsys.readouterr()
    assert run([*cli, "jobs", "resume", job.uuid[:8], "-p", "ssb", "--wait"]) == 0
    with store.read("ssb") as tx:
        assert tx.require(Job, job.uuid).state is JobState.SUCCEED
    _, after = segments()
    assert all(s.status is SegmentStatus.READY for s in after)
    merged = [TimeRange.of(before[0].range.start, before[-1].range.end)]
    assert [s.range for s in after] == (merged if kind == "merge" else [s.range for s in before])
    with store.read("ssb") as tx:
        planned = {lay.id for lay in tx.require(IndexPlan, model_uuid).all_layouts()}
        for segment in after:
            assert {
                li.layout_id for li in tx.require(SegmentDetails, model_uuid, segment.id).layout_instances
            } == planned
    _views(spark, ssb_dir)
    ctx = BuildContext(spark, store, "ssb", str(warehouse))
    for segment in after:
        assert (
            check_segment(ctx, "sales", segment.id, time_text(segment.range.start), time_text(segment.range.end)) >= 8
        )
    store.close()
