"""`precube model create|validate|update|show|list|delete|check|config`."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer
import yaml
from rich.markup import escape

from precube.cli import model_suggest
from precube.cli import segment_settings as seg
from precube.cli.context import (
    DRY_RUN,
    FORMAT,
    MODEL,
    PROJECT,
    YES,
    Columns,
    OutputFormat,
    confirm_drop,
    console,
    err_console,
    print_records,
    project_state,
)
from precube.errors import InvalidInputError
from precube.jobs import lifecycle
from precube.jobs.lifecycle import segment_config
from precube.metadata import Dataflow, IndexPlan, Model
from precube.modeling.model_edits import set_segment_config
from precube.modeling.model_spec import load_spec, read_document
from precube.modeling.model_store import (
    BrokenCheck,
    SavedModel,
    broken_text,
    check_models,
    create_model,
    editable_spec,
    preview_update,
    require_model,
    spec_problems,
    update_model,
)

app = typer.Typer(help="Define models: fact and lookup tables, dimensions, measures, partition.", no_args_is_help=True)
app.command("suggest")(model_suggest.suggest)


class ShowFormat(StrEnum):
    spec = "spec"  # the editable YAML spec
    json = "json"  # the stored documents


def _summary(saved: SavedModel, verb: str) -> None:
    m = saved.model
    layouts = len(saved.index_plan.all_layouts())
    console.print(
        f"{verb} model [bold]{m.alias}[/] ({m.uuid}): {len(m.dimensions())} dimensions, "
        f"{len(m.measures())} measures, {layouts} layouts, semantic version {m.semantic_version}"
    )


@app.command("create")
def create(
    ctx: typer.Context, file: Path = typer.Argument(..., help="Model spec (.yaml or .json)."), project: str = PROJECT
) -> None:
    """Create a model from a spec file, with its index plan and an empty dataflow."""
    cli = project_state(ctx, project)
    _summary(create_model(cli.store(), project, load_spec(file), writer=cli.writer), "created")


@app.command("validate")
def validate(
    ctx: typer.Context, file: Path = typer.Argument(..., help="Model spec (.yaml or .json)."), project: str = PROJECT
) -> None:
    """Check a spec against the project's tables as create and update do, saving nothing: every problem, each
    with its path in the file (exit status 1 if any)."""
    cli = project_state(ctx, project)
    problems = spec_problems(cli.store(), project, read_document(file))
    for problem in problems:
        err_console.print(f"{file}: {problem}", markup=False, highlight=False, soft_wrap=True)
    if problems:
        raise typer.Exit(1)
    console.print(f"{file}: no problems", markup=False)


@app.command("update")
def update(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Edited model spec."),
    project: str = PROJECT,
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Apply an edited spec to the model of the same alias. A significant change (partition column,
    fact table, joins, filter, precompute flag) drops the built segments: what it drops is shown first, and
    asked for."""
    from precube.jobs.removal import drop_text, segment_bytes

    cli = project_state(ctx, project)
    spec = load_spec(file)
    found = preview_update(cli.store(), project, spec)
    if found.dropped_segments or found.dropped_layouts:
        size = segment_bytes(cli.settings.warehouse_root, project, found.model.uuid, list(found.dropped_segments))
        why = f" (significant change: {'; '.join(found.significant_changes)})" if found.significant_changes else ""
        what = drop_text(len(found.dropped_segments), size, len(found.dropped_layouts))
        if not confirm_drop(f"{what} of model {found.model.alias}{why}", yes, dry_run):
            return
    elif dry_run:
        console.print(f"would update model {found.model.alias}: nothing is dropped")
        return
    saved = update_model(cli.store(), project, spec, writer=cli.writer)
    _summary(saved, "updated")
    if saved.recovered:
        console.print(f"[green]model {saved.model.alias} recovered[/] (OFFLINE until rebuilt)")
    if saved.significant_changes:
        console.print(f"[yellow]significant change ({'; '.join(saved.significant_changes)}): built segments dropped")


@app.command("show")
def show(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Model alias."),
    project: str = PROJECT,
    fmt: ShowFormat = typer.Option(ShowFormat.spec, "--format", help="spec (editable YAML) or json (documents)."),
) -> None:
    """Print a model as an editable spec or as its stored documents."""
    store = project_state(ctx, project).store()
    with store.read(project) as tx:
        model = require_model(tx, name)
        if fmt is ShowFormat.spec:
            data = editable_spec(model, tx.require(IndexPlan, model.uuid)).model_dump(
                mode="json", exclude_defaults=True
            )
            typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)
            return
        docs = {
            "model_desc": json.loads(model.to_json()),
            "index_plan": json.loads(tx.require(IndexPlan, model.uuid).to_json()),
            "dataflow": json.loads(tx.require(Dataflow, model.uuid).to_json()),
        }
        typer.echo(json.dumps(docs, indent=2))


