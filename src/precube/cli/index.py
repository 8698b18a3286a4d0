"""`precube index preview|set-rules|recommend|add-table-index|list`."""

from __future__ import annotations

from pathlib import Path

import typer
import yaml
from rich.table import Table as RichTable

from precube.cli.context import DRY_RUN, MODEL, PROJECT, YES, confirm_drop, console, project_state
from precube.metadata import IndexPlan, RuleBasedIndex
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.agg_group import preview as preview_rule
from precube.modeling.model_spec import AggregationGroupSpec, load_rules
from precube.modeling.model_store import (
    add_model_table_index,
    apply_recommended,
    diff_rules,
    model_dims,
    model_measures,
    require_model,
    rule_for,
    set_model_rules,
)
from precube.query.project_metadata import read_metadata
from precube.query.recommend import recommend

RULES_FILE = typer.Argument(..., help="YAML/JSON with aggregation_groups (and global_dim_cap, base_layout_enabled).")
app = typer.Typer(help="What to precompute: aggregation groups and table indexes.", no_args_is_help=True)


def _names(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


@app.command("preview")
def preview(
    ctx: typer.Context,
    file: Path = RULES_FILE,
    project: str = PROJECT,
    model: str = MODEL,
) -> None:
    """Report how many layouts a rule set yields, per group and in all, without saving it."""
    store = project_state(ctx, project).store()
    rules = load_rules(file)
    with store.read(project) as tx:
        m = require_model(tx, model)
        rule = rule_for(m, tx.require(IndexPlan, m.uuid), rules)
    result = preview_rule(rule, model_dims(m), model_measures(m))
    view = RichTable("group", "layouts")
    for i, count in enumerate(result.group_counts, start=1):
        view.add_row(str(i), f"{count:,}")
    console.print(view)
    bound = "" if result.total_exact else "at most "
    console.print(f"total distinct layouts ({_base_words(rule)}): [bold]{bound}{result.total:,}[/]")
    if result.groups_over_limit:
        groups = ", ".join(map(str, result.groups_over_limit))
        console.print(f"[red]groups {groups} exceed {result.group_limit:,} layouts each: set-rules would refuse them")
    elif result.exceeds_limit:
        console.print(f"[red]more than {result.total_limit:,} layouts in all: set-rules would refuse them")


@app.command("set-rules")
def set_rules(
    ctx: typer.Context,
    file: Path = RULES_FILE,
    project: str = PROJECT,
    model: str = MODEL,
    yes: bool = YES,
    dry_run: bool = DRY_RUN,
) -> None:
    """Replace a model's aggregation groups; unchanged layouts keep their ids (built layouts the new rules
    drop are shown first, and asked for)."""
    cli = project_state(ctx, project)
    rules = load_rules(file)
    dropped = list(diff_rules(cli.store(), project, model, rules).dropped_built)
    if dropped:  # built layouts the new rules no longer hold: their data stops answering queries
        shown = ", ".join(map(str, dropped[:10])) + (f" … ({len(dropped)} in all)" if len(dropped) > 10 else "")
        if not confirm_drop(
            f"{len(dropped)} built layout{'s' if len(dropped) > 1 else ''} of model {model}: {shown}", yes, dry_run
        ):
            return
    elif dry_run:
        console.print(f"would set the rules of model {model}: no built layout is dropped")
        return
    plan = set_model_rules(cli.store(), project, model, rules, cli.writer)
    with cli.store().read(project) as tx:
        m = require_model(tx, model)
    # counted as `preview` counts them (one function), then everything the plan holds
    from_rules = (
        preview_rule(plan.rule_based_index, model_dims(m), model_measures(m)).total if plan.rule_based_index else 0
    )
    console.print(
        f"model {model}: {from_rules:,} layouts from the rules ({_base_words(plan.rule_based_index)}, as `index "
        f"preview` counts them); {len(plan.all_layouts()):,} layouts in all, with table indexes and manual ones"
    )


def _base_words(rule: RuleBasedIndex | None) -> str:
    return "with the base layout" if rule is not None and rule.base_layout_enabled is not False else "no base layout"


def rules_yaml(groups: list[AggregationGroupSpec]) -> str:
    """Recommended aggregation groups in the rules-file format of `set-rules` and `preview`: without the base
    layout of all their dimensions, which no recommended statement needs (each group answers its own)."""
    return yaml.safe_dump(
        {
            "aggregation_groups": [g.model_dump(exclude_defaults=True) for g in groups],
            "base_layout_enabled": False,
        },
        sort_keys=False,
    )


@app.command("recommend")
def recommend_rules(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="SQL statements the model should answer, separated by ';'."),
    project: str = PROJECT,
    model: str = MODEL,
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the rules file here instead of printing it."),
    apply: bool = typer.Option(False, "--apply", help="Replace the model's aggregation groups with them."),
) -> None:
    """Recommend aggregation groups from queries: one layout per distinct need, each answering its queries
    by itself (review them, then `index set-rules`, or `--apply`)."""
    cli = project_state(ctx, project)
    statements = [s.strip() for s in file.read_text(encoding="utf-8").split(";") if s.strip()]
    found = recommend(read_metadata(cli.store(), project), model, statements)
    for sql, why in found.skipped:
        console.print(f"[yellow]skipped[/] {' '.join(sql.split())[:100]}: {why}", highlight=False)
    for cc in found.computed_columns:
        console.print(f"computed column to add: {cc.column_name} = {cc.expression}", markup=False, highlight=False)
    for measure in found.measures:
        console.print(f"measure to add: {measure.name} = {measure.expression}({measure.column})", highlight=False)
    text = rules_yaml(found.groups)
    if out is not None:
        out.write_text(text, encoding="utf-8")
    elif found.groups:
        console.print(text, markup=False, highlight=False)
    console.print(
        f"{len(found.groups)} aggregation groups (one layout each) answer {len(found.answered)} of "
        f"{len(statements)} statements"
    )
    if apply and found.groups:
        plan = apply_recommended(
            cli.store(), project, model, found.groups, found.measures, found.computed_columns, cli.writer
        )
        console.print(f"model {model}: {len(plan.all_layouts())} layouts")
    elif found.measures or found.computed_columns:
        console.print("the groups use the columns and measures to add: add them to the model first (or use --apply)")


