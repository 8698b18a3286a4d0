"""The cached value: the result table (rows and column types), the query's statistics, and for each model
it used what validity needs — the model and index-plan versions, the segments it could see, and its filter.

Serialized as a small JSON header and the table as an Arrow IPC stream compressed with zstd: large results
are written and read column by column without a per-row cost.
"""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from precube.cache.errors import CacheError

MAGIC = b"PCC1"
_HEAD = struct.Struct("<4sI")  # magic, header length
_WRITE = pa.ipc.IpcWriteOptions(compression="zstd")


@dataclass(frozen=True)
class ModelUse:
    """One model an answer read, as it was when the answer was computed."""

    uuid: str
    alias: str
    model_version: int  # the model document's mvcc: any change (columns, joins, filter) counts
    plan_version: int  # the index plan's mvcc
    segments: dict[str, int]  # queryable segment id → its last_build_time
    covered: tuple[str, ...]  # of those, the ones whose partition range the filter may match
    # The query's filter on this model with columns written `c<model column id>` (Spark SQL): the partition
    # range the answer covers, judged against a changed segment's range on read. None: the whole range.
    filter: str | None = None


@dataclass(frozen=True)
class Entry:
    """One cached answer."""

    table: pa.Table
    cached_ms: int  # epoch ms it was stored
    # the project's metadata position (`ProjectMetadata.version`) the answer is known to be valid at; named as
    # the serialized header names it
    snapshot_version: int
    models: tuple[ModelUse, ...]
    engine: str
    duration_ms: float  # how long the query took when it ran
    scanned_rows: int
    pushdown: bool
    model: str | None
    layout_ids: tuple[int, ...]
    segments: tuple[str, ...]
    pushdown_reason: str | None = None  # why the source tables answered (None: layouts did)
    partial: bool = False  # a window's rows, and the answer had more past them (`QueryResult.partial`)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cells(self) -> int:
        return int(self.table.num_rows) * int(self.table.num_columns)

    @property
    def nbytes(self) -> int:
        """Its memory footprint, roughly (the table's buffers dominate)."""
        size: int = self.table.nbytes
        return size + 512 + sum(64 * len(m.segments) for m in self.models)

    def header(self) -> dict[str, Any]:
        found = asdict(self)
        del found["table"]
        return found


def dumps(entry: Entry) -> bytes:
    """The entry as bytes: magic, header length, JSON header, Arrow IPC stream (zstd)."""
    head = json.dumps(entry.header(), separators=(",", ":")).encode()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, entry.table.schema, options=_WRITE) as writer:
        writer.write_table(entry.table)
    return b"".join((_HEAD.pack(MAGIC, len(head)), head, sink.getvalue().to_pybytes()))


def loads(data: bytes) -> Entry:
    """The entry `dumps` wrote; a `CacheError` when the bytes are not one (another version, corruption)."""
    try:
        magic, size = _HEAD.unpack_from(data)
        if magic != MAGIC:
            raise CacheError(f"not a cache entry (magic {magic!r})")
        head = json.loads(data[_HEAD.size : _HEAD.size + size])
        with pa.ipc.open_stream(pa.py_buffer(data)[_HEAD.size + size :]) as reader:
            table = reader.read_all()
        head["models"] = tuple(ModelUse(**{**m, "covered": tuple(m["covered"])}) for m in head["models"])
        head["layout_ids"], head["segments"] = tuple(head["layout_ids"]), tuple(head["segments"])
        return Entry(table=table, **head)
    except (struct.error, ValueError, TypeError, KeyError, pa.ArrowException) as err:
        raise CacheError(f"unreadable cache entry: {err}") from err
