"""Whether a cached answer still holds (checked on read, DESIGN §7).

An entry records, for each model it read, the model and index-plan versions, the queryable segments with
their build times, and the query's filter on that model. On a hit:
- the project's metadata has not moved since the answer was computed → valid (one integer comparison);
- a used model is gone, offline, or its model or index plan changed → stale;
- a segment was built, refreshed or merged since (a new id or a newer build time) and the filter may match
  its partition range, or a segment the filter covered was removed (merge, delete, refresh) → stale.
A query with no filter on the partition column covers the whole, unbounded range: a newly appended segment
invalidates it; one whose partition filter excludes the new segment keeps its hit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import sqlglot
from sqlglot import exp

from precube.cache.entry import Entry, ModelUse
from precube.query.contexts import QueryContext, contexts
from precube.query.frontend import DIALECT, normalise, parse
from precube.query.lookup_snapshot import SnapshotMatch
from precube.query.matching import Match, Probe
from precube.query.matching import probes as probes_of
from precube.query.plan_cache import ContextProbe, Param
from precube.query.project_metadata import ModelMetadata, ProjectMetadata
from precube.query.pruning import ValueRange, may_match


def stale_reason(entry: Entry, metadata: ProjectMetadata) -> str | None:
    """Why `entry` no longer answers its query given the project's current `metadata`; None while it does."""
    if entry.snapshot_version == metadata.version:
        return None
    for use in entry.models:
        m = next((m for m in metadata.models if m.model.uuid == use.uuid), None)
        why = _model_change(use, m)
        if why is not None:
            return why
    return None


def _model_change(use: ModelUse, m: ModelMetadata | None) -> str | None:
    if m is None:
        return f"model {use.alias} was removed"
    if not m.online:
        return f"model {use.alias} is offline"
    if m.model.mvcc != use.model_version:
        return f"model {use.alias} changed"
    if m.plan.mvcc != use.plan_version:
        return f"the index plan of model {use.alias} changed"
    now = {s.segment.id: s.segment.last_build_time for s in m.segments}
    if now == use.segments:
        return None
    condition = None if use.filter is None else sqlglot.parse_one(use.filter, read=DIALECT)
    partition = _partition_column(m)
    for sid, built in now.items():
        if use.segments.get(sid) != built and _covers(condition, partition, m, sid):
            return f"segment {sid} of model {use.alias} was built after the answer"
    covered = set(use.covered)
    gone = next((sid for sid in use.segments if sid not in now and sid in covered), None)
    return None if gone is None else f"segment {gone} of model {use.alias} was removed"


def _partition_column(m: ModelMetadata) -> int | None:
    desc = m.model.partition_desc
    if desc is None:
        return None
    try:
        return m.model.column_by_ref(desc.partition_date_column).id
    except KeyError:
        return None


def _covers(condition: exp.Expr | None, partition: int | None, m: ModelMetadata, segment_id: str) -> bool:
    """Whether the filter may match a row of the segment's partition range (other columns: unknown)."""
    if condition is None or partition is None:
        return True
    found = m.segment_ranges.get(segment_id, {}).get(partition)
    ranges: dict[int, ValueRange] = {} if found is None else {partition: found}

    def range_of(col: exp.Column) -> ValueRange | None:
        name = col.name
        return ranges.get(int(name[1:])) if name[:1] == "c" and name[1:].isdigit() else None

    return may_match(condition, range_of)


def model_uses(
    sql: str,
    matches: Iterable[tuple[int, Match | SnapshotMatch]],
    metadata: ProjectMetadata,
    probes: Sequence[ContextProbe] = (),
    params: tuple[Param, ...] | None = None,
) -> tuple[ModelUse, ...] | None:
    """What validity needs of each model that answered `sql`'s contexts (context index, match), as of
    `metadata` (a block answered from lookup snapshots depends on every segment of their models: a build may
    take new ones); None when a model is not in it (the answer cannot be dated: not cached). The contexts'
    filters come from the plan's `probes` bound to the statement's `params` when given (no parsing: the
    hot path), else from `sql` parsed again."""
    found = list(matches)
    if not found:
        return ()
    models = {m.model.uuid: m for m in metadata.models}
    filters: dict[str, list[exp.Expr | None]] = {}
    blocks = None if params is not None and probes else _blocks(sql, metadata)
    for i, uuid in [(i, m.model.uuid) for i, match in found for m in _models_of(match)]:
        if uuid not in models:
            return None
        if blocks is None:
            kept = probes[i] if i < len(probes) else None
            fitting = [p for p in (kept.probes if kept else []) if p.model.model.uuid == uuid]
            condition = kept.bound(params or ()) if kept is not None and fitting else None
        else:
            ctx = blocks[i] if i < len(blocks) else None
            fitting = probes_of(ctx, [models[uuid]]) if ctx is not None and ctx.filter is not None else []
            condition = ctx.filter if ctx is not None else None
        filters.setdefault(uuid, []).append(_renamed(condition, fitting[0] if fitting else None))
    uses = []
    for uuid, conditions in filters.items():
        m = models[uuid]
        condition = None if any(c is None for c in conditions) else exp.or_(*conditions)
        partition = _partition_column(m)
        uses.append(
            ModelUse(
                uuid=uuid,
                alias=m.model.alias,
                model_version=m.model.mvcc,
                plan_version=m.plan.mvcc,
                segments={s.segment.id: s.segment.last_build_time for s in m.segments},
                covered=tuple(s.segment.id for s in m.segments if _covers(condition, partition, m, s.segment.id)),
                filter=None if condition is None else condition.sql(dialect=DIALECT),
            )
        )
    return tuple(uses)


def _models_of(match: Match | SnapshotMatch) -> list[ModelMetadata]:
    return match.models if isinstance(match, SnapshotMatch) else [match.model]


def _blocks(sql: str, metadata: ProjectMetadata) -> list[QueryContext]:
    try:
        return contexts(normalise(parse(sql), metadata.catalog).copy())
    except Exception:  # noqa: BLE001 (it ran, so it parses; if not, the filter is unknown: the whole range)
        return []


def _renamed(condition: exp.Expr | None, probe: Probe | None) -> exp.Expr | None:
    """A copy of a context's filter with each column of the probe's model written `c<id>`; None (whole range)
    when unknown."""
    if condition is None or probe is None:
        return None

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column):
            cid = probe.columns.column(node)
            return exp.column(f"c{cid}") if cid is not None else exp.column("unknown")
        return node

    return condition.copy().transform(rename)
