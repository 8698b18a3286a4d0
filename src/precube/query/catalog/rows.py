"""The rows of the information_schema views the query session answers, presenting the project's catalog
description (`description`): names as the metadata stores them (upper case, as Kylin's JDBC driver lists them),
types as precube's SQL (Spark's) spells them, a model's computed column as a generated column."""

from __future__ import annotations

import pyarrow as pa

from precube.metadata import datatypes
from precube.query.catalog.description import CatalogDescription, ColumnDescription, TableDescription
from precube_client.jdbc_types import CHAR, VARCHAR

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


def view_tables(description: CatalogDescription) -> dict[str, pa.Table]:
    """Each information_schema view's rows for the project."""
    catalog = description.project
    schemata = [
        {"catalog_name": catalog, "schema_name": db, "default_character_set_name": "UTF8"} for db in description.schemas
    ]
    listed = [
        {
            "table_catalog": catalog,
            "table_schema": t.schema,
            "table_name": t.name,
            "table_type": "BASE TABLE",
            "is_insertable_into": "NO",
            "is_typed": "NO",
            "table_comment": t.comment,
        }
        for t in description.tables
    ]
    cols = [_column_view_row(catalog, t, c) for t, c in description.columns()]
    return {
        "schemata": pa.Table.from_pylist(schemata, schema=SCHEMATA),
        "tables": pa.Table.from_pylist(listed, schema=TABLES),
        "columns": pa.Table.from_pylist(cols, schema=COLUMNS),
    }


def _column_view_row(catalog: str, t: TableDescription, c: ColumnDescription) -> dict[str, object]:
    spark = c.spark_type.upper()
    family = datatypes.family(c.datatype)
    jdbc = c.jdbc
    text = family is datatypes.TypeFamily.STRING
    numeric = datatypes.is_numeric(c.datatype)
    length = jdbc.precision if text and jdbc.code in (CHAR, VARCHAR) and "(" in c.datatype else None
    return {
        "table_catalog": catalog,
        "table_schema": t.schema,
        "table_name": t.name,
        "column_name": c.name,
        "ordinal_position": c.position,
        "is_nullable": "YES" if c.nullable else "NO",
        "data_type": spark.split("(", 1)[0],
        "full_data_type": spark,
        "character_maximum_length": length,
        "character_octet_length": length * 4 if length is not None else None,  # UTF-8: at most 4 bytes a character
        "numeric_precision": jdbc.precision if numeric else None,
        "numeric_precision_radix": 10 if numeric else None,
        "numeric_scale": jdbc.scale if numeric else None,
        "datetime_precision": {"date": 0, "timestamp": 6}.get(datatypes.base_name(c.datatype)),
        "is_generated": "ALWAYS" if c.computed else "NEVER",
        "generation_expression": c.expression,
        "column_comment": c.comment,
    }
