"""The project's tables and columns as Kylin 5 answers `GET /api/query/tables_and_columns` (and the legacy
`GET /api/tables_and_columns`): a plain list of `TableMetaWithType`, each with its `ColumnMetaWithType`s, under
the JSON names Jackson gives their getters (`getTABLE_SCHEM` is `table_SCHEM`: the leading capitals up to the
first `_` lower-cased), which Kylin's clients (kylinpy, the ODBC driver) read. Every table of the project is
listed, computed columns included (the catalog description's); `type` says what the project's models make of a
table (FACT, LOOKUP) and of a column (DIMENSION, MEASURE, PK, FK)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from precube.metadata import Model
from precube.query.catalog.description import CatalogDescription, ColumnDescription, TableDescription

CATALOG = "defaultCatalog"  # Kylin's catalog name
CHARACTER_TYPES = ("VARCHAR", "CHAR")

Roles = dict[tuple[str, str], set[str]]  # (DB.TABLE, COLUMN or "") → its roles in the models


def tables_and_columns(catalog: CatalogDescription, models: Iterable[Model], model: str | None = None) -> list[Any]:
    """Every table of the catalog (only those of the model aliased `model`, when given) as Kylin lists them."""
    chosen = [m for m in models if model is None or m.alias.upper() == model.upper()]
    roles = _roles(chosen)
    tables = catalog.tables
    if model is not None:
        tables = tuple(t for t in tables if (t.identity.upper(), "") in roles)
    return [_table(t, roles) for t in tables]


def _roles(models: Iterable[Model]) -> Roles:
    """What the models make of each table and column, as Kylin's `getMetadataV2` types them."""
    roles: Roles = {}

    def add(table: str, column: str, role: str) -> None:
        roles.setdefault((table.upper(), column.upper()), set()).add(role)

    for m in models:
        tables = {m.root_alias.upper(): m.fact_table} | {j.alias.upper(): j.table for j in m.join_tables}

        def add_ref(ref: str, role: str, tables: dict[str, str] = tables) -> None:
            alias, _, column = ref.partition(".")
            if alias.upper() in tables:
                add(tables[alias.upper()], column, role)

        add(m.fact_table, "", "FACT")
        for join in m.join_tables:
            add(join.table, "", "LOOKUP")
            for ref in join.join.primary_key:
                add_ref(ref, "PK")
            for ref in join.join.foreign_key:
                add_ref(ref, "FK")
        for named in m.dimensions():
            add_ref(named.column, "DIMENSION")
        for measure in m.measures():
            for parameter in measure.function.parameters:
                if parameter.type == "column":
                    add_ref(parameter.value, "MEASURE")
    return roles


def _table(table: TableDescription, roles: Roles) -> dict[str, Any]:
    schema, name = table.schema.upper(), table.name.upper()
    return {
        "table_CAT": CATALOG,
        "table_SCHEM": schema,
        "table_NAME": name,
        "table_TYPE": table.kind,
        "remarks": table.comment,
        "type_CAT": None,
        "type_SCHEM": None,
        "type_NAME": None,
        "self_REFERENCING_COL_NAME": None,
        "ref_GENERATION": None,
        "columns": [_column(schema, name, c, roles) for c in table.columns],
        "type": sorted(roles.get((f"{schema}.{name}", ""), ())),
    }


def _column(schema: str, table: str, column: ColumnDescription, roles: Roles) -> dict[str, Any]:
    t = column.jdbc
    name = column.name.upper()
    return {
        "table_CAT": CATALOG,
        "table_SCHEM": schema,
        "table_NAME": table,
        "column_NAME": name,
        "data_TYPE": t.code,
        "type_NAME": t.name,
        "column_SIZE": t.precision,
        "buffer_LENGTH": -1,
        "decimal_DIGITS": t.scale,
        "num_PREC_RADIX": 10,
        "nullable": 1 if column.nullable else 0,
        "remarks": column.comment,
        "column_DEF": None,
        "sql_DATA_TYPE": -1,
        "sql_DATETIME_SUB": -1,
        "char_OCTET_LENGTH": t.precision if t.name in CHARACTER_TYPES else -1,
        "ordinal_POSITION": column.position,
        "is_NULLABLE": "YES" if column.nullable else "NO",
        "scope_CATLOG": None,
        "scope_SCHEMA": None,
        "scope_TABLE": None,
        "source_DATA_TYPE": -1,
        "is_AUTOINCREMENT": "",  # as Kylin's Calcite metadata says it: unknown
        "type": sorted(roles.get((f"{schema}.{table}", name), ())),
        "fully_QUALIFIED_COLUMN_NAME": None,
    }