@app.command("add-table-index")
def add_table_index(
    ctx: typer.Context,
    project: str = PROJECT,
    model: str = MODEL,
    columns: list[str] = typer.Option(..., "--columns", "-c", help="Column names (comma-separated or repeated)."),
    shard_by: list[str] = typer.Option([], "--shard-by", help="Shard-by columns."),
    sort_by: list[str] = typer.Option([], "--sort-by", help="Sort-by columns."),
) -> None:
    """Add a table (detail) index over model columns."""
    cli = project_state(ctx, project)
    layout = add_model_table_index(
        cli.store(), project, model, _names(columns), _names(shard_by), _names(sort_by), cli.writer
    )
    console.print(f"added table index layout {layout.id} ({len(layout.col_order)} columns)")


@app.command("list")
def list_(ctx: typer.Context, project: str = PROJECT, model: str = MODEL) -> None:
    """List a model's layouts."""
    store = project_state(ctx, project).store()
    with store.read(project) as tx:
        m = require_model(tx, model)
        plan = tx.require(IndexPlan, m.uuid)
    names = {c.id: c.name for c in m.all_named_columns} | {x.id: x.name for x in m.all_measures}
    view = RichTable("layout", "kind", "dimensions", "measures")
    for lay in plan.all_layouts():
        kind = (
            ("table" if lay.is_table_index else "agg")
            + (" base" if lay.base else "")
            + (" manual" if lay.manual else "")
        )
        dims = [names.get(i, str(i)) for i in lay.col_order if i < MEASURE_ID_BASE]
        measures = [names.get(i, str(i)) for i in lay.col_order if i >= MEASURE_ID_BASE]
        view.add_row(str(lay.id), kind, ", ".join(dims), ", ".join(measures))
    console.print(view)
    if plan.to_be_deleted_indexes:
        count = sum(len(i.layouts) for i in plan.to_be_deleted_indexes)
        console.print(f"{count} layouts to be deleted once their segments are rebuilt")
