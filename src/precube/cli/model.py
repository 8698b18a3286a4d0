"""`precube model create|update|show|list|delete|check`."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path

import typer
import yaml
from rich.table import Table as RichTable

from precube.cli.context import PROJECT, console, project_state
from precube.metadata import Dataflow, IndexPlan, Model
from precube.modeling.model_rules import spec_of
from precube.modeling.model_spec import load_spec
from precube.modeling.model_store import (
    BrokenCheck,
    SavedModel,
    check_models,
    create_model,
    delete_model,
    require_model,
    update_model,
)

app = typer.Typer(help="Define models: fact and lookup tables, dimensions, measures, partition.", no_args_is_help=True)


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


@app.command("update")
def update(
    ctx: typer.Context, file: Path = typer.Argument(..., help="Edited model spec."), project: str = PROJECT
) -> None:
    """Apply an edited spec to the model of the same alias. A significant change (partition column,
    fact table, joins, filter, precompute flag) drops the built segments."""
    cli = project_state(ctx, project)
    saved = update_model(cli.store(), project, load_spec(file), writer=cli.writer)
    _summary(saved, "updated")
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
            data = spec_of(model).model_dump(mode="json", exclude_defaults=True)
            typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), nl=False)
            return
        docs = {
            "model_desc": json.loads(model.to_json()),
            "index_plan": json.loads(tx.require(IndexPlan, model.uuid).to_json()),
            "dataflow": json.loads(tx.require(Dataflow, model.uuid).to_json()),
        }
        typer.echo(json.dumps(docs, indent=2))


@app.command("list")
def list_(ctx: typer.Context, project: str = PROJECT) -> None:
    """List a project's models."""
    store = project_state(ctx, project).store()
    view = RichTable("model", "fact table", "dims", "measures", "layouts", "segments", "status", "semantic version")
    with store.read(project) as tx:
        for m in sorted(tx.list(Model), key=lambda m: m.alias):
            df = tx.require(Dataflow, m.uuid)
            plan = tx.require(IndexPlan, m.uuid)
            status = df.status.value + (f" ({df.broken_detail})" if df.broken_detail else "")
            view.add_row(
                m.alias,
                m.fact_table,
                str(len(m.dimensions())),
                str(len(m.measures())),
                str(len(plan.all_layouts())),
                str(len(df.segments)),
                status,
                str(m.semantic_version),
            )
    console.print(view)


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Model alias."),
    project: str = PROJECT,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Delete a model with its index plan and segments."""
    cli = project_state(ctx, project)
    if not yes:
        typer.confirm(f"delete model {name} and all of its segments?", abort=True)
    model = delete_model(cli.store(), project, name, writer=cli.writer)
    console.print(f"deleted model [bold]{model.alias}[/]")


@app.command("check")
def check(ctx: typer.Context, project: str = PROJECT) -> None:
    """Re-check every model against its tables: mark broken ones, recover fixed ones."""
    cli = project_state(ctx, project)
    report_checks(check_models(cli.store(), project, writer=cli.writer))


def report_checks(results: list[BrokenCheck]) -> None:
    for r in results:
        if r.reason:
            console.print(f"[red]model {r.model} is BROKEN[/]: {r.reason}")
        elif r.changed:
            console.print(f"[green]model {r.model} recovered[/] (OFFLINE until rebuilt)")
