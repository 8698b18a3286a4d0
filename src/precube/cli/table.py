"""`precube table load|list|reload|sample|unload`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer
from rich.table import Table as RichTable

from precube.cli.context import (
    DRY_RUN,
    FORMAT,
    PROJECT,
    YES,
    CliContext,
    OutputFormat,
    confirm_drop,
    console,
    err_console,
    print_records,
    project_state,
    state,
)
from precube.cli.model import report_checks
from precube.errors import InvalidInputError, PrecubeError
from precube.metadata import SourceType, Table, TableExt
from precube.metadata.csv_options import CsvOptions
from precube.sources.csv_files import check_encoding, parse_columns, read_schema_file
from precube.sources.sampling import sample_and_store
from precube.sources.table_paths import TablePath, check_table_name, tables_at
from precube.sources.tables import load_catalog_table, load_path

app = typer.Typer(help="Register source tables, reload their schema, sample them.", no_args_is_help=True)


class FileFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"


@app.command("load")
def load(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(
        None,
        help="Parquet or CSV files (each a table named after the file), directories of them, or table directories.",
        show_default=False,
    ),
    project: str = PROJECT,
    catalog: list[str] = typer.Option([], "--catalog", help="Spark catalog table DB.TABLE (repeatable)."),
    fmt: FileFormat | None = typer.Option(None, "--format", help="File format; detected from file names."),
    database: str | None = typer.Option(None, "--database", help="Database; default: the project's."),
    name: str | None = typer.Option(
        None, "--name", help="Table name (one path only, loaded as one table); default: the file's or directory's name."
    ),
    header: bool = typer.Option(True, "--header/--no-header", help="CSV files start with a header row."),
    delimiter: str = typer.Option(",", "--delimiter", help="CSV field delimiter."),
    quote: str = typer.Option('"', "--quote", help="CSV quote character."),
    escape: str | None = typer.Option(
        None, "--escape", help='CSV escape character inside quotes; default: a doubled quote ("").'
    ),
    null: str | None = typer.Option(None, "--null", help="CSV null marker (an empty field is always NULL)."),
    encoding: str = typer.Option("utf-8", "--encoding", help="CSV encoding: utf-8, latin-1 or utf-16."),
    columns: str | None = typer.Option(
        None, "--columns", help='CSV columns by position: "ID bigint, PRICE decimal(19,4), …" (default: inferred).'
    ),
    schema: Path | None = typer.Option(
        None, "--schema", help="CSV columns from a JSON or YAML file: a list of {name, type}.", exists=True
    ),
    sample: bool = typer.Option(False, "--sample", help="Sample each table after loading."),
) -> None:
    """Register tables from files or the Spark catalog (schema read from the source)."""
    cli = state(ctx)
    paths = paths or []
    if not paths and not catalog:
        raise InvalidInputError("give at least one PATH or --catalog DB.TABLE")
    if name and len(paths) + len(catalog) != 1:
        raise InvalidInputError(
            "--name names one table: give one PATH with it (without it, each file is named after itself)"
        )
    if columns is not None and schema is not None:
        raise InvalidInputError("give the CSV columns once: --columns or --schema")
    declared = parse_columns(columns) if columns is not None else read_schema_file(schema) if schema else None
    csv = CsvOptions(
        header=header,
        delimiter=_character(delimiter, "--delimiter"),
        quote=_character(quote, "--quote"),
        escape=_character(escape, "--escape") if escape is not None else _character(quote, "--quote"),
        null=null,
        encoding=check_encoding(encoding),
        columns=tuple(declared) if declared is not None else None,
    )
    given = [o for o, v in (("--columns", columns), ("--schema", schema), ("--null", null), ("--escape", escape)) if v]
    store, loaded, failed = cli.store(), [], []
    store.require_project(project)
    source_type = SourceType[fmt.name.upper()] if fmt else None
    found = [TablePath(path, name) for path in paths] if name else [t for path in paths for t in tables_at(path)]
    for each in found:
        try:
            table = load_path(
                store,
                project,
                each.path,
                source_type,
                csv,
                given,
                name=check_table_name(each.name),
                database=database,
                writer=cli.writer,
            )
        except PrecubeError as err:  # the other files still load; the exit status tells
            err_console.print(f"[bold red]error:[/] {each.path}: {err.message}", highlight=False, soft_wrap=True)
            failed.append(str(each.path))
            continue
        loaded.append(table)
        console.print(f"loaded [bold]{table.identity}[/] ({len(table.columns)} columns) from {table.location}")
    for identity in catalog:
        table = load_catalog_table(store, project, identity, cli.spark, writer=cli.writer)
        loaded.append(table)
        console.print(f"loaded [bold]{table.identity}[/] ({len(table.columns)} columns) from the Spark catalog")
    if sample:
        _sample(cli, project, [t.identity for t in loaded])
    if failed:
        raise typer.Exit(1)


def _character(text: str, option: str) -> str:
    text = {"\\t": "\t", "tab": "\t"}.get(text, text)  # a tab is hard to type in a shell
    if len(text) != 1:
        raise InvalidInputError(f"{option} takes one character, not {text!r}")
    return text


@app.command("list")
def list_(ctx: typer.Context, project: str = PROJECT, fmt: OutputFormat = FORMAT) -> None:
    """List a project's tables with their sampled row counts."""
    store = project_state(ctx, project).store()
    with store.read(project) as tx:
        records = [
            {
                "table": t.identity,
                "source": t.source_type.name,
                "columns": len(t.columns),
                "rows_sampled": ext.total_rows if (ext := tx.get(TableExt, t.identity)) else None,
                "location": t.location,
            }
            for t in tx.list(Table)
        ]
    columns = {
        "table": lambda r: r["table"],
        "source": lambda r: r["source"],
        "columns": lambda r: str(r["columns"]),
        "rows (sampled)": lambda r: "-" if r["rows_sampled"] is None else f"{r['rows_sampled']:,}",
        "location": lambda r: r["location"] or "",
    }
    print_records(fmt, records, columns)


