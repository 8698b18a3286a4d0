"""SQL-level cursors (`DECLARE … CURSOR FOR`, `FETCH`, `MOVE`, `CLOSE`), what psycopg's and psycopg2's named
cursors send. A cursor's answer is computed once, when it is declared (within `[query] max_result_rows` and
`max_result_bytes`, as any answer), and kept by its connection; FETCH and MOVE move over it as PostgreSQL moves
a cursor: its position is 0 before the first row, `n` on the n-th, `rows + 1` after the last."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from precube.server.pgwire.sqlstate import PgError

ALL = -1  # a count of every remaining row

_COUNT = r"(?P<count>[+-]?\d+|ALL)"
_FORMS = [  # (pattern, mode): mode is forward, backward, absolute or relative
    (re.compile(r"^(?:NEXT)?$", re.IGNORECASE), "next"),
    (re.compile(r"^PRIOR$", re.IGNORECASE), "prior"),
    (re.compile(r"^FIRST$", re.IGNORECASE), "first"),
    (re.compile(r"^LAST$", re.IGNORECASE), "last"),
    (re.compile(r"^ABSOLUTE\s+(?P<count>[+-]?\d+)$", re.IGNORECASE), "absolute"),
    (re.compile(r"^RELATIVE\s+(?P<count>[+-]?\d+)$", re.IGNORECASE), "relative"),
    (re.compile(rf"^(?:FORWARD\s+)?{_COUNT}$", re.IGNORECASE), "forward"),
    (re.compile(r"^FORWARD$", re.IGNORECASE), "next"),
    (re.compile(rf"^BACKWARD\s+{_COUNT}$", re.IGNORECASE), "backward"),
    (re.compile(r"^BACKWARD$", re.IGNORECASE), "prior"),
]


@dataclass(frozen=True)
class Direction:
    """Where a FETCH or MOVE goes: `mode` (forward, backward, absolute, relative) and its `count`."""

    mode: str
    count: int

    @classmethod
    def of(cls, text: str) -> Direction:
        words = " ".join(text.split())
        for pattern, mode in _FORMS:
            if found := pattern.match(words):
                given = found.groupdict().get("count")
                count = ALL if given is not None and given.upper() == "ALL" else int(given or 1)
                if mode in ("next", "prior"):
                    return cls("forward" if mode == "next" else "backward", 1)
                if mode in ("first", "last"):
                    return cls("absolute", 1 if mode == "first" else -1)
                if mode in ("forward", "backward") and count < 0 and count != ALL:  # FORWARD -n is BACKWARD n
                    return cls("backward" if mode == "forward" else "forward", -count)
                return cls(mode, count)
        raise PgError("42601", f"cannot parse the SQL: FETCH direction {text[:40]!r} not understood")


@dataclass
class Cursor:
    """One declared cursor: its answer, where it stands, and how it was declared."""

    table: pa.Table
    hold: bool  # WITH HOLD: kept after its transaction ends
    scroll: bool  # NO SCROLL: forward only
    binary: bool  # DECLARE BINARY: FETCH answers in the binary format
    position: int = 0

    def move(self, name: str, direction: Direction) -> tuple[list[int], int]:
        """Move as `direction` says: the row indexes passed over in order (FETCH answers them) and the count
        MOVE's tag gives."""
        total, at = self.table.num_rows, self.position
        mode, count = direction.mode, direction.count
        if mode == "relative":
            mode, count = "absolute", at + count
            if count < 0:
                count = 0
        backward = mode == "backward" or (mode == "absolute" and self._goes_back(count))
        if backward and not self.scroll:
            raise PgError("55000", f'cursor "{name}" can only scan forward (declare it with SCROLL)')
        if mode == "absolute":
            target = count if count >= 0 else total + 1 + count
            self.position = max(0, min(target, total + 1))
            rows = [self.position - 1] if 1 <= self.position <= total else []
            return rows, len(rows)
        if mode == "forward":
            end = total if count == ALL else min(at + count, total)
            rows = list(range(at, end))  # the rows after the current one (0-based: `at` is the next)
            self.position = end if count != ALL and at + count <= total else total + 1
            return rows, len(rows)
        start = 1 if count == ALL else max(at - count, 1)  # backward: the rows before the current one
        rows = list(range(min(at, total + 1) - 2, start - 2, -1))
        self.position = 0 if count == ALL or at - count <= 0 else at - count
        return rows, len(rows)

    def _goes_back(self, target: int) -> bool:
        resolved = target if target >= 0 else self.table.num_rows + 1 + target
        return resolved < self.position

    def rows(self, indexes: list[int]) -> pa.Table:
        """Those rows of the answer, in that order."""
        if indexes and indexes == list(range(indexes[0], indexes[0] + len(indexes))):
            return self.table.slice(indexes[0], len(indexes))
        return self.table.take(pa.array(indexes, pa.int64()))
