"""Lookup table snapshots (Kylin's lookup snapshots): with each segment it builds, a build records a Parquet
copy of every lookup table of the model (only the model's columns of it), so queries that read lookup tables
alone are answered without the source (`precube.query.lookup_snapshot`).

A snapshot is taken once per state of its source: its directory is keyed by the source's fingerprint and the
columns (`storage.snapshots`), so a build whose lookups have not changed since the last one finds their
snapshots complete and only records them again. Snapshots are taken of local file sources on a local warehouse:
only there can the query path tell, without an engine, whether a snapshot is still current.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from precube.engine.context import BuildContext, ModelState
from precube.engine.source_reads import SourceReads
from precube.engine.storage import written
from precube.metadata import Model, Segment, Table
from precube.metadata.lookup_snapshot import LookupSnapshot
from precube.storage.paths import is_local
from precube.storage.snapshots import is_complete, snapshot_key, snapshot_path, source_fingerprint

SNAPSHOT_WRITERS = 4  # lookup snapshots written at once


def lookup_columns(model: Model, tables: dict[str, Table]) -> dict[str, list[str]]:
    """DB.TABLE of each lookup → the source columns the model names of it (every alias of it, join keys
    included), in the table's order."""
    wanted: dict[str, set[str]] = {}
    live = [c.column.upper() for c in model.live_columns()]
    for jt in model.join_tables:
        alias = jt.alias.upper()
        names = wanted.setdefault(jt.table.upper(), set())
        names.update(ref.split(".", 1)[1] for ref in live if ref.split(".", 1)[0] == alias)
        names.update(ref.split(".", 1)[1].upper() for ref in jt.join.primary_key)
    found = {}
    for identity, names in wanted.items():
        table = tables.get(identity)
        if table is not None:
            found[identity] = [c.name for c in table.columns if c.name in names]
    return {t: cols for t, cols in found.items() if cols}


def take_snapshots(ctx: BuildContext, state: ModelState, reads: SourceReads) -> dict[str, LookupSnapshot]:
    """The current snapshot of each lookup of the model, written now unless a complete one exists (read
    through the build's `reads`); a lookup whose source cannot be fingerprinted, or that changed while it was
    read, gets none."""
    if not is_local(ctx.warehouse_root):
        return {}
    columns = sorted(lookup_columns(state.model, state.tables).items())

    def take(n: int, identity: str, names: list[str]) -> LookupSnapshot | None:
        table = state.tables[identity]
        fingerprint = source_fingerprint(table)
        if fingerprint is None:
            return None
        key = snapshot_key(fingerprint, names)
        path = snapshot_path(ctx.warehouse_root, ctx.project, state.model.uuid, identity, key)
        if not is_complete(path):
            ctx.progress(f"snapshot {identity}", n, len(columns))
            df = reads.table(identity).select(*names)
            df.coalesce(1).write.mode("overwrite").parquet(path)
            if source_fingerprint(table) != fingerprint:  # rewritten while we read it: the copy may mix both
                return None
        return LookupSnapshot(key=key, fingerprint=fingerprint, columns=names, rows=written(ctx.spark, path).rows)

    # a model's first build writes every snapshot: small Spark jobs that mostly wait on scheduling and the
    # file commit, so they run side by side
    with ThreadPoolExecutor(max(1, min(len(columns), SNAPSHOT_WRITERS)), thread_name_prefix="precube-snapshot") as pool:
        taken = list(pool.map(lambda item: take(item[0], *item[1]), enumerate(columns)))
    return {identity: snap for (identity, _), snap in zip(columns, taken, strict=True) if snap is not None}


def newest_snapshots(segments: Iterable[Segment]) -> dict[str, LookupSnapshot]:
    """Per lookup, the newest snapshot the segments record (a merged segment keeps its sources')."""
    found: dict[str, LookupSnapshot] = {}
    for segment in segments:
        for identity, snap in segment.lookup_snapshots.items():
            if identity not in found or snap.create_time > found[identity].create_time:
                found[identity] = snap
    return found
