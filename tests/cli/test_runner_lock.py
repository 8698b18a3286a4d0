"""One background job runner per home and project: `build` calls without `--wait` made while a runner starts or
runs hand their jobs to it rather than starting another (and another Spark JVM)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from precube.cli import follow
from precube.cli.app import run
from precube.cli.context import CliContext
from precube.jobs.runner_lock import RunnerLock


def test_several_hand_offs_start_one_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    assert run(["--home", str(home), "project", "create", "p"]) == 0
    stop = tmp_path / "stop"
    # the runner: a process that inherits the lock as `jobs run` does, and lives until told to stop
    child = f"import pathlib, time\nwhile not pathlib.Path({str(stop)!r}).exists(): time.sleep(0.05)"
    monkeypatch.setattr(follow, "runner_args", lambda _cli, _project: [sys.executable, "-c", child])
    started: list[subprocess.Popen[bytes]] = []
    real = subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(follow.subprocess, "Popen", popen)
    cli = CliContext(config=None, home=home, debug=False, server=None)
    try:
        capsys.readouterr()
        for _ in range(5):
            follow.hand_off(cli, "p", [])
        assert len(started) == 1
        out = capsys.readouterr().out
        assert out.count("started a background job runner") == 1
        assert out.count("the job runner this home is starting will run it") == 4
        # `precube jobs run` (by hand) sees the runner too and runs nothing
        assert run(["--home", str(home), "jobs", "run", "-p", "p"]) == 0
        assert "is starting or running in this home" in capsys.readouterr().out
        stop.touch()
        assert started[0].wait(timeout=30) == 0
        lock = RunnerLock.try_take(home, "p")  # the runner gone, its lock is free
        assert lock is not None
        lock.release()
    finally:
        stop.touch()
        for proc in started:
            proc.wait(timeout=30)
        cli.close()
