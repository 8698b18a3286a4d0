"""The oracle of the query tests: each case's SQL run by DuckDB on the raw SSB Parquet files, and the
comparison of precube's answer with it.

Independent of precube's query code: only the dialect (`DIALECT`) comes from there, to transpile the
case SQL to DuckDB with sqlglot.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from precube.query.frontend import DIALECT
from precube.ssb.generate import TABLES

DEFAULT_TOLERANCE = 1e-9
SHOWN_ROWS = 5  # differing rows shown in a failure message

Answer = Literal["layout", "snapshot", "pushdown"]


@dataclass(frozen=True)
class Case:
    """One case file, `cases/NAME.sql`: comment headers, then one query.

    -- what the case checks, one line
    -- answer: layout | snapshot | pushdown   how precube must answer it (snapshot: lookup snapshots only)
    -- order: exact                optional: the ORDER BY (on unique keys) fixes the row order
    -- tolerance: 0.05             optional: relative tolerance for numbers (approximate measures)
    -- types: loose                optional: DECIMAL and DOUBLE columns may differ
    -- rows: none                  optional: the answer is empty (otherwise it must not be)
    select ...
    """

    name: str
    description: str
    answer: Answer
    ordered: bool  # `-- order: exact`: compare rows in order
    tolerance: float  # relative, for numbers
    loose_types: bool  # `-- types: loose`: DECIMAL and DOUBLE may differ
    empty: bool  # `-- rows: none`: the case is about an empty result
    sql: str


_HEADER = re.compile(r"--\s*(answer|order|tolerance|types|rows)\s*:\s*(\S+)\s*$")


def load_case(path: Path) -> Case:
    """Parse a case file; a malformed header is an error naming the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    headers: dict[str, str] = {}
    description = ""
    body: list[str] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("--"):
            body = lines[i:]
            break
        found = _HEADER.match(stripped)
        if found:
            headers[found.group(1)] = found.group(2).lower()
        elif not description:
            description = stripped.removeprefix("--").strip()
        else:
            raise ValueError(f"{path.name}: unknown header {stripped!r}")
    sql = "\n".join(body).strip().rstrip(";")
    answer = headers.get("answer")
    if answer not in ("layout", "snapshot", "pushdown") or not description or not sql:
        raise ValueError(f"{path.name}: needs a description line, `-- answer: layout|snapshot|pushdown` and a query")
    for key, allowed in {"order": "exact", "types": "loose", "rows": "none"}.items():
        if key in headers and headers[key] != allowed:
            raise ValueError(f"{path.name}: `-- {key}:` takes only {allowed}")
    return Case(
        name=path.stem,
        description=description,
        answer=answer,  # type: ignore[arg-type]  # checked above
        ordered="order" in headers,
        tolerance=float(headers.get("tolerance", DEFAULT_TOLERANCE)),
        loose_types="types" in headers,
        empty="rows" in headers,
        sql=sql,
    )


def _spark_meaning(node: exp.Expr) -> exp.Expr:
    """Spark's meaning of a call that sqlglot's DuckDB output changes, written out independently of
    precube's engine: PERCENTILE and MEDIAN interpolate (DuckDB's QUANTILE, sqlglot's output for
    PERCENTILE, is discrete) and return DOUBLE. Approximate calls become exact ones, so that a case's
    tolerance measures precube's error alone: COUNT DISTINCT, and PERCENTILE_APPROX as the discrete
    quantile (Spark's is the smallest value with at least the given fraction of values at or below it)."""
    if isinstance(node, exp.ApproxDistinct):
        return exp.Count(this=exp.Distinct(expressions=[node.this]))
    if isinstance(node, (exp.Quantile, exp.Median, exp.ApproxQuantile)):
        q = node.args.get("quantile") or exp.Literal.number(0.5)
        exact = not isinstance(node, exp.ApproxQuantile)
        return exp.Anonymous(this="quantile_cont" if exact else "quantile_disc", expressions=[node.this, q])
    return node


