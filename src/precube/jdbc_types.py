"""Types as Kylin's REST API and JDBC clients name them: a `java.sql.Types` code, a type name, precision and
scale, for a result's Arrow type (`columnMetas`) and for a catalog column's Kylin type name
(`tables_and_columns`, `query.catalog.description`); and a result's values as the strings Kylin answers them with."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from precube_client.jdbc_types import (  # the client's half: a result's types
    BIGINT,
    BINARY,
    BOOLEAN,
    CHAR,
    DATE,
    DECIMAL,
    DOUBLE,
    FLOAT,
    INTEGER,
    OTHER,
    SMALLINT,
    TIMESTAMP,
    TINYINT,
    VARBINARY,
    VARCHAR,
    JdbcType,
)

_BY_NAME: dict[str, JdbcType] = {
    "boolean": JdbcType(BOOLEAN, "BOOLEAN", 1),
    "tinyint": JdbcType(TINYINT, "TINYINT", 3),
    "smallint": JdbcType(SMALLINT, "SMALLINT", 5),
    "int": JdbcType(INTEGER, "INTEGER", 10),
    "integer": JdbcType(INTEGER, "INTEGER", 10),
    "bigint": JdbcType(BIGINT, "BIGINT", 19),
    "long": JdbcType(BIGINT, "BIGINT", 19),
    "float": JdbcType(FLOAT, "FLOAT", 7),
    "real": JdbcType(FLOAT, "FLOAT", 7),
    "double": JdbcType(DOUBLE, "DOUBLE", 15),
    "string": JdbcType(VARCHAR, "VARCHAR", 2147483647),
    "varchar": JdbcType(VARCHAR, "VARCHAR", 2147483647),
    "char": JdbcType(CHAR, "CHAR", 1),
    "date": JdbcType(DATE, "DATE", 10),
    "timestamp": JdbcType(TIMESTAMP, "TIMESTAMP", 29, 9),
    "binary": JdbcType(BINARY, "BINARY", 2147483647),
    "varbinary": JdbcType(VARBINARY, "VARBINARY", 2147483647),
}
_NAME = re.compile(r"\s*([a-z]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


def of_name(datatype: str) -> JdbcType:
    """The JDBC type of a column's Kylin type name (`varchar(256)`, `decimal(15,2)`, `bigint`…)."""
    found = _NAME.match(datatype.lower())
    if found is None:
        return JdbcType(OTHER, datatype.upper(), 0)
    base, first, second = found.group(1), found.group(2), found.group(3)
    if base in ("decimal", "numeric"):
        return JdbcType(DECIMAL, "DECIMAL", int(first or 38), int(second or 0))
    known = _BY_NAME.get(base)
    if known is None:
        return JdbcType(OTHER, base.upper(), 0)
    if first is not None and base in ("varchar", "char", "binary", "varbinary"):
        return JdbcType(known.code, known.name, int(first))
    return known


def text_column(column: pa.ChunkedArray) -> list[str | None]:
    """A result column as Kylin answers it: each value as a string, NULL as null (JSON's)."""
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = t.value_type
    if (pa.types.is_integer(t) or pa.types.is_string(t)) and len(column) <= 4096:
        # the same text as Arrow's cast, without its per-call dispatch (~7 µs a column, most of a small answer)
        return [None if v is None else str(v) for v in column.to_pylist()]
    if pa.types.is_boolean(t):
        return [None if v is None else ("true" if v else "false") for v in column.to_pylist()]
    if pa.types.is_timestamp(t):
        return [None if v is None else v.isoformat(sep=" ") for v in column.to_pylist()]
    import pyarrow.compute as pc  # here: importing it costs a one-shot command ~0.1 s (`precube query`)

    try:
        cast: list[str | None] = pc.cast(column, pa.string()).to_pylist()
        return cast
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return [None if v is None else _text(v) for v in column.to_pylist()]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return "[" + ", ".join("null" if v is None else _text(v) for v in value) + "]"
    return str(value)
