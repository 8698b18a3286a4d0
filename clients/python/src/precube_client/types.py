"""PEP 249's type objects and constructors, and a result's `cursor.description`.

A column's type code is its JDBC type name (`jdbc_types`, as Kylin's JDBC driver and `columnMetas` name it):
`INTEGER`, `BIGINT`, `DECIMAL`, `DOUBLE`, `VARCHAR`, `DATE`, `TIMESTAMP`, `BOOLEAN`, `VARBINARY`, `ARRAY` …;
it compares equal to the type object of its family (`STRING == "VARCHAR"`)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pyarrow as pa

from precube_client.jdbc_types import of_arrow

Description = tuple[str, str, int | None, int | None, int | None, int | None, bool]


class DBAPITypeObject:
    """Equal to each type code of its family."""

    def __init__(self, *codes: str) -> None:
        self.codes = frozenset(codes)

    def __eq__(self, other: object) -> bool:
        return other in self.codes if isinstance(other, str) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.codes)

    def __repr__(self) -> str:
        return f"DBAPITypeObject{tuple(sorted(self.codes))}"


STRING = DBAPITypeObject("VARCHAR", "CHAR")
BINARY = DBAPITypeObject("VARBINARY", "BINARY")
NUMBER = DBAPITypeObject("BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
DATETIME = DBAPITypeObject("DATE", "TIMESTAMP")
ROWID = DBAPITypeObject()  # precube's tables have no row ids

Date = dt.date
Time = dt.time
Timestamp = dt.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> dt.date:  # noqa: N802 (PEP 249's names)
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> dt.time:  # noqa: N802
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> dt.datetime:  # noqa: N802
    return Timestamp(*time.localtime(ticks)[:6])


def description(schema: pa.Schema) -> list[Description]:
    """PEP 249's 7-tuple per column: name, type code, display size, internal size, precision, scale, null_ok."""
    found: list[Description] = []
    for field in schema:
        t = of_arrow(field.type)
        numeric = t.name == "DECIMAL"
        found.append(
            (
                str(field.name),
                t.name,
                None,
                None,
                t.precision if numeric else None,
                t.scale if numeric else None,
                bool(field.nullable),
            )
        )
    return found


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """The table's rows as tuples of Python values (Decimal, date, datetime, str, bytes, lists)."""
    if table.num_columns == 0:
        return [()] * table.num_rows
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))
