"""Column types of sources: Arrow and Spark types to the Kylin names of `precube.metadata.datatypes`."""

from __future__ import annotations

import pyarrow as pa

from precube.metadata import datatypes

STRING = datatypes.STRING


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
    return datatypes.normalize(simple_string)


to_spark = datatypes.to_spark
