"""The range a user's build asks for, as the CLI and the REST API take it: times as people write them,
and the default start of an incremental build (the last segment's end, seed 001 §4.3)."""

from __future__ import annotations

from dataclasses import dataclass

from precube.errors import InvalidInputError, PrecubeError
from precube.metadata import Dataflow, MetadataStore, TimeRange
from precube.modeling.model_store import require_model
from precube.modeling.partition_format import to_epoch_ms
from precube.modeling.segments import default_build_start


def parse_time(value: str) -> int:
    """Epoch ms from `2024-01-31`, `2024-01-31 12:00:00` or a number of milliseconds (UTC)."""
    text = value.strip()
    if text.isdigit() and len(text) > 8:
        return int(text)
    for fmt in ("yyyy-MM-dd", "yyyy-MM-dd HH:mm:ss", "yyyyMMdd"):
        try:
            return to_epoch_ms(text, fmt)
        except PrecubeError:  # not this spelling: try the next one
            continue
    raise InvalidInputError(f"cannot read time {value!r}: use YYYY-MM-DD, 'YYYY-MM-DD HH:MM:SS' or epoch milliseconds")


@dataclass(frozen=True)
class Spelling:
    """How the caller names the start, the end and a full build in its messages."""

    start: str = "--start"
    end: str = "--end"
    full: str = "--full"


CLI = Spelling()
REST = Spelling("start", "end", "no start and end")


def build_range(
    store: MetadataStore, project: str, model: str, start: int | None, end: int | None, spelling: Spelling = CLI
) -> TimeRange | None:
    """The range of the segment to build: None for a full build (a model without partition column), else
    `[start, end)` with `start` defaulting to the end of the last segment."""
    with store.read(project) as tx:
        m = require_model(tx, model)
        segments = tx.require(Dataflow, m.uuid).segments
    if m.partition_desc is None:
        if start is not None or end is not None:
            raise InvalidInputError(f"model {m.alias} has no partition column: build it with {spelling.full}")
        return None
    if end is None:
        raise InvalidInputError(
            f"model {m.alias} is partitioned: give {spelling.end} (and {spelling.start} for the first segment)"
        )
    begin = start if start is not None else default_build_start(segments)
    if begin is None:
        raise InvalidInputError(f"model {m.alias} has no segment yet: give {spelling.start}")
    return TimeRange.of(begin, end)
