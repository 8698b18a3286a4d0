"""Column types: Arrow and Spark types to Kylin's type names, and Kylin names back to Spark DDL.

Kylin names are what the metadata stores (`integer`, `bigint`, `varchar(4096)`, `decimal(15,2)`…),
so documents read like Kylin's and model validation has one vocabulary.
"""

from __future__ import annotations

import re

import pyarrow as pa

STRING = "varchar(4096)"

_SPARK_TO_KYLIN = {
    "string": STRING,
    "int": "integer",
    "integer": "integer",
    "bigint": "bigint",
    "long": "bigint",
    "smallint": "smallint",
    "short": "smallint",
    "tinyint": "tinyint",
    "byte": "tinyint",
    "float": "float",
    "real": "float",
    "double": "double",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp",
    "binary": "binary",
}
_KYLIN_TO_SPARK = {"integer": "int", "varchar": "string", "char": "string", "string": "string"}
_PARAM = re.compile(r"^(\w+)\s*(\(.*\))?$")


def from_arrow(t: pa.DataType) -> str:
    """The Kylin type name of an Arrow type (nested types keep Arrow's spelling)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return STRING
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type)
    simple = {
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "integer",
        pa.int64(): "bigint",
        pa.uint8(): "smallint",
        pa.uint16(): "integer",
        pa.uint32(): "bigint",
        pa.uint64(): "decimal(20,0)",
        pa.float16(): "float",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.date32(): "date",
        pa.date64(): "date",
        pa.binary(): "binary",
        pa.large_binary(): "binary",
    }
    if t in simple:
        return simple[t]
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamp"
    return str(t)


def from_spark(simple_string: str) -> str:
    """The Kylin type name of a Spark type given by its `simpleString()`."""
    s = simple_string.strip().lower()
    if s in _SPARK_TO_KYLIN:
        return _SPARK_TO_KYLIN[s]
    m = _PARAM.match(s)
    if m and m.group(1) in ("decimal", "varchar", "char"):
        return s.replace(" ", "")
    return s


def to_spark(kylin_type: str) -> str:
    """The Spark SQL DDL type for a Kylin type name."""
    m = _PARAM.match(kylin_type.strip().lower())
    if not m:
        return kylin_type
    base = m.group(1)
    if base in _KYLIN_TO_SPARK:
        return _KYLIN_TO_SPARK[base]
    return kylin_type.lower()
