"""Reloading and unloading source tables, with what each would drop told first: the shared logic of
`precube table reload|unload` and the server's `pre_reload`/`reload` and `prepare_unload`/`DELETE` tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precube.jobs.removal import drop_text, segment_bytes
from precube.metadata import Dataflow, MetadataStore, Model, Table
from precube.modeling.model_store import BrokenCheck, check_models, delete_model, models_broken_by
from precube.sources.source import SparkProvider
from precube.sources.tables import SchemaChange, models_using, reread_table, unload_table


@dataclass(frozen=True)
class BrokenModel:
    """A model a reload would break, and the segments it would then lose."""

    model: str
    reason: str
    segments: int
    data_bytes: int | None

    def describe(self) -> str:
        return f"model {self.model} would break ({self.reason}): {drop_text(self.segments, self.data_bytes)}"


@dataclass(frozen=True)
class ReloadPreview:
    """Tables as their sources now describe them (not saved), what changed, and the models that would break."""

    tables: list[tuple[Table, SchemaChange]]
    broken: list[BrokenModel]

    @property
    def changed(self) -> list[Table]:
        return [table for table, change in self.tables if change.changed]

    def as_dict(self) -> dict[str, Any]:
        """Kylin's pre_reload counts, plus the columns and models by name."""
        changes = [c for _, c in self.tables]
        return {
            "add_column_count": sum(len(c.added) for c in changes),
            "remove_column_count": sum(len(c.removed) for c in changes),
            "data_type_change_column_count": sum(len(c.retyped) for c in changes),
            "broken_model_count": len(self.broken),
            "tables": [
                {
                    "table": t.identity,
                    "added": c.added,
                    "removed": c.removed,
                    "retyped": [{"column": n, "from": old, "to": new} for n, old, new in c.retyped],
                    "describe": c.describe(),
                }
                for t, c in self.tables
            ],
            "broken_models": [
                {"model": b.model, "reason": b.reason, "segments": b.segments, "data_bytes": b.data_bytes}
                for b in self.broken
            ],
        }


def preview_reload(
    store: MetadataStore, warehouse_root: str, project: str, identities: list[str], spark: SparkProvider
) -> ReloadPreview:
    """Re-read the tables' schemas from their sources; save nothing."""
    reread = [reread_table(store, project, identity, spark) for identity in identities]
    changed = [table for table, change in reread if change.changed]
    broken = [
        BrokenModel(m.alias, reason, len(ids), segment_bytes(warehouse_root, project, m.uuid, ids))
        for m, reason, ids in (models_broken_by(store, project, changed) if changed else [])
    ]
    return ReloadPreview(reread, broken)


def apply_reload(store: MetadataStore, project: str, preview: ReloadPreview, writer: str) -> list[BrokenCheck]:
    """Save the new schemas of a preview, then re-check the models (a dropped or retyped column breaks those
    that use it, seed 002 "Broken Model")."""
    if not preview.changed:
        return []
    with store.transaction(project, writer) as tx:
        for table in preview.changed:
            tx.update(table)
    return check_models(store, project, writer=writer)


@dataclass(frozen=True)
class UnloadPreview:
    """The tables to unload and the models reading them (alias → segments) that a cascade deletes."""

    tables: list[str]
    models: dict[str, int]

    def describe(self) -> str:
        return ", ".join(f"{a} ({n} segments)" for a, n in sorted(self.models.items()))


def preview_unload(store: MetadataStore, project: str, identities: list[str]) -> UnloadPreview:
    """What unloading `identities` touches; every table must exist."""
    with store.read(project) as tx:
        tables = [tx.require(Table, identity.upper()).identity for identity in identities]
        users: dict[str, Model] = {m.alias: m for t in tables for m in models_using(tx, t)}
        segments = {a: len(df.segments) if (df := tx.get(Dataflow, m.uuid)) else 0 for a, m in users.items()}
    return UnloadPreview(tables, segments)


def unload_tables(
    store: MetadataStore, project: str, identities: list[str], cascade: bool, writer: str
) -> UnloadPreview:
    """Unload the tables; refused while a model reads one, unless `cascade`, which deletes those models first."""
    found = preview_unload(store, project, identities)
    if cascade:
        for alias in sorted(found.models):
            delete_model(store, project, alias, writer=writer)
    for identity in found.tables:
        unload_table(store, project, identity, writer=writer)
    return found