@app.command("reload")
def reload(
    ctx: typer.Context,
    tables: list[str] = typer.Argument(..., help="DB.TABLE"),
    project: str = PROJECT,
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Re-read tables' schemas from their sources and report what changed. A change that breaks a model
    (a column it uses dropped or retyped) drops its segments: shown first, and asked for."""
    from precube.jobs.table_changes import apply_reload, preview_reload

    cli = project_state(ctx, project)
    found = preview_reload(cli.store(), cli.settings.warehouse_root, project, tables, cli.spark)
    for table, change in found.tables:
        console.print(f"{table.identity}: {change.describe()}")
    if not found.changed:
        return
    for broken in found.broken:
        console.print(broken.describe(), markup=False)
    if found.broken and not confirm_drop("the segments of the models above", yes, dry_run):
        return
    if dry_run:
        console.print("would save the new schemas")
        return
    report_checks(apply_reload(cli.store(), project, found, cli.writer), project)


@app.command("sample")
def sample(
    ctx: typer.Context,
    tables: list[str] = typer.Argument(..., help="DB.TABLE"),
    project: str = PROJECT,
    rows: int | None = typer.Option(None, "--rows", min=1, help="Read at most this many rows."),
) -> None:
    """Sample tables on Spark: row count, per-column cardinality, min, max, nulls, example rows."""
    cli = project_state(ctx, project)
    _sample(cli, project, tables, rows)


def _sample(cli: CliContext, project: str, tables: list[str], rows: int | None = None) -> list[TableExt]:
    spark = cli.spark()
    results = []
    for identity in tables:
        with err_console.status(f"sampling {identity.upper()} on Spark…"):
            ext = sample_and_store(
                cli.store(),
                project,
                identity,
                spark,
                rows or cli.settings.sampling.rows,
                cli.settings.sampling.sample_rows,
                writer=cli.writer,
            )
        results.append(ext)
        print_stats(ext)
    return results


def print_stats(ext: TableExt) -> None:
    title = f"{ext.table_name}: {ext.total_rows:,} rows"
    if ext.sampled_rows < ext.total_rows:
        title += f" (stats over a sample of {ext.sampled_rows:,})"
    view = RichTable("column", "cardinality≈", "nulls", "min", "max", title=title)
    for s in ext.columns_stats:
        view.add_row(s.column_name, f"{s.cardinality:,}", f"{s.null_count:,}", s.min_value or "", s.max_value or "")
    console.print(view)


@app.command("unload")
def unload(
    ctx: typer.Context,
    tables: list[str] = typer.Argument(..., help="DB.TABLE"),
    project: str = PROJECT,
    cascade: bool = typer.Option(False, "--cascade", help="Also delete the models that read the tables."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before deleting models (--cascade)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would be dropped; drop nothing."),
) -> None:
    """Remove tables (and their stats) from a project; refused while a model reads one, unless --cascade
    (which shows the models and segments it drops, and asks)."""
    from precube.jobs.table_changes import preview_unload, unload_tables

    cli = project_state(ctx, project)
    store = cli.store()
    found = preview_unload(store, project, tables)
    if found.models and (cascade or dry_run):
        confirm_drop(f"models {found.describe()}", yes, dry_run, verb="delete")  # aborts on a no
    if dry_run:
        console.print(f"would unload {', '.join(found.tables)}", markup=False)
        return
    unload_tables(store, project, tables, cascade, cli.writer)
    for alias in sorted(found.models) if cascade else []:
        console.print(f"deleted model {alias}")
    for identity in found.tables:
        console.print(f"unloaded {identity}")
