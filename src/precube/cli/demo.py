"""`precube demo`: the end-to-end job on embedded defaults (generate SSB, load, sample; more to come)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import typer
import yaml

from precube.cli.context import console, state
from precube.cli.ssb import generate_with_progress
from precube.cli.table import print_stats
from precube.metadata import Project, SourceType, Table
from precube.modeling.model_spec import ModelSpec, parse_spec
from precube.modeling.model_store import create_model, find_model
from precube.sources.sampling import sample_and_store
from precube.sources.tables import load_file_table, reload_table
from precube.ssb.generate import TABLES, read_manifest

SSB_DATABASE = "SSB"
SSB_MODEL = "ssb"


def demo(
    ctx: typer.Context,
    scale: float = typer.Option(0.1, "--scale", "-s", help="SSB scale factor."),
    data: Path | None = typer.Option(
        None, "--data", help="SSB data directory (reused if it holds this scale); default HOME/data/ssb-sfSF."
    ),
    project: str = typer.Option("ssb", "--project", "-p", help="Project to create or reuse."),
    seed: int = typer.Option(1, "--seed", help="Random seed of the generated data."),
) -> None:
    """Run the end-to-end demo: generate SSB data, create the project, load and sample the five tables,
    create the SSB model."""
    cli = state(ctx)
    data = data or cli.settings.home / "data" / f"ssb-sf{scale:g}"

    console.rule("[bold]1. SSB data")
    manifest = read_manifest(data)
    if manifest is not None and manifest["scale"] == scale and manifest["seed"] == seed:
        console.print(f"reusing SSB scale {scale:g} in {data}")
    else:
        generate_with_progress(scale, data, seed)

    console.rule("[bold]2. project and tables")
    store = cli.store()
    if any(p.name == project for p in store.list_projects()):
        console.print(f"reusing project [bold]{project}[/]")
    else:
        store.create_project(Project(name=project, default_database=SSB_DATABASE), writer=cli.writer)
        console.print(f"created project [bold]{project}[/] (default database {SSB_DATABASE})")
    with store.read(project) as tx:
        existing = {t.identity for t in tx.list(Table)}
    for name in TABLES:
        identity = f"{SSB_DATABASE}.{name}"
        if identity in existing:
            _, change = reload_table(store, project, identity, cli.spark, writer=cli.writer)
            console.print(f"{identity}: already loaded, {change.describe()}")
        else:
            table = load_file_table(
                store, project, data / name, SourceType.PARQUET, database=SSB_DATABASE, writer=cli.writer
            )
            console.print(f"loaded [bold]{identity}[/] ({len(table.columns)} columns)")

    console.rule("[bold]3. sampling on Spark")
    spark = cli.spark()
    for name in TABLES:
        ext = sample_and_store(
            store,
            project,
            f"{SSB_DATABASE}.{name}",
            spark,
            cli.settings.sampling.rows,
            cli.settings.sampling.sample_rows,
            writer=cli.writer,
        )
        print_stats(ext)
    console.rule("[bold]4. model")
    with store.read(project) as tx:
        existing_model = find_model(tx, SSB_MODEL)
    if existing_model is None:
        saved = create_model(store, project, ssb_model_spec(), writer=cli.writer)
        plan = saved.index_plan
        console.print(
            f"created model [bold]{SSB_MODEL}[/]: {len(saved.model.dimensions())} dimensions, "
            f"{len(saved.model.measures())} measures, {len(plan.all_layouts())} layouts"
        )
    else:
        console.print(f"reusing model [bold]{SSB_MODEL}[/]")
    console.print(f"[bold green]demo done[/]: project {project}, metadata {store.url}")


def ssb_model_spec() -> ModelSpec:
    """The SSB model shipped with precube (`resources/ssb_model.yaml`)."""
    text = resources.files("precube").joinpath("resources/ssb_model.yaml").read_text(encoding="utf-8")
    return parse_spec(yaml.safe_load(text), "ssb_model.yaml")
