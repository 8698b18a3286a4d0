"""`CommandGetSqlInfo`'s answer: what a Flight SQL client asks about the server before it runs anything (ADBC's
`adbc_get_info`, and the driver's own checks of transactions and cancellation), in the dense-union schema of
`FlightSql.proto`. The numbers are the `SqlInfo` enum's; an id the server does not know is left out, as the
protocol allows."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

# the union's members, in their type-code order (0..5)
_VALUE = pa.dense_union(
    [
        pa.field("string_value", pa.utf8()),
        pa.field("bool_value", pa.bool_()),
        pa.field("bigint_value", pa.int64()),
        pa.field("int32_bitmask", pa.int32()),
        pa.field("string_list", pa.list_(pa.field("item", pa.utf8()))),
        pa.field(
            "int32_to_int32_list_map",
            pa.map_(pa.int32(), pa.list_(pa.field("item", pa.int32()))),
        ),
    ]
)
SCHEMA = pa.schema([pa.field("info_name", pa.uint32(), nullable=False), pa.field("value", _VALUE, nullable=False)])
STRING, BOOL, BIGINT, INT32 = 0, 1, 2, 3

# SqlInfo ids
SERVER_NAME, SERVER_VERSION, SERVER_ARROW_VERSION, SERVER_READ_ONLY, SERVER_SQL, SERVER_SUBSTRAIT = 0, 1, 2, 3, 4, 5
SERVER_TRANSACTION, SERVER_CANCEL, STATEMENT_TIMEOUT = 8, 9, 100
DDL_CATALOG, DDL_SCHEMA, DDL_TABLE, IDENTIFIER_CASE, IDENTIFIER_QUOTE_CHAR = 500, 501, 502, 503, 504
QUOTED_IDENTIFIER_CASE, NULL_ORDERING, SCHEMA_TERM, CATALOG_TERM = 505, 507, 529, 531
CASE_INSENSITIVE, NULLS_SORTED_AT_START, TRANSACTION_NONE = 1, 2, 0


def server_info(version: str, timeout_s: float) -> dict[int, tuple[int, object]]:
    """Each id's (union member, value)."""
    return {
        SERVER_NAME: (STRING, "precube"),
        SERVER_VERSION: (STRING, version),
        SERVER_ARROW_VERSION: (STRING, pa.__version__),
        SERVER_READ_ONLY: (BOOL, True),
        SERVER_SQL: (BOOL, True),
        SERVER_SUBSTRAIT: (BOOL, False),
        SERVER_TRANSACTION: (INT32, TRANSACTION_NONE),
        SERVER_CANCEL: (BOOL, True),
        STATEMENT_TIMEOUT: (INT32, int(timeout_s * 1000)),  # [query] timeout_s: every statement's bound
        DDL_CATALOG: (BOOL, False),
        DDL_SCHEMA: (BOOL, False),
        DDL_TABLE: (BOOL, False),
        IDENTIFIER_CASE: (INT32, CASE_INSENSITIVE),  # names are upper-cased, compared in any case (Kylin's)
        IDENTIFIER_QUOTE_CHAR: (STRING, "`"),  # Spark SQL's
        QUOTED_IDENTIFIER_CASE: (INT32, CASE_INSENSITIVE),
        NULL_ORDERING: (INT32, NULLS_SORTED_AT_START),  # Spark's: NULLs first ascending
        SCHEMA_TERM: (STRING, "database"),  # Kylin's word for a table's schema
        CATALOG_TERM: (STRING, "project"),
    }


def answer(known: dict[int, tuple[int, object]], wanted: Iterable[int]) -> pa.Table:
    """The rows of the ids wanted (none named: all), in the order asked."""
    ids = list(wanted) or sorted(known)
    rows = [(i, *known[i]) for i in ids if i in known]
    codes = pa.array([kind for _, kind, _ in rows], pa.int8())
    offsets: list[int] = []
    children: list[list[object]] = [[] for _ in _VALUE]
    for _, kind, value in rows:
        offsets.append(len(children[kind]))
        children[kind].append(value)
    arrays = [pa.array(values, type=field.type) for values, field in zip(children, _VALUE, strict=True)]
    value = pa.UnionArray.from_dense(
        codes, pa.array(offsets, pa.int32()), arrays, [f.name for f in _VALUE], list(range(len(arrays)))
    )
    return pa.Table.from_arrays([pa.array([i for i, _, _ in rows], pa.uint32()), value], schema=SCHEMA)
