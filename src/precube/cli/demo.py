"""`precube demo`: the end-to-end job on embedded defaults: generate SSB, load and sample the tables,
create the SSB model with the layouts `index recommend` gives for the 13 SSB queries, build it by yearly
segments as jobs with auto-merge on, show segments and jobs, then answer the 13 SSB queries from the built
layouts beside DuckDB on the raw files, answers compared."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import typer
import yaml
from rich.table import Table as RichTable

from precube.cli.build import run_jobs, segments
from precube.cli.context import CliContext, console, state
from precube.cli.jobs import list_jobs
from precube.cli.ssb import generate_with_progress
from precube.cli.ssb_baseline import geomean, median_ms, raw_duckdb, same_rows, to_duckdb
from precube.cli.table import print_stats
from precube.errors import InvalidInputError
from precube.jobs.lifecycle import segment_config
from precube.jobs.plans import build_job
from precube.metadata import (
    Dataflow,
    IndexPlan,
    MetadataStore,
    Project,
    SegmentConfig,
    SourceType,
    Table,
    TableExt,
    TimeRange,
)
from precube.modeling.model_spec import ModelSpec, parse_spec
from precube.modeling.model_store import SavedModel, apply_recommended, create_model, find_model, require_model
from precube.modeling.partition_format import to_epoch_ms
from precube.modeling.segments import default_build_start
from precube.query.project_metadata import read_metadata
from precube.query.recommend import recommend
from precube.service.sessions import session_on
from precube.sources.sampling import sample_and_store
from precube.sources.tables import load_file_table, reload_table
from precube.ssb.generate import TABLES, read_manifest
from precube.ssb.queries import SSB_QUERIES

SSB_DATABASE = "SSB"
SSB_MODEL = "ssb"
FIRST_YEAR = 1992  # SSB's first order date
DEMO_YEARS = 3  # yearly segments the demo builds unless --last-year says otherwise
# The first question of the README's quick start, also answered from a layout after the demo
YEARLY_REVENUE = (
    "select d_year, sum(lo_revenue) as revenue, count(*) from lineorder left join dates on lo_orderdate = d_datekey "
    "group by d_year order by d_year"
)


def demo(
    ctx: typer.Context,
    scale: float = typer.Option(0.1, "--scale", "-s", help="SSB scale factor."),
    data: Path | None = typer.Option(
        None, "--data", help="SSB data directory (reused if it holds this scale); default HOME/data/ssb-sfSF."
    ),
    project: str = typer.Option("ssb", "--project", "-p", help="Project to create or reuse."),
    seed: int = typer.Option(1, "--seed", help="Random seed of the generated data."),
    last_year: int = typer.Option(
        FIRST_YEAR + DEMO_YEARS - 1, "--last-year", help="Build yearly segments from 1992 up to this year."
    ),
    repeat: int = typer.Option(5, "--repeat", min=1, help="Timed warm runs per query, on precube and on DuckDB."),
) -> None:
    """Run the end-to-end demo: generate SSB data, load and sample its tables, create the SSB model with the
    layouts its 13 queries need, build yearly segments, then time the queries on the layouts beside DuckDB
    on the raw files."""
    cli = state(ctx)
    data = data or cli.settings.home / "data" / f"ssb-sf{scale:g}"

    console.rule("[bold]1. SSB data")
    manifest = read_manifest(data)
    reused = manifest is not None and manifest["scale"] == scale and manifest["seed"] == seed
    if reused:
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
        sampled = {ext.table_name: ext for ext in tx.list(TableExt)}
    for name in TABLES:
        identity = f"{SSB_DATABASE}.{name}"
        if identity in existing:
            _, change = reload_table(store, project, identity, cli.spark, writer=cli.writer)
            console.print(f"{identity}: already loaded, {change.describe()}")
            if change.changed or not reused:
                sampled.pop(identity, None)
        else:
            table = load_file_table(
                store, project, data / name, SourceType.PARQUET, database=SSB_DATABASE, writer=cli.writer
            )
            console.print(f"loaded [bold]{identity}[/] ({len(table.columns)} columns)")

    console.rule("[bold]3. sampling on Spark")
    for name in TABLES:
        if (ext := sampled.get(f"{SSB_DATABASE}.{name}")) is not None:  # the same files: the same stats
            console.print(f"{ext.table_name}: {ext.total_rows:,} rows, sampled before")
            continue
        ext = sample_and_store(
            store,
            project,
            f"{SSB_DATABASE}.{name}",
            cli.spark(),  # started by the first table to sample: a rerun on the same files starts no JVM
            cli.settings.sampling.rows,
            cli.settings.sampling.sample_rows,
            writer=cli.writer,
        )
        print_stats(ext)
    console.rule("[bold]4. model")
    with store.read(project) as tx:
        existing_model = find_model(tx, SSB_MODEL)
    if existing_model is None:
        saved, plan = create_recommended_model(store, project, [*SSB_QUERIES.values(), YEARLY_REVENUE], cli.writer)
        console.print(
            f"created model [bold]{SSB_MODEL}[/]: {len(saved.model.dimensions())} dimensions, "
            f"{len(saved.model.measures())} measures, {len(plan.all_layouts())} layouts "
            f"(`index recommend` for the {len(SSB_QUERIES)} SSB queries and revenue by year)"
        )
    else:
        console.print(f"reusing model [bold]{SSB_MODEL}[/]")

    console.rule("[bold]5. build by yearly segments (jobs; auto-merge on)")
    built_to = _build_years(cli, project, last_year)
    console.rule("[bold]6. segments and jobs")
    segments(ctx, project, SSB_MODEL)
    list_jobs(ctx, project, SSB_MODEL)
    console.rule(f"[bold]7. the {len(SSB_QUERIES)} SSB queries: layouts beside DuckDB on the raw files")
    if not _compare_queries(cli, project, data, built_to, repeat):
        raise typer.Exit(1)
    console.print(f"[bold green]demo done[/]: project {project}, metadata {store.url}")


def create_recommended_model(
    store: MetadataStore, project: str, queries: Sequence[str], writer: str = "precube"
) -> tuple[SavedModel, IndexPlan]:
    """The SSB model without its own aggregation groups and base indexes, then with the groups
    `index recommend` gives for `queries` (one layout each): for the SSB queries a dozen layouts, not ~150."""
    spec = ssb_model_spec().model_copy(update={"aggregation_groups": [], "base_index_type": []})
    saved = create_model(store, project, spec, writer=writer)
    found = recommend(read_metadata(store, project), SSB_MODEL, queries)
    return saved, apply_recommended(store, project, SSB_MODEL, found.groups, writer=writer)


def _compare_queries(cli: CliContext, project: str, data: Path, built_to: str, repeat: int) -> bool:
    """Each SSB query on the layouts (a first run plans it and reads its layout's files, then `repeat` warm runs
    on the layout held in memory, as a warm server holds it) and on DuckDB over the raw Parquet files holding
    the same orders (one untimed run, then `repeat`), in this process;
    prints the medians and speed-ups, and whether the answers are equal (the return value)."""
    view = RichTable(
        "query", "rows", "answered by", "first ms", "warm ms", "DuckDB raw ms", "speed-up", "same answer",
        title=f"SSB queries: median of {repeat} warm runs each",
    )  # fmt: skip
    raw = raw_duckdb(data, orders_before=built_to)
    session = session_on(cli.settings, cli.store(), project, history=None, cache=None)
    speedups, differ, empty = [], [], []
    try:
        for name, sql in SSB_QUERIES.items():
            first = session.sql(sql)  # read from the layout's files
            session.hold(sql)  # what a warm server holds in memory after a few reads
            warm_ms = median_ms(lambda q=sql: session.sql(q), repeat)  # type: ignore[misc]
            duck_sql = to_duckdb(sql)
            expected = raw.execute(duck_sql).fetchall()
            duck_ms = median_ms(lambda q=duck_sql: raw.execute(q).fetchall(), repeat)  # type: ignore[misc]
            same = same_rows(first.rows, expected)
            if not same:
                differ.append(name)
            if not expected:
                empty.append(name)
            speedups.append(duck_ms / warm_ms)
            answered = "pushdown" if first.pushdown else f"layout {first.layout_ids[0]}"
            view.add_row(
                name, f"{first.table.num_rows:,}", answered, f"{first.duration_ms:.1f}", f"{warm_ms:.2f}",
                f"{duck_ms:.1f}", _times(speedups[-1]), "yes" if same else "[red]NO[/]",
            )  # fmt: skip
    finally:
        session.close()
        raw.close()
    view.add_section()
    view.add_row("geomean", "", "", "", "", "", _times(geomean(speedups)), "")
    console.print(view)
    if differ:
        console.print(f"[bold red]answers differ from DuckDB's on the raw files[/]: {', '.join(differ)}")
        return False
    console.print(
        f"all {len(SSB_QUERIES)} answers equal DuckDB's on the raw files (orders before {built_to}); "
        f"geometric-mean speed-up {_times(geomean(speedups))}"
    )
    if empty:
        console.print(f"{', '.join(empty)} find no orders before {built_to} (`--last-year 1998` builds every year)")
    return True


def _times(ratio: float) -> str:
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def _build_years(cli: CliContext, project: str, last_year: int) -> str:
    """One build job per year of LINEORDER's order dates up to `last_year`, from where the model's segments
    end (a rerun builds nothing twice); each runs here, followed by retention and auto-merge. Returns the
    day (yyyy-MM-dd) the segments end before."""
    store = cli.store()
    with store.read(project) as tx:
        model = require_model(tx, SSB_MODEL)
        built_to = default_build_start(tx.require(Dataflow, model.uuid).segments)
        config = segment_config(tx.project(), model)
    levels = ", ".join(level.value for level in config.auto_merge_time_ranges)
    console.print(f"auto-merge {'on' if config.auto_merge_enabled else 'off'} (levels {levels})")
    for year in range(FIRST_YEAR, last_year + 1):
        rng = TimeRange.of(to_epoch_ms(f"{year}-01-01", "yyyy-MM-dd"), to_epoch_ms(f"{year + 1}-01-01", "yyyy-MM-dd"))
        if built_to is not None and rng.start < built_to:
            continue
        run_jobs(cli, project, [build_job(store, project, SSB_MODEL, rng)], wait=True)
    with store.read(project) as tx:
        end = default_build_start(tx.require(Dataflow, model.uuid).segments)
    if end is None:
        raise InvalidInputError(f"model {SSB_MODEL} has no segment: --last-year must be {FIRST_YEAR} or later")
    return dt.datetime.fromtimestamp(end / 1000, dt.UTC).date().isoformat()


def ssb_model_spec() -> ModelSpec:
    """The SSB model shipped with precube (`resources/ssb_model.yaml`)."""
    text = resources.files("precube").joinpath("resources/ssb_model.yaml").read_text(encoding="utf-8")
    return parse_spec(yaml.safe_load(text), "ssb_model.yaml")