def _as_double(tree: exp.Expr) -> exp.Expr:
    """Each QUANTILE_CONT (with its FILTER and OVER) cast to DOUBLE, as Spark's PERCENTILE returns."""
    for call in list(tree.find_all(exp.Anonymous)):
        if call.name.lower() != "quantile_cont":
            continue
        whole: exp.Expr = call
        while isinstance(whole.parent, (exp.Filter, exp.Window)):
            whole = whole.parent
        array = isinstance(call.expressions[1], exp.Array)
        whole.replace(exp.cast(whole.copy(), "double[]" if array else "double"))
    return tree


def to_duckdb(sql: str) -> str:
    """The case SQL (precube's dialect) in DuckDB's, with Spark's meaning (`_spark_meaning`)."""
    [tree] = sqlglot.parse(sql, read=DIALECT)
    assert tree is not None
    return _as_double(tree.transform(_spark_meaning)).sql(dialect="duckdb")


class Oracle:
    """DuckDB over the raw SSB files: schema `ssb` (also the default) with one view per table."""

    def __init__(self, ssb_dir: Path) -> None:
        self.con = duckdb.connect()
        self.con.execute("CREATE SCHEMA ssb")
        for table in TABLES:
            files = str(ssb_dir / table / "*.parquet").replace("'", "''")
            self.con.execute(f"CREATE VIEW ssb.{table.lower()} AS SELECT * FROM read_parquet('{files}')")
        self.con.execute("USE ssb")

    def run(self, sql: str) -> pa.Table:
        return self.con.sql(to_duckdb(sql)).to_arrow_table()

    def close(self) -> None:
        self.con.close()


# --- comparison ------------------------------------------------------------------------------------


def kind(datatype: pa.DataType, loose: bool = False) -> str:
    """What a column holds, as far as a user cares: integer, floating, decimal, string, date, …; a
    DECIMAL of scale 0 is an integer (DuckDB sums BIGINT into HUGEINT, which reaches Arrow so)."""
    if pa.types.is_boolean(datatype):
        return "bool"
    if pa.types.is_integer(datatype) or (pa.types.is_decimal(datatype) and datatype.scale == 0):
        return "integer"
    if pa.types.is_floating(datatype) or pa.types.is_decimal(datatype):
        if loose:
            return "fractional"
        return "floating" if pa.types.is_floating(datatype) else "decimal"
    if pa.types.is_string(datatype) or pa.types.is_large_string(datatype) or pa.types.is_string_view(datatype):
        return "string"
    if pa.types.is_date(datatype):
        return "date"
    if pa.types.is_timestamp(datatype):
        return "timestamp"
    return str(datatype)


def _is_number(v: object) -> bool:
    return isinstance(v, int | float | Decimal) and not isinstance(v, bool)


def _is_integral(v: object) -> bool:
    return isinstance(v, int) or (isinstance(v, Decimal) and v.is_finite() and v == v.to_integral_value())


def same_value(a: object, b: object, tolerance: float) -> bool:
    """Numbers compare numerically: integers exactly unless the case gives a tolerance, else within the
    relative tolerance; everything else (dates, strings, None) exactly and of the same type."""
    if a is None or b is None:
        return a is None and b is None
    if _is_number(a) and _is_number(b):
        if tolerance == DEFAULT_TOLERANCE and _is_integral(a) and _is_integral(b):
            return Decimal(a) == Decimal(b)  # type: ignore[arg-type]
        return math.isclose(float(a), float(b), rel_tol=tolerance, abs_tol=1e-12)  # type: ignore[arg-type]
    return type(a) is type(b) and a == b  # a date is no datetime, a string no number


def same_row(a: Sequence[Any], b: Sequence[Any], tolerance: float) -> bool:
    return len(a) == len(b) and all(same_value(x, y, tolerance) for x, y in zip(a, b, strict=True))


