"""A precube home for CLI tests: project `ssb` with the SSB tables loaded and one model created, all
through the real command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from precube.cli.app import run
from precube.ssb.generate import TABLES


def ssb_home(home: Path, ssb_dir: Path, spec: dict[str, Any]) -> list[str]:
    """Create the project, load the tables, create the model of `spec`; returns the `--home` arguments."""
    args = ["--home", str(home)]
    assert run([*args, "project", "create", "ssb", "-d", "SSB"]) == 0
    assert run([*args, "table", "load", "-p", "ssb", *(str(ssb_dir / t) for t in TABLES)]) == 0
    home.mkdir(parents=True, exist_ok=True)
    path = home / f"{spec['alias']}.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert run([*args, "model", "create", "-p", "ssb", str(path)]) == 0
    return args
