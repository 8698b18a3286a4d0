"""Benchmark: how long the `precube` command takes to start, in one run, against another checkout.

    .venv/bin/python bench/startup.py                    # prints a table, writes bench/results/startup-*.json
    .venv/bin/python bench/startup.py --baseline ../old/src   # the same commands with another precube first

Each command runs `--repeat` times as a new process (`python -m precube …`, as the `precube` script runs it);
reported are the medians of the wall time and of the CPU time the process used. `query` is a cold
`precube query 'select 1 as x'` on an empty project: its start-up is the wall time less the time the query
reports for itself (`… rows in N ms`). With `--baseline`, every command also runs with that source
directory first on the path, interleaved run by run, and the table gives the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

COMMANDS: dict[str, list[str]] = {
    "--version": ["--version"],
    "--help": ["--help"],
    "query (cold)": ["query", "-p", "p", "select 1 as x"],
}
_REPORTED = re.compile(r"rows in ([\d.]+) ms")


def _run(src: Path, home: Path, args: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and the query's own reported seconds (0 when it reports none)."""
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "120"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "precube", "--home", str(home), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = _REPORTED.search(done.stdout)
    return wall, cpu, float(found.group(1)) / 1000 if found else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--baseline", type=Path, default=None, help="another precube's src directory")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    sources = {"this": Path(__file__).resolve().parents[1] / "src"}
    if args.baseline is not None:
        sources["baseline"] = args.baseline.resolve()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="precube-startup-") as tmp:
        home = Path(tmp)
        _run(sources["this"], home, ["project", "create", "p"])
        for name, command in COMMANDS.items():
            runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label in sources}
            for _ in range(args.repeat):
                for label, src in sources.items():  # interleaved: both see the same machine
                    runs[label].append(_run(src, home, command))
            row: dict[str, Any] = {"command": name}
            for label, found in runs.items():
                row[f"{label}_wall_s"] = round(statistics.median(w for w, _, _ in found), 3)
                row[f"{label}_cpu_s"] = round(statistics.median(c for _, c, _ in found), 3)
                row[f"{label}_startup_s"] = round(statistics.median(w - q for w, _, q in found), 3)
            results.append(row)
    view = Table(title=f"precube start-up (median of {args.repeat} new processes)")
    columns = ["command"] + [f"{label} {kind}" for label in sources for kind in ("wall s", "cpu s", "start-up s")]
    if "baseline" in sources:
        columns.append("start-up vs baseline")
    for column in columns:
        view.add_column(column, justify="left" if column == "command" else "right")
    for r in results:
        cells = [r["command"]]
        for label in sources:
            cells += [f"{r[f'{label}_wall_s']:.3f}", f"{r[f'{label}_cpu_s']:.3f}", f"{r[f'{label}_startup_s']:.3f}"]
        if "baseline" in sources:
            cells.append(f"{r['this_startup_s'] / r['baseline_startup_s']:.2f}x")
        view.add_row(*cells)
    Console(width=200).print(view)  # room for every column, also in a pipe
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"startup-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {"repeat": args.repeat, "sources": {k: str(v) for k, v in sources.items()}, "commands": results}, indent=2
        )
    )
    Console().print(f"wrote {path}")


if __name__ == "__main__":
    main()
