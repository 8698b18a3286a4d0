"""`precube ssb generate`: Star Schema Benchmark data as Parquet."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from precube.cli.context import console, err_console
from precube.ssb.generate import generate as generate_ssb

app = typer.Typer(help="Star Schema Benchmark data.", no_args_is_help=True)


def generate_with_progress(scale: float, out: Path, seed: int, orphans: int = 0) -> dict[str, int]:
    """Generate SSB data showing one progress bar per table."""
    columns = (TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=False) as progress:
        tasks: dict[str, TaskID] = {}

        def report(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = progress.add_task(table, total=total)
            progress.update(tasks[table], completed=done)

        return generate_ssb(scale, out, seed=seed, progress=report, orphans=orphans)


@app.command("generate")
def generate(
    scale: float = typer.Option(1.0, "--scale", "-s", help="Scale factor (0.01 … 1000); SF 1 = 6M lineorder rows."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write the five tables into."),
    seed: int = typer.Option(1, "--seed", help="Random seed; the same seed gives the same data."),
    orphans: int = typer.Option(
        0, "--orphans", min=0, help="Extra LINEORDER rows whose customer, supplier or part has no lookup row."
    ),
) -> None:
    """Generate LINEORDER, DATES, CUSTOMER, SUPPLIER and PART as Parquet under OUT/{TABLE}/."""
    rows = generate_with_progress(scale, out, seed, orphans)
    summary = ", ".join(f"{t} {n:,}" for t, n in rows.items())
    console.print(f"wrote SSB scale {scale:g} to {out}: {summary}")


@app.command("model")
def model() -> None:
    """Print the SSB model shipped with precube (YAML), to create or edit: `precube ssb model > ssb.yaml`."""
    from importlib import resources

    typer.echo(resources.files("precube").joinpath("resources/ssb_model.yaml").read_text(encoding="utf-8"), nl=False)
