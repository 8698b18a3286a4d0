"""Flight SQL's catalog answers as Arrow tables, in the schemas `FlightSql.proto` fixes: the catalogs (precube's
projects), their schemas (the databases of the project's tables), the tables (with their Arrow schema on request,
computed columns included, as every door lists them: `query.catalog.description`), the table types and the
server's `SqlInfo`.

Catalog and schema filters: a catalog given names the project exactly; the schema and table filter patterns are
SQL LIKE patterns (`%`, `_`, `\\` escaping), matched case-sensitively as Flight SQL defines them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache

import pyarrow as pa

from precube.metadata import datatypes
from precube.query.catalog.description import CatalogDescription, ColumnDescription, TableDescription

CATALOGS = pa.schema([pa.field("catalog_name", pa.utf8(), nullable=False)])
DB_SCHEMAS = pa.schema([("catalog_name", pa.utf8()), pa.field("db_schema_name", pa.utf8(), nullable=False)])
TABLES = pa.schema(
    [
        ("catalog_name", pa.utf8()),
        ("db_schema_name", pa.utf8()),
        pa.field("table_name", pa.utf8(), nullable=False),
        pa.field("table_type", pa.utf8(), nullable=False),
    ]
)
TABLES_WITH_SCHEMA = TABLES.append(pa.field("table_schema", pa.binary(), nullable=False))
TABLE_TYPES = pa.schema([pa.field("table_type", pa.utf8(), nullable=False)])
TABLE_TYPE = "TABLE"  # precube has no views
PRIMARY_KEYS = pa.schema(
    [
        ("catalog_name", pa.utf8()),
        ("db_schema_name", pa.utf8()),
        pa.field("table_name", pa.utf8(), nullable=False),
        pa.field("column_name", pa.utf8(), nullable=False),
        ("key_name", pa.utf8()),
        pa.field("key_sequence", pa.int32(), nullable=False),
    ]
)
_NAMES = [
    (f"{side}_{part}", part.endswith("table_name") or part.endswith("column_name"))
    for side in ("pk", "fk")
    for part in ("catalog_name", "db_schema_name", "table_name", "column_name")
]
FOREIGN_KEYS = pa.schema(  # CommandGetExportedKeys' and CommandGetImportedKeys'
    [pa.field(name, pa.utf8(), nullable=not required) for name, required in _NAMES]
    + [
        pa.field("key_sequence", pa.int32(), nullable=False),
        ("fk_key_name", pa.utf8()),
        ("pk_key_name", pa.utf8()),
        pa.field("update_rule", pa.uint8(), nullable=False),
        pa.field("delete_rule", pa.uint8(), nullable=False),
    ]
)

TYPE_NAME = b"ARROW:FLIGHT:SQL:TYPE_NAME"  # the metadata keys Flight SQL reads on a table's columns
PRECISION, SCALE = b"ARROW:FLIGHT:SQL:PRECISION", b"ARROW:FLIGHT:SQL:SCALE"
COMPUTED = b"precube:computed"  # a model's computed column ("1"): queryable by name, not part of `*`

_SIMPLE: dict[str, pa.DataType] = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "binary": pa.binary(),
    "varchar": pa.utf8(),
    "char": pa.utf8(),
    "string": pa.utf8(),
}
_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")


def catalogs(projects: Iterable[str]) -> pa.Table:
    return pa.table({"catalog_name": sorted(projects)}, schema=CATALOGS)


def db_schemas(described: Sequence[CatalogDescription], pattern: str | None) -> pa.Table:
    rows = [(d.project, s) for d in described for s in d.schemas if _like(pattern, s)]
    return _rows(sorted(rows), DB_SCHEMAS)


def tables(
    described: Sequence[CatalogDescription],
    schema_pattern: str | None,
    table_pattern: str | None,
    types: Sequence[str],
    include_schema: bool,
) -> pa.Table:
    found = [
        (d.project, t)
        for d in described
        for t in d.tables
        if _like(schema_pattern, t.schema) and _like(table_pattern, t.name) and (not types or t.kind in types)
    ]
    found.sort(key=lambda pt: (pt[0], pt[1].schema, pt[1].name))
    rows: list[tuple[object, ...]] = [(p, t.schema, t.name, t.kind) for p, t in found]
    if not include_schema:
        return _rows(rows, TABLES)
    with_schema = [(*row, table_schema(t).serialize().to_pybytes()) for row, (p, t) in zip(rows, found, strict=True)]
    return _rows(with_schema, TABLES_WITH_SCHEMA)


def table_types() -> pa.Table:
    return pa.table({"table_type": [TABLE_TYPE]}, schema=TABLE_TYPES)


def table_schema(table: TableDescription) -> pa.Schema:
    """The table's columns as an Arrow schema: each column's type as answers carry it, its type name (Kylin's)
    in Flight SQL's metadata, computed columns marked."""
    return pa.schema([_field(c) for c in table.columns])


def _field(column: ColumnDescription) -> pa.Field:
    metadata = {TYPE_NAME: column.datatype.encode()}
    metadata[PRECISION], metadata[SCALE] = str(column.jdbc.precision).encode(), str(column.jdbc.scale).encode()
    if column.computed:
        metadata[COMPUTED] = b"1"
    return pa.field(column.name, arrow_type(column.datatype), nullable=column.nullable, metadata=metadata)


def arrow_type(datatype: str) -> pa.DataType:
    """The Arrow type of a column of this Kylin type in an answer (an unknown one: a string)."""
    normalized = datatypes.normalize(datatype)
    if decimal := _DECIMAL.fullmatch(normalized):
        return pa.decimal128(int(decimal.group(1)), int(decimal.group(2)))
    return _SIMPLE.get(normalized.split("(", 1)[0], pa.utf8())


def _rows(rows: Sequence[tuple[object, ...]], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)], schema=schema)


def _like(pattern: str | None, value: str) -> bool:
    return pattern is None or _like_regex(pattern).fullmatch(value) is not None


@cache
def _like_regex(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)
