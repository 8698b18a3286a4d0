"""`precube model suggest`: a model spec proposed from the project's tables and the queries users will ask."""

from __future__ import annotations

from pathlib import Path

import typer

from precube.cli.context import PROJECT, console, project_state


def suggest(
    ctx: typer.Context,
    project: str = PROJECT,
    queries: Path | None = typer.Option(
        None,
        "--queries",
        exists=True,
        dir_okay=False,
        help="SQL statements the model should answer, separated by ';' (the strongest evidence).",
    ),
    fact: str | None = typer.Option(None, "--fact", help="The fact table (DB.TABLE or TABLE); default: guessed."),
    alias: str | None = typer.Option(None, "--alias", help="The model's alias; default: the fact table's name."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the spec here instead of printing it."),
    sample_rows: int = typer.Option(100_000, "--sample-rows", min=1, help="Rows of each table to profile."),
) -> None:
    """Propose a model spec (joins, partition, dimensions, measures, aggregation groups) as commented YAML:
    review it, then `precube model create` it."""
    from precube.query.project_metadata import read_metadata  # (DuckDB and the SQL front end: only when run)
    from precube.query.suggest import suggest as suggest_spec

    cli = project_state(ctx, project)
    statements = []
    if queries is not None:
        text = queries.read_text(encoding="utf-8")
        statements = [s.strip() for s in text.split(";") if s.strip()]
    found = suggest_spec(read_metadata(cli.store(), project), statements, fact, alias, sample_rows)
    text = found.to_yaml()
    if out is None:
        typer.echo(text, nl=False)
        return
    out.write_text(text, encoding="utf-8")
    for note in found.notes:
        console.print(note, markup=False)
    console.print(f"wrote the suggested model {found.spec.alias} to {out}: review it, then precube model create {out}")
