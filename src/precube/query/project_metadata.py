"""What the query path reads of a project's metadata, in one read transaction: its tables (the SQL
catalog), and for each model its index plan and queryable segments with the layouts each holds.

A read is immutable; `MetadataReader` keeps the latest one per project and re-reads it only when the
project's audit log has moved (one indexed lookup per query instead of parsing every document).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from precube.metadata import (
    Dataflow,
    DataflowStatus,
    FunctionExpression,
    IndexPlan,
    Layout,
    Measure,
    MetadataStore,
    Model,
    NamedColumn,
    Segment,
    SegmentDetails,
    SegmentStatus,
    Table,
    datatypes,
    paths,
)
from precube.metadata.dataflow import LayoutInstance
from precube.metadata.model import MEASURE_ID_BASE
from precube.modeling.model_rules import reading_columns, retyped_columns
from precube.query.aggregates import MeasureIndex
from precube.query.computed import Expressions, computed_expressions
from precube.query.frontend import DIALECT, Catalog, canonical
from precube.query.pruning import ValueRange, segment_ranges
from precube.storage import columns as names

if TYPE_CHECKING:
    from precube.query.catalog.description import CatalogDescription

QUERYABLE = (SegmentStatus.READY, SegmentStatus.WARNING)


@dataclass(frozen=True)
class SegmentLayouts:
    """A queryable segment and the layouts built in it (layout id → its instance: rows, bytes)."""

    segment: Segment
    layouts: dict[int, LayoutInstance]


@dataclass(frozen=True)
class ModelMetadata:
    """One model as a metadata read saw it: its index plan, dataflow and queryable segments."""

    model: Model
    plan: IndexPlan
    dataflow: Dataflow
    segments: list[SegmentLayouts]  # queryable ones, in range order
    # columns and measures whose built cells may be wrong (`model_rules.retyped_columns`), and why
    retyped: frozenset[int] = frozenset()
    retyped_reason: str = ""

    @property
    def online(self) -> bool:
        return self.dataflow.status in (DataflowStatus.ONLINE, DataflowStatus.WARNING) and bool(self.segments)

    @cached_property
    def layouts(self) -> dict[int, Layout]:
        return {lay.id: lay for lay in self.plan.all_layouts()}

    # What matching reads of the model for every query, derived once per metadata read.

    @cached_property
    def layout_columns(self) -> dict[int, frozenset[int]]:
        """Layout id → the column and measure ids it holds."""
        return {i: frozenset(lay.col_order) for i, lay in self.layouts.items()}

    @cached_property
    def columns_by_ref(self) -> dict[str, NamedColumn]:
        """Live columns by upper-case `ALIAS.COLUMN`."""
        return {c.column.upper(): c for c in self.model.live_columns()}

    @cached_property
    def column_names(self) -> dict[int, str]:
        """Live column id → `ALIAS.COLUMN`."""
        return {c.id: c.column for c in self.model.live_columns()}

    @cached_property
    def column_types(self) -> dict[int, str]:
        """Live column id → its type (a computed column's inferred one)."""
        computed = {f"{cc.table_alias}.{cc.column_name}".upper(): cc.datatype for cc in self.model.computed_columns}
        return {c.id: c.datatype or computed.get(c.column.upper(), "") or "double" for c in self.model.live_columns()}

    @cached_property
    def cell_types(self) -> dict[str, str]:
        """Layout file column → its Spark type, for the columns queries compute with: dimensions, and SUM,
        COUNT, MIN and MAX cells (`storage.columns` names them)."""
        found = {names.column(i): datatypes.to_spark(t) for i, t in self.column_types.items()}
        ids = {c.column: c.id for c in self.model.live_columns()}
        for m in self.model.measures():
            fn, params = m.function.expression, m.function.parameters
            arg = ids.get(params[0].value) if params else None
            if fn is FunctionExpression.SUM and m.function.returntype:
                found[names.measure_column(m.id)] = datatypes.to_spark(m.function.returntype)
            elif fn is FunctionExpression.COUNT:
                found[names.measure_column(m.id)] = "bigint"
            elif fn in (FunctionExpression.MIN, FunctionExpression.MAX) and arg is not None:
                found[names.measure_column(m.id)] = datatypes.to_spark(self.column_types[arg])
            elif fn is FunctionExpression.COUNT_DISTINCT:
                found[names.count_column(m.id)] = "bigint"
        return found

    def layout_types(self, layout: Layout) -> tuple[tuple[str, str], ...]:
        """`cell_types` of one layout's columns."""
        types = self.cell_types
        held = [names.column(i) if i < MEASURE_ID_BASE else names.measure_column(i) for i in layout.col_order]
        held += [names.count_column(i) for i in layout.col_order if names.count_column(i) in types]
        return tuple((c, types[c]) for c in held if c in types)

    @cached_property
    def computed_columns(self) -> dict[str, int]:
        """Computed column id by its expression's canonical text (`frontend.canonical`)."""
        found = {}
        for cc in self.model.computed_columns:
            named = self.columns_by_ref.get(f"{cc.table_alias}.{cc.column_name}".upper())
            if named is not None:
                parsed = sqlglot.parse_one(cc.expression, read=DIALECT)
                found[canonical(parsed)] = named.id
                found.setdefault(canonical(parsed.unnest()), named.id)  # `(a < b)` is read where `a < b` is
        return found

    @cached_property
    def computed_kinds(self) -> frozenset[type[exp.Expr]]:
        """The node kinds a computed column's expression may be written as (`a < b` also as `b > a`): a query's
        expression of another kind is none of them, so matching skips it without printing it."""
        kinds: set[type[exp.Expr]] = set()
        for cc in self.model.computed_columns:
            kinds.add(type(sqlglot.parse_one(cc.expression, read=DIALECT).unnest()))
        for a, b in ((exp.LT, exp.GT), (exp.LTE, exp.GTE)):
            if a in kinds or b in kinds:
                kinds |= {a, b}
        return frozenset(kinds)

    @cached_property
    def measure_index(self) -> MeasureIndex:
        return MeasureIndex.of(self.model)

    @cached_property
    def topn_measures(self) -> list[Measure]:
        return [m for m in self.model.measures() if m.function.expression is FunctionExpression.TOP_N]

    @cached_property
    def non_null_columns(self) -> frozenset[int]:
        """Columns whose recorded NULL count (the build's segment stats) is 0 in every queryable segment."""
        found = [{int(k) for k, n in s.segment.column_null_counts.items() if n == 0} for s in self.segments]
        return frozenset(set.intersection(*found)) if found else frozenset()

    @cached_property
    def segment_ranges(self) -> dict[str, dict[int, ValueRange]]:
        """Each segment's partition and dimension ranges, for pruning."""
        return {s.segment.id: segment_ranges(s.segment, self.model, self.column_types) for s in self.segments}


@dataclass(frozen=True)
class ProjectMetadata:
    """One read of a project's metadata (`read_metadata`): what planning a statement reads of it."""

    project: str
    default_database: str
    properties: dict[str, str]  # the project's overriding Kylin properties
    tables: dict[str, Table]  # DB.TABLE (upper case) → table
    models: list[ModelMetadata]
    version: int  # the audit log position it was read at
    catalog: Catalog = field(init=False)

    def __post_init__(self) -> None:
        extra = _computed_columns(self.models)
        object.__setattr__(self, "catalog", Catalog.of(self.default_database, self.tables.values(), extra))

    @cached_property
    def computed(self) -> Expressions:
        """The models' computed columns as expressions, for statements on the source tables."""
        return computed_expressions(m.model for m in self.models)

    @cached_property
    def description(self) -> CatalogDescription:
        """The project's catalog as every door lists it (`catalog.description`), described once per read."""
        from precube.query.catalog.description import describe  # (the catalog package imports this module)

        return describe(self)

    @cached_property
    def real_columns(self) -> dict[str, frozenset[str]]:
        """DB.TABLE → the source table's own column names (lower case)."""
        return {name: frozenset(c.name.lower() for c in t.columns) for name, t in self.tables.items()}


def _computed_columns(models: list[ModelMetadata]) -> dict[str, dict[str, str]]:
    """Computed columns are queryable as columns of their fact table (as in Kylin)."""
    extra: dict[str, dict[str, str]] = {}
    for m in models:
        for cc in m.model.computed_columns:
            extra.setdefault(cc.table_identity.upper(), {})[cc.column_name.lower()] = datatypes.to_spark(
                cc.datatype or "double"
            )
    return extra


def _retyped(model: Model, tables: dict[str, Table]) -> tuple[frozenset[int], str]:
    """The columns and measures of computed columns recorded with another type than Spark's, and what to do."""
    retyped = retyped_columns(model, tables)
    if not retyped:
        return frozenset(), ""
    refs = {f"{cc.table_alias}.{cc.column_name}" for cc in model.computed_columns if cc.column_name in retyped}
    what = "; ".join(f"computed column {n} is recorded as {a}, Spark types it {b}" for n, (a, b) in retyped.items())
    return frozenset(reading_columns(model, refs)), (
        f"{what}: the layouts holding it were built with the recorded type. Re-save model {model.alias} to re-type"
        f" it (precube model show, then precube model update) and build the layouts it drops again"
        f" (precube build --add-layouts)"
    )


def read_metadata(store: MetadataStore, project: str) -> ProjectMetadata:
    version = _version(store, project)
    with store.read(project) as tx:
        proj = tx.project()
        tables = {t.identity: t for t in tx.list(Table)}
        models = []
        for model in tx.list(Model):
            dataflow = tx.get(Dataflow, model.uuid)
            plan = tx.get(IndexPlan, model.uuid)
            if dataflow is None or plan is None:
                continue
            segments = []
            for seg in sorted(dataflow.segments, key=lambda s: s.range):
                if seg.status not in QUERYABLE:
                    continue
                details = tx.get(SegmentDetails, model.uuid, seg.id)
                built = {li.layout_id: li for li in details.layout_instances if li.is_ready} if details else {}
                segments.append(SegmentLayouts(seg, built))
            models.append(ModelMetadata(model, plan, dataflow, segments, *_retyped(model, tables)))
    return ProjectMetadata(
        project, proj.default_database, dict(proj.override_kylin_properties), tables, models, version
    )


def _version(store: MetadataStore, project: str) -> int:
    """The audit position of the project's newest change: its documents, or its own (global) document,
    which holds the default database and the properties a query reads."""
    latest = [*store.audit_log(f"/{project}/", 1), *store.audit_log(paths.project_key(project), 1)]
    return max((r.id for r in latest), default=0)


class MetadataReader:
    """The latest metadata of each project, re-read when the project's metadata changed.

    Before each query only the store's change counter is read (microseconds; a reading at most `max_age_s`
    old is reused, see `MetadataStore.last_change`); when it moved, the project's own audit position tells
    whether this project changed."""

    def __init__(self, store: MetadataStore, max_age_s: float = 0.0) -> None:
        self.store, self.max_age_s = store, max_age_s
        self._cached: dict[str, tuple[int, ProjectMetadata]] = {}  # project → (change counter seen, its read)
        self._lock = threading.Lock()

    def known(self, project: str) -> ProjectMetadata | None:
        """The project's metadata when telling that it is current needs no database round trip, else None."""
        seen = self.store.known_change(self.max_age_s)
        cached = self._cached.get(project)
        return cached[1] if seen is not None and cached is not None and cached[0] == seen else None

    def get(self, project: str) -> ProjectMetadata:
        seen = self.store.last_change(self.max_age_s)
        with self._lock:
            cached = self._cached.get(project)
        if cached is not None and cached[0] == seen:
            return cached[1]
        version = _version(self.store, project)
        metadata = (
            cached[1] if cached is not None and cached[1].version == version else read_metadata(self.store, project)
        )
        with self._lock:
            self._cached[project] = (seen, metadata)
        return metadata
