"""Types as Kylin's JDBC driver names them: a `java.sql.Types` code, a type name, precision and scale, for a
result's Arrow type (a DB-API `description`, the server's `columnMetas`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class JdbcType:
    code: int  # java.sql.Types
    name: str
    precision: int
    scale: int = 0


# java.sql.Types codes
BOOLEAN, TINYINT, SMALLINT, INTEGER, BIGINT = 16, -6, 5, 4, -5
FLOAT, DOUBLE, DECIMAL, CHAR, VARCHAR = 6, 8, 3, 1, 12
DATE, TIMESTAMP, BINARY, VARBINARY, ARRAY, OTHER = 91, 93, -2, -3, 2003, 1111

_BY_ARROW: dict[str, JdbcType] = {
    "bool": JdbcType(BOOLEAN, "BOOLEAN", 1),
    "int8": JdbcType(TINYINT, "TINYINT", 3),
    "int16": JdbcType(SMALLINT, "SMALLINT", 5),
    "int32": JdbcType(INTEGER, "INTEGER", 10),
    "int64": JdbcType(BIGINT, "BIGINT", 19),
    "uint8": JdbcType(SMALLINT, "SMALLINT", 5),
    "uint16": JdbcType(INTEGER, "INTEGER", 10),
    "uint32": JdbcType(BIGINT, "BIGINT", 19),
    "uint64": JdbcType(DECIMAL, "DECIMAL", 20),
    "float": JdbcType(FLOAT, "FLOAT", 7),
    "double": JdbcType(DOUBLE, "DOUBLE", 15),
    "string": JdbcType(VARCHAR, "VARCHAR", 2147483647),
    "large_string": JdbcType(VARCHAR, "VARCHAR", 2147483647),
    "string_view": JdbcType(VARCHAR, "VARCHAR", 2147483647),
    "date32[day]": JdbcType(DATE, "DATE", 10),
    "binary": JdbcType(VARBINARY, "VARBINARY", 2147483647),
    "large_binary": JdbcType(VARBINARY, "VARBINARY", 2147483647),
}


def of_arrow(t: pa.DataType) -> JdbcType:
    """The JDBC type of a result column."""
    if pa.types.is_decimal(t):
        return JdbcType(DECIMAL, "DECIMAL", t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return JdbcType(TIMESTAMP, "TIMESTAMP", 29, 9 if t.unit == "ns" else 6 if t.unit == "us" else 3)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return JdbcType(ARRAY, "ARRAY", 0)
    if pa.types.is_dictionary(t):
        return of_arrow(t.value_type)
    return _BY_ARROW.get(str(t), JdbcType(OTHER, "OTHER", 0))
