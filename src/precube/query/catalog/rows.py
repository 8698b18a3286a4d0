"""The project's catalog as rows: its databases, tables and columns, read from a metadata snapshot (never
from an engine), as the `information_schema` views and the SHOW/DESCRIBE statements show them.

Names are as the metadata stores them (upper case, as Kylin's JDBC driver lists them); a table's columns are
its source columns in order, then the computed columns the project's models define on it (queryable by name,
as in Kylin, though not part of `*`)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from precube.jdbc_types import CHAR, VARCHAR, of_name
from precube.metadata import Table, datatypes
from precube.query.snapshot import ProjectSnapshot


@dataclass(frozen=True)
class ColumnRow:
    """One column of a project table."""

    database: str
    table: str
    name: str
    position: int  # 1-based, as ANSI's ordinal_position
    datatype: str  # the metadata's (Kylin's) type name: varchar(256), decimal(15,2), integer…
    comment: str | None
    expression: str | None = None  # a computed column's expression

    @property
    def spark_type(self) -> str:
        """The type as precube's SQL (Spark's) spells it: `int`, `string`, `decimal(15,2)`."""
        return datatypes.to_spark(self.datatype)


def databases(snapshot: ProjectSnapshot) -> list[str]:
    """The databases holding the project's tables."""
    return sorted({t.database for t in snapshot.tables.values()})


def tables(snapshot: ProjectSnapshot) -> list[Table]:
    return sorted(snapshot.tables.values(), key=lambda t: (t.database, t.name))


def columns(snapshot: ProjectSnapshot, table: Table) -> list[ColumnRow]:
    """The table's columns: its own, then the models' computed columns on it (first definition of a name)."""
    found = [
        ColumnRow(table.database, table.name, c.name, i, c.datatype, c.comment)
        for i, c in enumerate(table.columns, start=1)
    ]
    names = {c.name.upper() for c in found}
    for model in snapshot.models:
        for cc in model.model.computed_columns:
            name = cc.column_name.upper()
            if cc.table_identity.upper() != table.identity or name in names:
                continue
            names.add(name)
            found.append(
                ColumnRow(
                    table.database,
                    table.name,
                    name,
                    len(found) + 1,
                    cc.datatype or "double",
                    cc.comment,
                    cc.expression,
                )
            )
    return found


def all_columns(snapshot: ProjectSnapshot) -> list[ColumnRow]:
    return [c for t in tables(snapshot) for c in columns(snapshot, t)]


# --- the information_schema views (ANSI's and Postgres's column names; types as Spark's SQL spells them) ---

_TEXT, _INT = pa.string(), pa.int32()
SCHEMATA = pa.schema(
    [
        ("catalog_name", _TEXT),
        ("schema_name", _TEXT),
        ("schema_owner", _TEXT),
        ("default_character_set_catalog", _TEXT),
        ("default_character_set_schema", _TEXT),
        ("default_character_set_name", _TEXT),
        ("sql_path", _TEXT),
    ]
)
TABLES = pa.schema(
    [
        ("table_catalog", _TEXT),
        ("table_schema", _TEXT),
        ("table_name", _TEXT),
        ("table_type", _TEXT),
        ("is_insertable_into", _TEXT),
        ("is_typed", _TEXT),
        ("commit_action", _TEXT),
        ("table_comment", _TEXT),  # MySQL's name: the table's comment
    ]
)
COLUMNS = pa.schema(
    [
        ("table_catalog", _TEXT),
        ("table_schema", _TEXT),
        ("table_name", _TEXT),
        ("column_name", _TEXT),
        ("ordinal_position", _INT),
        ("column_default", _TEXT),
        ("is_nullable", _TEXT),
        ("data_type", _TEXT),  # Spark's type name without parameters: INT, STRING, DECIMAL …
        ("full_data_type", _TEXT),  # with them: DECIMAL(15,2)
        ("character_maximum_length", _INT),
        ("character_octet_length", _INT),
        ("numeric_precision", _INT),
        ("numeric_precision_radix", _INT),
        ("numeric_scale", _INT),
        ("datetime_precision", _INT),
        ("is_generated", _TEXT),  # ALWAYS for a model's computed column
        ("generation_expression", _TEXT),
        ("column_comment", _TEXT),
    ]
)
VIEWS: dict[str, pa.Schema] = {"schemata": SCHEMATA, "tables": TABLES, "columns": COLUMNS}


def view_tables(snapshot: ProjectSnapshot) -> dict[str, pa.Table]:
    """Each information_schema view's rows for the project."""
    catalog = snapshot.project
    schemata = [
        {"catalog_name": catalog, "schema_name": db, "default_character_set_name": "UTF8"} for db in databases(snapshot)
    ]
    listed = [
        {
            "table_catalog": catalog,
            "table_schema": t.database,
            "table_name": t.name,
            "table_type": "BASE TABLE",
            "is_insertable_into": "NO",
            "is_typed": "NO",
            "table_comment": t.table_comment,
        }
        for t in tables(snapshot)
    ]
    cols = [_column_view_row(catalog, c) for c in all_columns(snapshot)]
    return {
        "schemata": pa.Table.from_pylist(schemata, schema=SCHEMATA),
        "tables": pa.Table.from_pylist(listed, schema=TABLES),
        "columns": pa.Table.from_pylist(cols, schema=COLUMNS),
    }


def _column_view_row(catalog: str, c: ColumnRow) -> dict[str, object]:
    spark = c.spark_type.upper()
    family = datatypes.family(c.datatype)
    jdbc = of_name(c.datatype)
    text = family is datatypes.TypeFamily.STRING
    numeric = datatypes.is_numeric(c.datatype)
    length = jdbc.precision if text and jdbc.code in (CHAR, VARCHAR) and "(" in c.datatype else None
    return {
        "table_catalog": catalog,
        "table_schema": c.database,
        "table_name": c.table,
        "column_name": c.name,
        "ordinal_position": c.position,
        "is_nullable": "YES",
        "data_type": spark.split("(", 1)[0],
        "full_data_type": spark,
        "character_maximum_length": length,
        "character_octet_length": length * 4 if length is not None else None,  # UTF-8: at most 4 bytes a character
        "numeric_precision": jdbc.precision if numeric else None,
        "numeric_precision_radix": 10 if numeric else None,
        "numeric_scale": jdbc.scale if numeric else None,
        "datetime_precision": {"date": 0, "timestamp": 6}.get(datatypes.base_name(c.datatype)),
        "is_generated": "ALWAYS" if c.expression is not None else "NEVER",
        "generation_expression": c.expression,
        "column_comment": c.comment,
    }
