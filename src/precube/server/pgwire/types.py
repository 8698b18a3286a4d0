"""PostgreSQL's types as the wire front end names them: the type OIDs a client reads in a RowDescription, for
a result's Arrow type and for a source column's Kylin type name (the catalog's `pg_attribute`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from precube.jdbc_types import of_name


@dataclass(frozen=True)
class PgType:
    oid: int
    name: str  # pg_type.typname
    size: int  # pg_type.typlen: bytes of a value, -1 when variable
    array_oid: int  # the type of an array of it (pg_type.typarray)
    sql_name: str  # what format_type() and information_schema call it


BOOL = PgType(16, "bool", 1, 1000, "boolean")
BYTEA = PgType(17, "bytea", -1, 1001, "bytea")
CHAR = PgType(18, "char", 1, 1002, '"char"')
NAME = PgType(19, "name", 64, 1003, "name")
INT8 = PgType(20, "int8", 8, 1016, "bigint")
INT2 = PgType(21, "int2", 2, 1005, "smallint")
INT4 = PgType(23, "int4", 4, 1007, "integer")
TEXT = PgType(25, "text", -1, 1009, "text")
OID = PgType(26, "oid", 4, 1028, "oid")
JSON = PgType(114, "json", -1, 199, "json")
FLOAT4 = PgType(700, "float4", 4, 1021, "real")
FLOAT8 = PgType(701, "float8", 8, 1022, "double precision")
UNKNOWN = PgType(705, "unknown", -2, 0, "unknown")
BPCHAR = PgType(1042, "bpchar", -1, 1014, "character")
VARCHAR = PgType(1043, "varchar", -1, 1015, "character varying")
DATE = PgType(1082, "date", 4, 1182, "date")
TIME = PgType(1083, "time", 8, 1183, "time without time zone")
TIMESTAMP = PgType(1114, "timestamp", 8, 1115, "timestamp without time zone")
TIMESTAMPTZ = PgType(1184, "timestamptz", 8, 1185, "timestamp with time zone")
INTERVAL = PgType(1186, "interval", 16, 1187, "interval")
NUMERIC = PgType(1700, "numeric", -1, 1231, "numeric")
TYPES: tuple[PgType, ...] = (BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID, JSON, FLOAT4, FLOAT8, UNKNOWN)
TYPES += (BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL, NUMERIC)
BY_OID = {t.oid: t for t in TYPES}

_BY_ARROW: dict[str, PgType] = {
    "bool": BOOL,
    "int8": INT2,  # Postgres has no one-byte integer
    "uint8": INT2,
    "int16": INT2,
    "uint16": INT4,
    "int32": INT4,
    "uint32": INT8,
    "int64": INT8,
    "uint64": NUMERIC,
    "halffloat": FLOAT4,
    "float": FLOAT4,
    "double": FLOAT8,
    "string": TEXT,
    "large_string": TEXT,
    "string_view": TEXT,
    "binary": BYTEA,
    "large_binary": BYTEA,
    "binary_view": BYTEA,
    "date32[day]": DATE,
    "date64[ms]": DATE,
}


def array_of(element: PgType) -> PgType:
    """The array type of a scalar type."""
    return PgType(element.array_oid, f"_{element.name}", -1, 0, f"{element.sql_name}[]")


def element_of(t: pa.DataType) -> PgType | None:
    """A list column's element type, when it is a scalar Postgres has an array of (else the list is text)."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or pa.types.is_nested(t.value_type):
        return None
    found = of_arrow(t.value_type)
    return found if found.array_oid else None


def of_arrow(t: pa.DataType) -> PgType:
    """The Postgres type a result column is sent as; anything without one (structs, maps…) is text."""
    if pa.types.is_dictionary(t):
        return of_arrow(t.value_type)
    if (element := element_of(t)) is not None:
        return array_of(element)
    if pa.types.is_decimal(t):
        return NUMERIC
    if pa.types.is_timestamp(t):
        return TIMESTAMPTZ if t.tz is not None else TIMESTAMP
    if pa.types.is_time(t):
        return TIME
    return _BY_ARROW.get(str(t), TEXT)


def typmod(t: pa.DataType) -> int:
    """pg_attribute.atttypmod of a result column: numeric's precision and scale, else -1 (none)."""
    if pa.types.is_decimal(t):
        return int((t.precision << 16) | t.scale) + 4
    return -1


_BY_JDBC = {
    "BOOLEAN": BOOL,
    "TINYINT": INT2,
    "SMALLINT": INT2,
    "INTEGER": INT4,
    "BIGINT": INT8,
    "FLOAT": FLOAT4,
    "DOUBLE": FLOAT8,
    "DECIMAL": NUMERIC,
    "CHAR": BPCHAR,
    "VARCHAR": VARCHAR,
    "DATE": DATE,
    "TIMESTAMP": TIMESTAMP,
    "BINARY": BYTEA,
    "VARBINARY": BYTEA,
}
_STRING = re.compile(r"^\s*string\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ColumnType:
    """A source column's type as the catalog describes it: the type, its modifier and `format_type`'s text."""

    type: PgType
    modifier: int
    formatted: str


def of_datatype(datatype: str) -> ColumnType:
    """The Postgres type of a column's Kylin type name (`varchar(256)`, `decimal(15,2)`, `string`…), by
    the same reading of the name as the REST API's JDBC types (`jdbc_types.of_name`)."""
    if _STRING.match(datatype):
        return ColumnType(TEXT, -1, "text")
    jdbc = of_name(datatype)
    found = _BY_JDBC.get(jdbc.name, TEXT)
    if found is NUMERIC:
        return ColumnType(NUMERIC, ((jdbc.precision << 16) | jdbc.scale) + 4, f"numeric({jdbc.precision},{jdbc.scale})")
    if found in (VARCHAR, BPCHAR) and 0 < jdbc.precision < 10_485_760:
        return ColumnType(found, jdbc.precision + 4, f"{found.sql_name}({jdbc.precision})")
    return ColumnType(found, -1, found.sql_name)
