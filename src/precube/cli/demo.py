"""`precube demo`: the end-to-end job on embedded defaults: generate SSB, load and sample the tables,
create the SSB model, build it by yearly segments as jobs with auto-merge on, show segments and jobs, then
answer the 13 SSB queries from the built layouts."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import typer
import yaml
from rich.table import Table as RichTable

from precube.api import connect
from precube.cli.build import run_jobs, segments
from precube.cli.context import CliContext, console, state
from precube.cli.jobs import list_jobs
from precube.cli.ssb import generate_with_progress
from precube.cli.table import print_stats
from precube.errors import InvalidInputError
from precube.jobs.lifecycle import segment_config
from precube.jobs.plans import build_job
from precube.metadata import Dataflow, Project, SegmentConfig, SourceType, Table, TableExt, TimeRange
from precube.modeling.model_spec import ModelSpec, parse_spec
from precube.modeling.model_store import create_model, find_model, require_model
from precube.modeling.partition_format import to_epoch_ms
from precube.modeling.segments import default_build_start
from precube.sources.sampling import sample_and_store
from precube.sources.tables import load_file_table, reload_table
from precube.ssb.generate import TABLES, read_manifest
from precube.ssb.queries import SSB_QUERIES

SSB_DATABASE = "SSB"
SSB_MODEL = "ssb"
FIRST_YEAR = 1992  # SSB's first order date


def demo(
    ctx: typer.Context,
    scale: float = typer.Option(0.1, "--scale", "-s", help="SSB scale factor."),
    data: Path | None = typer.Option(
        None, "--data", help="SSB data directory (reused if it holds this scale); default HOME/data/ssb-sfSF."
    ),
    project: str = typer.Option("ssb", "--project", "-p", help="Project to create or reuse."),
    seed: int = typer.Option(1, "--seed", help="Random seed of the generated data."),
    last_year: int | None = typer.Option(
        None, "--last-year", help="Build yearly segments up to this year; default: the year of the last order."
    ),
) -> None:
    """Run the end-to-end demo: generate SSB data, create the project, load and sample the five tables,
    create the SSB model, build it by yearly segments with auto-merge on, show its segments and jobs."""
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
        # auto-merge on, with Kylin's default levels: segments roll up into weeks, months, quarters, years
        created = Project(
            name=project, default_database=SSB_DATABASE, segment_config=SegmentConfig(auto_merge_enabled=True)
        )
        store.create_project(created, writer=cli.writer)
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

    console.rule("[bold]5. build by yearly segments (jobs; auto-merge on)")
    _build_years(cli, project, last_year)
    console.rule("[bold]6. segments and jobs")
    segments(ctx, project, SSB_MODEL)
    list_jobs(ctx, project, SSB_MODEL)
    console.rule("[bold]7. the 13 SSB queries")
    _run_queries(cli, project)
    console.print(f"[bold green]demo done[/]: project {project}, metadata {store.url}")


def _run_queries(cli: CliContext, project: str) -> None:
    """Each SSB query twice: the first run plans it and loads its layout, the second is warm."""
    view = RichTable("query", "first ms", "warm ms", "rows", "answered by", title="SSB queries")
    with connect(project, settings=cli.settings) as session:
        for name, sql in SSB_QUERIES.items():
            first = session.sql(sql)
            warm = session.sql(sql)
            answered = "pushdown" if warm.pushdown else f"model {warm.model}, layout {warm.layout_ids[0]}"
            view.add_row(
                name, f"{first.duration_ms:.1f}", f"{warm.duration_ms:.1f}", f"{warm.table.num_rows:,}", answered
            )
    console.print(view)


def _build_years(cli: CliContext, project: str, last_year: int | None) -> None:
    """One build job per year of LINEORDER's order dates, from where the model's segments end (a rerun
    builds nothing twice); each runs here, followed by retention and auto-merge."""
    store = cli.store()
    with store.read(project) as tx:
        model = require_model(tx, SSB_MODEL)
        built_to = default_build_start(tx.require(Dataflow, model.uuid).segments)
        config = segment_config(tx.project(), model)
    levels = ", ".join(level.value for level in config.auto_merge_time_ranges)
    console.print(f"auto-merge {'on' if config.auto_merge_enabled else 'off'} (levels {levels})")
    for year in range(FIRST_YEAR, (last_year or _last_order_year(cli, project)) + 1):
        rng = TimeRange.of(to_epoch_ms(f"{year}-01-01", "yyyy-MM-dd"), to_epoch_ms(f"{year + 1}-01-01", "yyyy-MM-dd"))
        if built_to is not None and rng.start < built_to:
            continue
        run_jobs(cli, project, [build_job(store, project, SSB_MODEL, rng)], wait=True)


def _last_order_year(cli: CliContext, project: str) -> int:
    """The year of the latest order date, from the sampled stats of LINEORDER."""
    with cli.store().read(project) as tx:
        ext = tx.require(TableExt, f"{SSB_DATABASE}.LINEORDER")
    stats = ext.stats("LO_ORDERDATE")
    if stats is None or stats.max_value is None:
        raise InvalidInputError(f"{SSB_DATABASE}.LINEORDER has no sampled LO_ORDERDATE range: sample it first")
    return int(stats.max_value[:4])


def ssb_model_spec() -> ModelSpec:
    """The SSB model shipped with precube (`resources/ssb_model.yaml`)."""
    text = resources.files("precube").joinpath("resources/ssb_model.yaml").read_text(encoding="utf-8")
    return parse_spec(yaml.safe_load(text), "ssb_model.yaml")
