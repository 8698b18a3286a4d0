"""What `model suggest` measures of a project's file tables with DuckDB: per column a sample's distinct and NULL
counts and range, and how many of one column's distinct values another column holds (a join candidate's key
overlap). Each table is read once into a sample of at most `sample_rows` rows (reservoir, fixed seed); an overlap
looks the sample's values up in the whole of the other column, so a lookup's keys are all seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from precube.metadata import Table, datatypes
from precube.query.duckdb_engine import source_sql  # the pushdown's reading of a file table: the same rows

SAMPLE_SEED = 42


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    datatype: str
    non_null: int  # in the sample
    distinct: int  # of the non-NULL values in the sample
    low: Any
    high: Any

    @property
    def family(self) -> datatypes.TypeFamily:
        return datatypes.family(self.datatype)


@dataclass(frozen=True)
class TableProfile:
    identity: str
    rows: int  # all of the table's rows
    sampled: int  # the rows the column profiles cover
    columns: dict[str, ColumnProfile]

    def unique(self, column: str) -> bool:
        """No NULL and no value twice in the sample."""
        c = self.columns[column]
        return self.sampled > 0 and c.non_null == self.sampled and c.distinct == self.sampled


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Profiler:
    """A DuckDB connection with a view (all rows) and a sample table per project table."""

    def __init__(self, tables: list[Table], sample_rows: int = 100_000) -> None:
        self.con = duckdb.connect()
        self.tables = {t.identity: t for t in tables}
        self.names = {t.identity: f"t{i}" for i, t in enumerate(tables)}
        self.profiles: dict[str, TableProfile] = {}
        for t in tables:
            name = self.names[t.identity]
            self.con.execute(f"CREATE VIEW {name}_all AS {source_sql(t)}")
            self.con.execute(
                f"CREATE TABLE {name} AS SELECT * FROM {name}_all "
                f"USING SAMPLE reservoir({int(sample_rows)} ROWS) REPEATABLE ({SAMPLE_SEED})"
            )
            self.profiles[t.identity] = self._profile(t)

    def _profile(self, table: Table) -> TableProfile:
        name = self.names[table.identity]
        [(rows,)] = self.con.execute(f"SELECT count(*) FROM {name}_all").fetchall()
        parts = ["count(*)"]
        for c in table.columns:
            q = _ident(c.name)
            parts += [f"count({q})", f"count(DISTINCT {q})", f"min({q})", f"max({q})"]
        row = self.con.execute(f"SELECT {', '.join(parts)} FROM {name}").fetchone()
        assert row is not None  # a global aggregate has one row
        columns = {
            c.name: ColumnProfile(c.name, c.datatype, *row[1 + 4 * i : 5 + 4 * i]) for i, c in enumerate(table.columns)
        }
        return TableProfile(table.identity, int(rows), int(row[0]), columns)

    def found(self, left: str, left_columns: list[str], right: str, right_columns: list[str]) -> tuple[int, int]:
        """(distinct non-NULL value tuples of `left_columns` in `left`'s sample, how many of them `right`'s
        `right_columns` hold anywhere); values compared as text when the types differ (a string key and an integer
        one)."""

        def cols(identity: str, names: list[str], other: list[str]) -> str:
            profiles, others = self.profiles[identity].columns, None
            out = []
            for i, n in enumerate(names):
                others = self.profiles[right if identity == left else left].columns[other[i]]
                same = profiles[n].family is others.family
                out.append(f"{_ident(n)}" if same else f"CAST({_ident(n)} AS VARCHAR)")
            return ", ".join(f"{e} AS k{i}" for i, e in enumerate(out))

        lsel, rsel = cols(left, left_columns, right_columns), cols(right, right_columns, left_columns)
        keys = " AND ".join(f"l.k{i} = r.k{i}" for i in range(len(left_columns)))
        not_null = " AND ".join(f"{_ident(n)} IS NOT NULL" for n in left_columns)
        sql = (
            f"SELECT count(*), count(r.k0) FROM (SELECT DISTINCT {lsel} FROM {self.names[left]} WHERE {not_null}) l "
            f"LEFT JOIN (SELECT DISTINCT {rsel} FROM {self.names[right]}_all) r ON {keys}"
        )
        row = self.con.execute(sql).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def unique_together(self, identity: str, columns: list[str]) -> bool:
        """No NULL and no tuple twice among the sample's rows."""
        cols = ", ".join(map(_ident, columns))
        not_null = " AND ".join(f"{_ident(n)} IS NOT NULL" for n in columns)
        name = self.names[identity]
        row = self.con.execute(
            f"SELECT (SELECT count(*) FROM (SELECT DISTINCT {cols} FROM {name} WHERE {not_null})), "
            f"(SELECT count(*) FROM {name})"
        ).fetchone()
        assert row is not None
        return bool(row[0] == row[1] and row[1] > 0)

    def close(self) -> None:
        self.con.close()