def _sort_key(row: Sequence[Any]) -> tuple[tuple[int, Any], ...]:
    def key(v: object) -> tuple[int, Any]:
        if v is None:
            return (0, 0)
        if _is_number(v):
            return (1, float(f"{float(v):.6g}"))  # type: ignore[arg-type]
        if isinstance(v, date):
            return (2, v.isoformat())
        return (3, str(v))

    return tuple(key(v) for v in row)


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(zip(*columns, strict=True)) if columns else []


def _unmatched(
    expected: list[tuple[Any, ...]], actual: list[tuple[Any, ...]], tolerance: float
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Rows of each side without a partner on the other (a multiset match, first fit)."""
    left = list(actual)
    missing = []
    for row in expected:
        found = next((i for i, other in enumerate(left) if same_row(row, other, tolerance)), None)
        if found is None:
            missing.append(row)
        else:
            left.pop(found)
    return missing, left


def _names_differ(expected: pa.Table, actual: pa.Table) -> list[str]:
    """Output names that differ where the oracle's is a plain name (an alias or a column)."""
    problems = []
    for i, (want, got) in enumerate(zip(expected.column_names, actual.column_names, strict=True)):
        if re.fullmatch(r"[a-z_][a-z0-9_]*", want.lower()) and want.lower() != got:
            problems.append(f"column {i + 1} is named {got!r}, not {want.lower()!r}")
    return problems


def mismatch(case: Case, expected: pa.Table, actual: pa.Table) -> str | None:
    """Why precube's `actual` is not the oracle's `expected` (a message showing the SQL, the first
    differing rows and both schemas), or None when they agree."""
    problems: list[str] = []
    if expected.num_columns != actual.num_columns:
        problems.append(f"{actual.num_columns} columns, expected {expected.num_columns}")
    else:
        problems += _names_differ(expected, actual)
        for i, (want, got) in enumerate(zip(expected.schema.types, actual.schema.types, strict=True)):
            if kind(want, case.loose_types) != kind(got, case.loose_types):
                name = expected.column_names[i]
                problems.append(f"column {i + 1} ({name}) is {kind(got)} ({got}), expected {kind(want)} ({want})")
        want_rows, got_rows = _rows(expected), _rows(actual)
        if len(want_rows) != len(got_rows):
            problems.append(f"{len(got_rows)} rows, expected {len(want_rows)}")
        if case.ordered:
            diffs = [
                f"  row {i + 1}: expected {w!r}\n  {' ' * len(str(i + 1))}       got {g!r}"
                for i, (w, g) in enumerate(zip(want_rows, got_rows, strict=False))
                if not same_row(w, g, case.tolerance)
            ]
            if diffs:
                problems.append("rows differ (in order):\n" + "\n".join(diffs[:SHOWN_ROWS]))
            extra = got_rows[len(want_rows) :] or want_rows[len(got_rows) :]
            if extra:
                side = "unexpected" if len(got_rows) > len(want_rows) else "missing"
                problems.append(f"{side} rows at the end:\n" + "\n".join(f"  {r!r}" for r in extra[:SHOWN_ROWS]))
        else:
            want_sorted, got_sorted = sorted(want_rows, key=_sort_key), sorted(got_rows, key=_sort_key)
            if len(want_sorted) != len(got_sorted) or not all(
                same_row(w, g, case.tolerance) for w, g in zip(want_sorted, got_sorted, strict=True)
            ):
                missing, unexpected = _unmatched(want_sorted, got_sorted, case.tolerance)
                if missing:
                    problems.append("missing rows:\n" + "\n".join(f"  {r!r}" for r in missing[:SHOWN_ROWS]))
                if unexpected:
                    problems.append("unexpected rows:\n" + "\n".join(f"  {r!r}" for r in unexpected[:SHOWN_ROWS]))
    if not problems:
        return None
    return (
        f"case {case.name}: precube's answer differs from the oracle's\n"
        f"SQL:\n{case.sql}\n"
        + "\n".join(problems)
        + f"\noracle schema:\n{expected.schema}\nprecube schema:\n{actual.schema}"
    )


def assert_same(case: Case, expected: pa.Table, actual: pa.Table) -> None:
    message = mismatch(case, expected, actual)
    assert message is None, message
