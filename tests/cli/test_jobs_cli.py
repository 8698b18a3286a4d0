"""`precube jobs …` through the real command line, on jobs submitted through the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precube.cli.app import run
from precube.jobs.lease import Lease
from precube.jobs.submission import submit
from precube.metadata import Job, JobState, JobStep, JobType, TimeRange, open_store
from precube.settings import load_settings


@pytest.fixture
def home(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    args = ["--home", str(tmp_path / "home")]
    assert run([*args, "project", "create", "ssb", "-d", "SSB"]) == 0
    with open_store(load_settings(home=tmp_path / "home").metadata_url) as store:
        for n in (1, 2):
            steps = [JobStep(name="layers", state=JobState.SUCCEED), JobStep(name="commit", done=1, total=4)]
            job = Job(
                uuid=f"job-{n}",
                job_type=JobType.INC_BUILD,
                target_model=f"model-{n}",
                model_alias=f"sales{n}",
                time_range=TimeRange.of(0, 86_400_000),
                create_time=1_700_000_000_000 + n,
                steps=steps,
            )
            submit(store, "ssb", job)
        # as if a server ran the project's jobs: a resumed job is left to it (no runner is started for these
        # jobs of models that do not exist)
        assert Lease(store, "ssb", ttl_s=3600).acquire()
    capsys.readouterr()
    return args


def test_list_show_and_act(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*home, "jobs", "list", "-p", "ssb"]) == 0
    listing = capsys.readouterr().out
    assert listing.index("job-2") < listing.index("job-1") and "INC_BUILD" in listing and "62%" in listing

    assert run([*home, "jobs", "pause", "job-1", "-p", "ssb"]) == 0
    assert "job job-1: PAUSED" in capsys.readouterr().out
    assert run([*home, "jobs", "pause", "job-1", "-p", "ssb"]) != 0
    assert "cannot pause job job-1: it is PAUSED" in capsys.readouterr().err
    assert run([*home, "jobs", "resume", "job-1", "-p", "ssb"]) == 0
    out = capsys.readouterr().out
    assert "job job-1: READY" in out and "will run it" in out  # left to the runner holding the lease
    assert run([*home, "jobs", "discard", "job-2", "-p", "ssb"]) == 0
    capsys.readouterr()

    assert run([*home, "jobs", "show", "job-2", "-p", "ssb"]) == 0
    shown = capsys.readouterr().out
    assert "DISCARDED" in shown and "layers" in shown and "1/4" in shown
    assert "range: [1970-01-01, 1970-01-02)" in shown and "duration" in shown
    assert run([*home, "jobs", "show", "job-1", "-p", "ssb", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["state"] == "READY" and [s["name"] for s in doc["steps"]] == ["layers", "commit"]
    assert run([*home, "jobs", "show", "nope", "-p", "ssb"]) != 0
    assert "job 'nope' does not exist in project 'ssb'" in capsys.readouterr().err
    assert run([*home, "jobs", "resume", "nope", "-p", "ssb"]) != 0
    assert "job 'nope' does not exist" in capsys.readouterr().err
