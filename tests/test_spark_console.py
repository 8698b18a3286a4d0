"""Spark's console output (its banner, the JVM's warnings) goes to the log a command names, never among a
command's progress bars on the terminal, while Python's own standard error still reaches it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

CODE = """
import sys
from pathlib import Path
from precube.settings import load_settings
from precube.spark_session import spark_session

home = Path(sys.argv[1])
settings = load_settings(home=home, spark={"master": "local[1]"})
session = spark_session(settings, console_log=home / "logs" / "spark.log")
assert session.range(3).count() == 3
print("python's own standard error", file=sys.stderr)
session.stop()
"""


def test_the_jvm_console_goes_to_the_log(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE, str(tmp_path)], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stderr.strip() == "python's own standard error", done.stderr
    assert "log level" in (tmp_path / "logs" / "spark.log").read_text()  # Spark's banner, kept in the log
