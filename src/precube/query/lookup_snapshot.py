"""Blocks that read lookup tables alone, answered from the lookup snapshots a build records (Kylin's lookup
table snapshots; `precube.engine.lookup_snapshot` writes them).

A snapshot is the whole source table, restricted to the model's columns of it. A block whose every table has
a current snapshot holding every column the block reads gives the same rows over the snapshots as over the
sources, whatever it does with them (joins of any kind, filters, DISTINCT, aggregates, subqueries): each table
is replaced by its snapshot and nothing else changes. Such a block needs no join proof and no layout.

A snapshot is current when the fingerprint of its source now (`storage.snapshots.source_fingerprint`: the
files' sizes and modification times, the registered columns and read options) equals the one it was taken
at; per table and model, the newest snapshot that the model's queryable segments record is the candidate.
A source that changed since is read by pushdown, with the reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from precube.metadata import Segment, Table, datatypes
from precube.metadata.lookup_snapshot import LookupSnapshot
from precube.query.contexts import QueryContext
from precube.query.frontend import Catalog, spark_sum_types
from precube.query.project_metadata import ModelMetadata, ProjectMetadata
from precube.storage.snapshots import snapshot_path, source_fingerprint


@dataclass(frozen=True)
class SnapshotScan:
    """A relation the engine provides: one lookup snapshot's Parquet files (a scan kind beside `LayoutScan`)."""

    name: str
    table: str  # DB.TABLE of the source
    model_uuid: str
    segment_id: str  # the segment that records it
    path: str  # its directory
    rows: int
    fingerprint: str  # of the source when it was taken
    source: Table = field(compare=False, hash=False, repr=False)
    sort_by: tuple[str, ...] = ()  # as `LayoutScan` (a snapshot's rows are in no useful order)
    pinned: bool = False

    @property
    def types(self) -> tuple[tuple[str, str], ...]:
        """Column → Spark type, as the source's."""
        return tuple((c.name.lower(), datatypes.to_spark(c.datatype)) for c in self.source.columns)

    def current(self) -> bool:
        """Whether the source is still as it was when the snapshot was taken (one directory walk)."""
        return source_fingerprint(self.source) == self.fingerprint


@dataclass(frozen=True)
class TableSnapshot:
    """The snapshot answering one table of a block."""

    alias: str  # the table's query alias
    model: ModelMetadata
    segment: Segment
    snapshot: LookupSnapshot
    source: Table


@dataclass
class SnapshotMatch:
    """A block answered from lookup snapshots: one per table it reads."""

    tables: tuple[TableSnapshot, ...]

    @property
    def model(self) -> ModelMetadata:
        """The model of the first snapshot (a result names one model; the result cache dates the answer by
        every model in `models`)."""
        return self.tables[0].model

    @property
    def models(self) -> list[ModelMetadata]:
        return list({t.model.model.uuid: t.model for t in self.tables}.values())

    def describe(self) -> list[str]:
        return [
            f"{t.source.identity} AS {t.alias}: snapshot {t.snapshot.key} of model {t.model.model.alias} "
            f"(segment {t.segment.name}, {t.snapshot.rows:,} rows)"
            for t in self.tables
        ]


def _newest(m: ModelMetadata, table: str) -> tuple[Segment, LookupSnapshot] | None:
    """The newest snapshot of `table` the model's queryable segments record."""
    found = [(s.segment, s.segment.lookup_snapshots[table]) for s in m.segments if table in s.segment.lookup_snapshots]
    return max(found, key=lambda f: (f[1].create_time, f[0].last_build_time), default=None)


def _read_columns(ctx: QueryContext, alias: str) -> set[str]:
    """The columns of the table `alias` the block reads anywhere (its joins and nested subqueries included: a
    name an inner block reuses only asks for more than needed)."""
    return {c.name.upper() for c in ctx.select.find_all(exp.Column) if c.table == alias}


def match_snapshots(ctx: QueryContext, project: ProjectMetadata) -> SnapshotMatch | list[str]:
    """The snapshots that answer every table of the block, or why those of a table do not (none when a table
    has no snapshot at all: a block over a fact table has nothing to learn from them)."""
    chosen: list[TableSnapshot] = []
    for alias, identity in sorted(ctx.tables.items()):
        source = project.tables.get(identity)
        if source is None:
            return []
        wanted = _read_columns(ctx, alias)
        reasons: list[str] = []
        current: list[str | None] = []  # the source's fingerprint, taken when a snapshot asks for it
        for m in project.models:
            if not m.online:
                continue
            newest = _newest(m, identity)
            if newest is None:
                continue
            segment, snap = newest
            lacking = sorted(wanted - set(snap.columns))
            current = current or [source_fingerprint(source)]
            if current[0] is None or current[0] != snap.fingerprint:
                reasons.append(f"the snapshot of {identity} in model {m.model.alias} is older than its source")
            elif lacking:
                reasons.append(f"the snapshot of {identity} in model {m.model.alias} lacks {', '.join(lacking)}")
            else:
                chosen.append(TableSnapshot(alias, m, segment, snap, source))
                break
        else:
            return reasons
    return SnapshotMatch(tuple(chosen))


def scan_of(found: TableSnapshot, root: str, project: str) -> SnapshotScan:
    model_uuid, identity = found.model.model.uuid, found.source.identity
    digest = hashlib.sha1("/".join((model_uuid, identity, found.snapshot.key)).encode()).hexdigest()[:12]
    return SnapshotScan(
        f"snapshot_{digest}",
        identity,
        model_uuid,
        found.segment.id,
        snapshot_path(root, project, model_uuid, identity, found.snapshot.key),
        found.snapshot.rows,
        found.snapshot.fingerprint,
        found.source,
    )


def rewrite_snapshots(
    ctx: QueryContext, found: SnapshotMatch, root: str, project: str, catalog: Catalog
) -> list[SnapshotScan]:
    """Rewrite the block in place: each of its tables reads its snapshot under the same alias. Its SUMs are
    cast to the type Spark gives them on the source first (as on pushdown: DuckDB sums integers into
    HUGEINT)."""
    select = ctx.select
    spark_sum_types(select, catalog)  # while its tables still name the sources, whose column types it reads
    scans = {t.alias: scan_of(t, root, project) for t in found.tables}
    joined = [select.args["from_"].this, *(j.this for j in select.args.get("joins") or [])]
    for table in joined:
        scan = scans.get(table.alias_or_name) if isinstance(table, exp.Table) else None
        if scan is not None:
            alias = exp.TableAlias(this=exp.to_identifier(table.alias_or_name))
            table.replace(exp.Table(this=exp.to_identifier(scan.name), alias=alias))
    return list({s.name: s for s in scans.values()}.values())  # a table read twice is one relation


def stale_scans(scans: Sequence[object]) -> list[SnapshotScan]:
    """The snapshot scans among `scans` whose source changed since their snapshot (a cached plan made before
    then must not be reused)."""
    return [s for s in scans if isinstance(s, SnapshotScan) and not s.current()]
