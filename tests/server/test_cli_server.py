"""The CLI's `--server` mode for builds, segments and jobs: the same commands through the REST API of
the shared live server (the CLI's own home is empty: it opens no metadata store and starts no Spark),
with the same output as local mode."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from precube.cli.app import run
from tests.server.conftest import ServerHome
from tests.server.live import ADMIN, LiveServer
from tests.server.tiny import MODEL, make_project

pytestmark = pytest.mark.spark


def test_build_segments_and_jobs_through_a_server_print_what_local_mode_prints(
    live: LiveServer,
    server_home: ServerHome,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = f"p_{uuid.uuid4().hex[:8]}"
    make_project(live.settings, server_home.ssb_dir, project)
    monkeypatch.setenv("PRECUBE__SERVER__USER", ADMIN[0])
    monkeypatch.setenv("PRECUBE__SERVER__PASSWORD", ADMIN[1])
    remote = ["--home", str(tmp_path / "empty"), "--server", live.url]
    local = ["--home", str(live.settings.home)]
    capsys.readouterr()

    code = run([*remote, "build", "-p", project, "-m", MODEL, "--start", "1992-01-01", "--end", "1993-01-01", "--wait"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "submitted job" in out and "built segment" in out and "source rows, [1992-01-01, 1993-01-01)" in out

    def both(*command: str) -> tuple[object, object]:
        assert run([*remote, *command, "--format", "json"]) == 0
        through = json.loads(capsys.readouterr().out)
        assert run([*local, *command, "--format", "json"]) == 0
        return through, json.loads(capsys.readouterr().out)

    through, segments = both("segments", "-p", project, "-m", MODEL)
    assert through == segments and len(segments) == 1  # type: ignore[arg-type]
    through, jobs = both("jobs", "list", "-p", project)
    assert through == jobs and [j["state"] for j in jobs] == ["SUCCEED"]  # type: ignore[union-attr]
    job = jobs[0]["job"]  # type: ignore[index]

    assert run([*remote, "jobs", "show", job[:8], "-p", project]) == 0
    shown = capsys.readouterr().out
    assert run([*local, "jobs", "show", job[:8], "-p", project]) == 0
    assert shown == capsys.readouterr().out

    assert run([*remote, "jobs", "discard", job, "-p", project]) == 1  # a finished job stays: the server's one line
    assert "cannot discard" in capsys.readouterr().err

    segment = segments[0]["id"]  # type: ignore[index]
    assert run([*remote, "segment", "delete", segment, "-p", project, "-m", MODEL, "--dry-run"]) == 0
    previewed = capsys.readouterr().out
    assert run([*local, "segment", "delete", segment, "-p", project, "-m", MODEL, "--dry-run"]) == 0
    assert previewed == capsys.readouterr().out and previewed.startswith("would drop 1 segment")
    assert run([*remote, "segment", "delete", segment, "-p", project, "-m", MODEL, "--yes"]) == 0
    assert "deleted segment" in capsys.readouterr().out
    assert run([*local, "segments", "-p", project, "-m", MODEL, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
