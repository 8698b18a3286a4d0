"""chDB (ClickHouse embedded in Python, `pip install chdb`) over the raw SSB Parquet files: the second baseline
of `bench/ssb.py`. Views `ssb.TABLE` with the files' columns in lower case, as the queries name them; LEFT joins
with SQL's NULLs (`join_use_nulls`) so the answers equal DuckDB's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import sqlglot

from precube.query.frontend import DIALECT
from precube.ssb.generate import TABLES

SETTINGS = " SETTINGS join_use_nulls = 1"


class RawChdb:
    """A chDB session whose views read the generated Parquet under `data`."""

    def __init__(self, data: Path) -> None:
        from chdb import session  # imported here: only this baseline needs it

        self.session = session.Session()
        self.session.query("CREATE DATABASE IF NOT EXISTS ssb")
        for name in TABLES:
            columns = pq.read_schema(next(iter(sorted((data / name).glob("*.parquet"))))).names
            select = ", ".join(f"`{c}` AS `{c.lower()}`" for c in columns)
            self.session.query(
                f"CREATE OR REPLACE VIEW ssb.{name.lower()} AS "
                f"SELECT {select} FROM file('{data / name}/*.parquet', Parquet)"
            )

    @staticmethod
    def dialect(sql: str) -> str:
        """A statement in precube's dialect as ClickHouse's."""
        return sqlglot.transpile(sql, read=DIALECT, write="clickhouse")[0] + SETTINGS

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The answer of a statement already in ClickHouse's dialect."""
        table = self.session.query(sql, "ArrowTable")
        return [tuple(row.values()) for row in table.to_pylist()]

    def close(self) -> None:
        self.session.close()
