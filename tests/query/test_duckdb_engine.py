"""The DuckDB engine's result fetch: small results of plain types come as tuples made into Arrow here, and
must equal DuckDB's own Arrow export — schema and values — for every type and size."""

from __future__ import annotations

from pathlib import Path

import pytest

from precube.query.duckdb_engine import SMALL_RESULT_ROWS, DuckDBEngine

COLUMNS = (
    "true a, 1::tinyint b, 2::smallint c, 3::integer d, range::bigint e, 4::hugeint f, 1.5::float g, "
    "range * 0.5 h, 'x' || range i, date '2020-01-02' j, timestamp '2020-01-02 03:04:05' k, "
    "1.25::decimal(10,2) l, null::integer m"
)


@pytest.mark.parametrize(
    "sql",
    [
        f"select {COLUMNS} from range(3)",
        f"select {COLUMNS} from range(0)",
        f"select {COLUMNS} from range({SMALL_RESULT_ROWS})",
        f"select {COLUMNS} from range({SMALL_RESULT_ROWS + 1})",
        f"select {COLUMNS} from range(5000)",
        "select [range] a, {'k': range} b from range(4)",  # types the tuple path leaves to DuckDB
        "select [range] a from range(3000)",
    ],
)
def test_fetch_equals_duckdbs_arrow_export(sql: str, tmp_path: Path) -> None:
    engine = DuckDBEngine(str(tmp_path), "p")
    try:
        expected = engine.con.sql(sql).to_arrow_table()
        found = engine._fetch(sql)
        assert found.schema == expected.schema
        assert found.equals(expected)
    finally:
        engine.close()
