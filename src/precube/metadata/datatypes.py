"""Column type names as the metadata stores them (Kylin's vocabulary) and their families.

`integer`, `bigint`, `varchar(4096)`, `decimal(15,2)`, `date`, `timestamp`… Spark/SQL spellings are
normalized to these; `family()` groups them for compatibility checks (join keys, reloads).
"""

from __future__ import annotations

import re
from enum import StrEnum

STRING = "varchar(4096)"

_ALIASES = {
    "string": STRING,
    "text": STRING,
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
    "double precision": "double",
    "boolean": "boolean",
    "bool": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "timestamp_ntz": "timestamp",
    "timestamp_ltz": "timestamp",
    "datetime": "timestamp",
    "binary": "binary",
}
_TO_SPARK = {"integer": "int", "varchar": "string", "char": "string", "string": "string"}
_PARAM = re.compile(r"^([a-z_ ]+?)\s*(\(\s*\d+\s*(?:,\s*\d+\s*)?\))?$")


class TypeFamily(StrEnum):
    INTEGER = "integer"
    DECIMAL = "decimal"  # exact with scale
    FLOAT = "float"
    STRING = "string"
    DATE = "date"
    TIMESTAMP = "timestamp"
    BOOLEAN = "boolean"
    OTHER = "other"


def normalize(type_name: str) -> str:
    """The Kylin name of a Spark/SQL type name (`INT` → `integer`, `STRING` → `varchar(4096)`)."""
    s = type_name.strip().lower()
    if s in _ALIASES:
        return _ALIASES[s]
    m = _PARAM.match(s)
    if m and m.group(1).strip() in ("decimal", "numeric", "varchar", "char"):
        base = "decimal" if m.group(1).strip() == "numeric" else m.group(1).strip()
        return base + (m.group(2) or "").replace(" ", "")
    return s


def base_name(type_name: str) -> str:
    return normalize(type_name).split("(", 1)[0]


def family(type_name: str) -> TypeFamily:
    base = base_name(type_name)
    if base in ("tinyint", "smallint", "integer", "bigint"):
        return TypeFamily.INTEGER
    if base == "decimal":
        return (
            TypeFamily.DECIMAL
            if "," in type_name and not type_name.replace(" ", "").endswith(",0)")
            else (TypeFamily.INTEGER)
        )
    if base in ("float", "double"):
        return TypeFamily.FLOAT
    if base in ("varchar", "char", "string"):
        return TypeFamily.STRING
    if base in ("date", "timestamp", "boolean"):
        return TypeFamily(base)
    return TypeFamily.OTHER


def is_numeric(type_name: str) -> bool:
    return family(type_name) in (TypeFamily.INTEGER, TypeFamily.DECIMAL, TypeFamily.FLOAT)


def comparable(a: str, b: str) -> bool:
    """Whether values of the two types can be equi-joined without a surprise (numbers with numbers…)."""
    fa, fb = family(a), family(b)
    numeric = (TypeFamily.INTEGER, TypeFamily.DECIMAL, TypeFamily.FLOAT)
    return fa == fb or (fa in numeric and fb in numeric)


_NUMBERS = (TypeFamily.INTEGER, TypeFamily.DECIMAL, TypeFamily.FLOAT, TypeFamily.BOOLEAN)
_CASTS = {
    **{f: {*_NUMBERS, TypeFamily.TIMESTAMP} for f in _NUMBERS},
    TypeFamily.DATE: {TypeFamily.DATE, TypeFamily.TIMESTAMP},
    TypeFamily.TIMESTAMP: {TypeFamily.DATE, TypeFamily.TIMESTAMP, TypeFamily.INTEGER, TypeFamily.DECIMAL},
}


def castable(source: str, target: str) -> bool:
    """Whether Spark's CAST turns values of type `source` into `target` values (not always NULL: a date is no
    number, a number no date): anything to a string and back, numbers among themselves and to timestamps
    (seconds since the epoch), dates and timestamps either way."""
    fs, ft = family(source), family(target)
    if TypeFamily.OTHER in (fs, ft):
        return normalize(source) == normalize(target)
    return TypeFamily.STRING in (fs, ft) or ft in _CASTS.get(fs, {fs})


def to_spark(type_name: str) -> str:
    """The Spark SQL DDL spelling of a Kylin type name."""
    normalized = normalize(type_name)
    base = normalized.split("(", 1)[0]
    return _TO_SPARK.get(base, normalized)
