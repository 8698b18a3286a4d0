"""EXPLAIN (DESIGN §6 step 7): for each context how it is answered (a layout, the source tables, or the
whole statement pushed down), the chosen model, layout and its columns, the segments scanned and pruned,
the rows to scan; each block whose model part was split off from its subqueries; the engine and the SQL it
runs; every rejected candidate with its reason; for a pushdown, why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from precube.metadata.model import MEASURE_ID_BASE
from precube.query.literal_lists import abbreviated
from precube.query.matching import Match

if TYPE_CHECKING:
    from precube.query.session import ContextPlan, Plan


def _layout_columns(m: Match) -> list[str]:
    model = m.model.model
    names = []
    for cid in m.layout.col_order:
        if cid >= MEASURE_ID_BASE:
            measure = model.measure_by_id(cid)
            names.append(f"{measure.name if measure else cid} (measure)")
        else:
            col = model.column_by_id(cid)
            names.append(col.column if col else str(cid))
    return names


@dataclass(frozen=True)
class Explanation:
    """How a query is answered: its plan, the engine, and the SQL the engine runs."""

    plan: Plan
    engine: str
    sql: str

    def as_dict(self) -> dict[str, Any]:
        return explain_dict(self.plan, self.engine, self.sql)

    def text(self) -> str:
        return explain_text(self.plan, self.engine, self.sql)


def _answer(plan: Plan, c: ContextPlan) -> str:
    if plan.pushdown:
        return "pushdown"
    if c.match is not None:
        return "table index" if c.match.table_index else "aggregate index"
    if c.snapshot is not None:
        return "lookup snapshot"
    return "source tables" if c.from_source else "none"


def explain_dict(plan: Plan, engine: str, engine_sql: str) -> dict[str, Any]:
    contexts = []
    for c in plan.contexts:
        entry: dict[str, Any] = {"block": c.sql, "answer": _answer(plan, c)}
        if c.from_source and not plan.pushdown:
            entry["source_tables"] = sorted({f"{t.db}.{t.name}".upper() for t in _own_tables(c)})
        if c.match is not None:
            m = c.match
            entry.update(
                model=m.model.model.alias,
                layout_id=m.layout.id,
                index="table index" if m.table_index else "aggregate index",
                layout_columns=_layout_columns(m),
                segments_scanned=[s.segment.name for s in m.scanned],
                segments_pruned=[s.name for s in m.pruned],
                rows_to_scan=m.rows,
                aggregates=[w.describe for w in m.ways],
                derived=[
                    f"{d.table} AS {d.alias} ({d.kind} JOIN on "
                    + ", ".join(f"{m.model.column_names.get(fk, fk)} = {pk.upper()}" for fk, pk in d.keys)
                    + ")"
                    for d in m.derived
                ],
                joins_proven=[o.table for o in m.proof.obligations],
            )
        if c.snapshot is not None:
            entry.update(model=c.snapshot.model.model.alias, snapshots=c.snapshot.describe())
        entry["rejected"] = [{"model": r.model, "reason": r.reason} for r in c.rejections]
        contexts.append(entry)
    ids = {id(c.block): i for i, c in enumerate(plan.contexts, start=1)}
    splits = [
        {
            "block": abbreviated(s.original).sql(dialect="spark"),
            "model_part_context": ids.get(id(s.part)),
            "model_part_alias": s.alias,
            "joined_with": list(s.subqueries),
        }
        for s in plan.splits
    ]
    return {
        "pushdown": plan.pushdown,
        "pushdown_reason": plan.pushdown_reason,
        "engine": engine,
        "splits": splits,
        "contexts": contexts,
        "sql": engine_sql,
    }


def _own_tables(c: ContextPlan) -> list[exp.Table]:
    """The source tables the block itself reads (not its subqueries')."""
    return [t for t in c.block.find_all(exp.Table) if t.db and t.find_ancestor(exp.Select) is c.block]


def explain_text(plan: Plan, engine: str, engine_sql: str) -> str:
    d = explain_dict(plan, engine, engine_sql)
    lines = []
    if plan.pushdown:
        lines.append(f"PUSHDOWN to the source tables: {plan.pushdown_reason}")
    for s in d["splits"]:
        lines.append(f"block split: {s['block']}")
        joined = ", ".join(s["joined_with"])
        lines.append(
            f"  its model part ({s['model_part_alias']}) is context {s['model_part_context']}, joined with {joined}"
        )
    for i, c in enumerate(d["contexts"], start=1):
        lines.append(f"context {i}: {c['block']}")
        if "source_tables" in c:
            lines.append(f"  answered from the source tables {', '.join(c['source_tables'])} (it reads no fact table)")
        if "snapshots" in c and not plan.pushdown:
            lines.append(f"  lookup snapshots (model {c['model']}): {'; '.join(c['snapshots'])}")
        elif "model" in c and not plan.pushdown:
            lines.append(f"  model {c['model']}, layout {c['layout_id']} ({c['index']})")
            lines.append(f"  layout columns: {', '.join(c['layout_columns'])}")
            scanned, pruned = c["segments_scanned"], c["segments_pruned"]
            lines.append(f"  segments scanned ({len(scanned)}): {', '.join(scanned) or '-'}")
            lines.append(f"  segments pruned ({len(pruned)}): {', '.join(pruned) or '-'}")
            lines.append(f"  rows to scan: {c['rows_to_scan']:,}")
            if c["joins_proven"]:
                proven = ", ".join(c["joins_proven"])
                lines.append(f"  joins proven exact by the scanned segments' join stats: {proven}")
            if c["derived"]:
                lines.append(f"  lookups joined back (derived dimensions): {'; '.join(c['derived'])}")
            if c["aggregates"]:
                lines.append(f"  aggregates: {'; '.join(c['aggregates'])}")
        for r in c["rejected"]:
            lines.append(f"  rejected model {r['model']}: {r['reason']}")
    lines.append(f"engine: {engine}")
    lines.append("SQL:")
    lines.extend("  " + line for line in engine_sql.splitlines())
    return "\n".join(lines)
