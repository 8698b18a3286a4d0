"""The segment lifecycle through the real command line on real Spark: rolling refresh, refresh of a range,
layouts added to built segments, delete, a build handed to a background runner process, and GC."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from precube.cli.app import run
from precube.metadata import Dataflow, IndexPlan, Job, JobState, JobType, SegmentDetails, open_store
from precube.modeling.model_store import require_model
from precube.modeling.partition_format import to_epoch_ms
from tests.cli.home import ssb_home
from tests.modeling.conftest import ssb_spec_data

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def day(text: str) -> int:
    return to_epoch_ms(text, "yyyy-MM-dd")


@pytest.fixture
def home(spark: SparkSession, tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    del spark  # the CLI finds the shared session
    home = tmp_path / "home"
    spec = {
        **ssb_spec_data(),
        "aggregation_groups": [{"includes": ["D_YEAR", "C_REGION"]}],
        "segment_config": {"auto_merge_enabled": False},  # segments stay as built here
    }
    ssb_home(home, ssb_dir, spec)
    capsys.readouterr()
    return home


def test_segment_lifecycle_through_the_cli(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli, model = ["--home", str(home)], ["-p", "ssb", "-m", "ssb"]
    store = open_store(f"sqlite:///{home / 'metadata.db'}")

    def segments() -> dict[tuple[int, int], str]:
        with store.read("ssb") as tx:
            m = require_model(tx, "ssb")
            return {(s.range.start, s.range.end): s.id for s in tx.require(Dataflow, m.uuid).segments}

    assert run([*cli, "build", "--wait", *model, "--start", "1992-01-01", "--end", "1992-01-03"]) == 0
    [first] = segments().values()

    # Seed 001 §4.6 with N = 2, 3-day segments from 01-01: on 01-04 build [01-04, 01-07) and refresh the
    # segment still holding data of the last two days.
    rolling = ["segment", "rolling", *model, "--days", "2", "--segment-days", "3", "--today", "1992-01-04"]
    assert run([*cli, *rolling, "--wait"]) == 0
    out = capsys.readouterr().out
    assert "built segment" in out and "refreshed segment" in out
    now = segments()
    assert sorted(now) == [(day("1992-01-01"), day("1992-01-03")), (day("1992-01-04"), day("1992-01-07"))]
    assert first not in now.values()  # refreshed: a new segment took its place

    # The same day again, without --wait: today's segment exists, both segments hold data of the last two
    # days, so two refreshes, handed to a background `precube jobs run` that exits once idle.
    assert run([*cli, *rolling]) == 0
    assert "started a background job runner" in capsys.readouterr().out
    with store.read("ssb") as tx:
        handed = [j.uuid for j in tx.list(Job) if j.state is not JobState.SUCCEED]
        assert [tx.require(Job, j).job_type for j in handed] == [JobType.INDEX_REFRESH] * 2
    deadline = time.monotonic() + 300
    while True:
        with store.read("ssb") as tx:
            jobs = [tx.require(Job, j) for j in handed]
        if all(j.state in (JobState.SUCCEED, JobState.ERROR, JobState.DISCARDED) for j in jobs):
            break
        assert time.monotonic() < deadline, "the background runner did not finish the jobs"
        time.sleep(0.5)
    assert [j.state for j in jobs] == [JobState.SUCCEED] * 2, [j.error for j in jobs]
    # the runner reports each job in its log once the job's document says it ended: wait for the second line
    log = home / "logs" / "jobs-ssb.log"
    while log.read_text().count("refreshed segment") < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert log.read_text().count("refreshed segment") == 2
    assert sorted(segments()) == [(day("1992-01-01"), day("1992-01-03")), (day("1992-01-04"), day("1992-01-07"))]

    # refresh of a range: every segment holding data of it
    assert run([*cli, "refresh", "--wait", *model, "--start", "1992-01-05", "--end", "1992-01-06"]) == 0
    assert capsys.readouterr().out.count("refreshed segment") == 1
    assert run([*cli, "refresh", "--wait", *model, "--start", "1993-01-01", "--end", "1993-01-02"]) == 1
    assert "no segment" in capsys.readouterr().err

    # a new index, built into the existing segments
    assert run([*cli, "index", "add-table-index", *model, "-c", "LO_ORDERDATE,C_CITY"]) == 0
    assert run([*cli, "build", "--wait", "--add-layouts", *model]) == 0
    assert "built 2 layouts into existing segments" in capsys.readouterr().out
    with store.read("ssb") as tx:
        m = require_model(tx, "ssb")
        planned = {lay.id for lay in tx.require(IndexPlan, m.uuid).all_layouts()}
        for segment_id in segments().values():
            held = {li.layout_id for li in tx.require(SegmentDetails, m.uuid, segment_id).layout_instances}
            assert held == planned
    assert run([*cli, "build", "--wait", "--add-layouts", *model]) == 1
    assert "every layout" in capsys.readouterr().err

    # delete, then GC removes the deleted and the replaced segments' directories
    later = segments()[(day("1992-01-04"), day("1992-01-07"))]
    assert run([*cli, "segment", "delete", *model, later, "--dry-run"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith("would drop 1 segment (") and "MB of built data) of model ssb" in shown
    assert later in segments().values()  # a dry run drops nothing
    assert run([*cli, "segment", "delete", *model, later, "--yes"]) == 0
    assert "deleted segment" in capsys.readouterr().out
    assert later not in segments().values()
    assert run([*cli, "segment", "list", *model]) == 0
    assert later not in capsys.readouterr().out
    model_dir = next((home / "warehouse" / "ssb").iterdir())
    assert run([*cli, "gc", "-p", "ssb", "--grace-hours", "0"]) == 0
    # the first segment and its two refreshed copies, the 3-day one and its two refreshed copies (the last deleted)
    assert "removed 5 directories" in capsys.readouterr().out
    assert sorted(p.name for p in model_dir.iterdir()) == sorted(["dict", "snapshot", *segments().values()])
    store.close()