@app.command("list")
def list_(ctx: typer.Context, project: str = PROJECT, fmt: OutputFormat = FORMAT) -> None:
    """List a project's models."""
    store = project_state(ctx, project).store()
    records = []
    with store.read(project) as tx:
        for m in sorted(tx.list(Model), key=lambda m: m.alias):
            df = tx.require(Dataflow, m.uuid)
            records.append(
                {
                    "model": m.alias,
                    "fact_table": m.fact_table,
                    "dimensions": len(m.dimensions()),
                    "measures": len(m.measures()),
                    "layouts": len(tx.require(IndexPlan, m.uuid).all_layouts()),
                    "segments": len(df.segments),
                    "status": df.status.value,
                    "broken_detail": df.broken_detail or None,
                    "semantic_version": m.semantic_version,
                }
            )
    columns: Columns = {
        "model": lambda r: r["model"],
        "fact table": lambda r: r["fact_table"],
        "dims": lambda r: str(r["dimensions"]),
        "measures": lambda r: str(r["measures"]),
        "layouts": lambda r: str(r["layouts"]),
        "segments": lambda r: str(r["segments"]),
        "status": lambda r: r["status"] + (f" ({r['broken_detail']})" if r["broken_detail"] else ""),
        "semantic version": lambda r: str(r["semantic_version"]),
    }
    print_records(fmt, records, columns)


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Model alias."),
    project: str = PROJECT,
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Delete a model with its index plan and segments (what it drops is shown first, and asked for)."""
    from precube.jobs.removal import preview_model_removal, remove_model

    cli = project_state(ctx, project)
    found = preview_model_removal(cli.store(), cli.settings.warehouse_root, project, name)
    if not confirm_drop(found.describe(), yes, dry_run):
        return
    remove_model(cli.store(), cli.settings.warehouse_root, project, name, writer=cli.writer)
    console.print(f"deleted model [bold]{found.model}[/]")


@app.command("check")
def check(ctx: typer.Context, project: str = PROJECT) -> None:
    """Re-check every model against its tables: mark broken ones, recover fixed ones."""
    cli = project_state(ctx, project)
    report_checks(check_models(cli.store(), project, writer=cli.writer), project)


def report_checks(results: list[BrokenCheck], project: str) -> None:
    for r in results:
        if r.reason:
            console.print(f"[red]{escape(broken_text(r.model, r.reason, project))}[/]")
        elif r.changed:
            console.print(f"[green]model {r.model} recovered[/] (OFFLINE until rebuilt)")
        for name, (recorded, spark) in r.retyped.items():
            console.print(
                f"[yellow]model {r.model}: computed column {name} is recorded as {recorded}, Spark types it {spark}[/]:"
                " no query reads the layouts holding it. Re-save the model to re-type it (precube model show"
                f" -p {project} {r.model} > m.yaml; precube model update -p {project} m.yaml), then build the layouts"
                f" it drops again (precube build -p {project} -m {r.model} --add-layouts)"
            )


@app.command("config")
def config(
    ctx: typer.Context,
    project: str = PROJECT,
    model: str = MODEL,
    auto_merge: bool | None = seg.AUTO_MERGE,
    merge_levels: str | None = seg.MERGE_LEVELS,
    merge_thresholds: str | None = seg.MERGE_THRESHOLDS,
    volatile: str | None = seg.VOLATILE,
    no_volatile: bool = seg.NO_VOLATILE,
    retention: str | None = seg.RETENTION,
    no_retention: bool = seg.NO_RETENTION,
    inherit: bool = typer.Option(
        False, "--inherit", help="Drop the model's own settings: take all from the project (then apply the others)."
    ),
    first_day_of_week: str | None = typer.Option(None, "--first-day-of-week", hidden=True),
) -> None:
    """Show the segment settings in force for a model (its own, the project's for the rest), or override
    those given. Only the model document changes: no segment or index is touched."""
    if first_day_of_week is not None:
        raise InvalidInputError(
            "--first-day-of-week is a project setting (kylin.metadata.first-day-of-week), not a model's: "
            f"use precube project config -p {project} --first-day-of-week {first_day_of_week}"
        )
    cli = project_state(ctx, project)
    edits = seg.SegmentEdits.parse(
        auto_merge, merge_levels, volatile, no_volatile, retention, no_retention, merge_thresholds
    )
    store = cli.store()
    if edits or inherit:
        m = set_segment_config(store, project, model, edits.changes, inherit, cli.writer)
        console.print(f"updated the segment settings of model [bold]{m.alias}[/]")
    with store.read(project) as tx:
        m = require_model(tx, model)
        p = tx.project()
    day = lifecycle.first_day_of_week(p)
    console.print(seg.settings_table(segment_config(p, m), day, m.segment_config, model=True))
