"""precube's Spark type rule (`modeling.spark_types`) against Spark's own analysis: every arithmetic operator
over every pair of operand kinds and scales, the functions whose type depends on their arguments, and random
nested expressions. The oracle is the type Spark gives the same expression over a view of these columns."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from precube.modeling import spark_types

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

COLUMNS = {
    "d5_2": "decimal(5,2)",
    "d15_2": "decimal(15,2)",
    "d38_10": "decimal(38,10)",
    "d38_0": "decimal(38,0)",
    "d3_1": "decimal(3,1)",
    "d20_18": "decimal(20,18)",
    "d10_0": "decimal(10,0)",
    "d1_1": "decimal(1,1)",
    "ti": "tinyint",
    "si": "smallint",
    "i": "int",
    "l": "bigint",
    "f": "float",
    "dbl": "double",
}
LITERALS = ["0", "7", "-5", "2147483648", "99999999999999999999", "0.5", "100.00", "1.005", "1e3", "NULL"]
OPERANDS = [*COLUMNS, *LITERALS]
OPERATORS = ["+", "-", "*", "/", "%", "div"]
FLOATING = {"f", "dbl", "1e3"}
CHUNK = 400  # expressions Spark analyses in one SELECT


OTHERS = {"dt": "date", "ts": "timestamp", "st": "string"}


@pytest.fixture(scope="module")
def view(spark: SparkSession) -> str:
    columns = ", ".join(f"cast(1 as {t}) as {name}" for name, t in COLUMNS.items())
    others = "date'2020-02-29' as dt, timestamp'2020-02-29 12:34:56.5' as ts, 'text' as st"
    spark.sql(f"create or replace temporary view spark_types_t as select {columns}, {others}")
    return "spark_types_t"


def _ours(expressions: list[str]) -> list[str]:
    schema = {"t": {**COLUMNS, **OTHERS}}
    select = ", ".join(f"{e} as c{i}" for i, e in enumerate(expressions))
    tree = qualify(sqlglot.parse_one(f"select {select} from t", read="spark"), schema=schema, dialect="spark")
    spark_types.annotate(tree, schema)
    assert isinstance(tree, exp.Select)
    return [spark_types.type_name(s.type) if s.type is not None else "?" for s in tree.selects]


def _sparks(spark: SparkSession, view: str, expressions: list[str]) -> Iterator[str]:
    for start in range(0, len(expressions), CHUNK):
        chunk = expressions[start : start + CHUNK]
        select = ", ".join(f"{e} as c{i}" for i, e in enumerate(chunk))
        yield from (f.dataType.simpleString() for f in spark.sql(f"select {select} from {view}").schema.fields)


def _assert_same(spark: SparkSession, view: str, expressions: list[str]) -> None:
    theirs = list(_sparks(spark, view, expressions))
    ours = [t for start in range(0, len(expressions), CHUNK) for t in _ours(expressions[start : start + CHUNK])]
    differ = [f"{e}: Spark {s}, precube {o}" for e, s, o in zip(expressions, theirs, ours, strict=True) if s != o]
    assert not differ, f"{len(differ)} of {len(expressions)} types differ:\n" + "\n".join(differ[:30])


def test_arithmetic_of_every_operand_pair(spark: SparkSession, view: str) -> None:
    expressions = [
        f"({a}) {op} ({b})" if op != "div" else f"{a} div {b}"
        for op in OPERATORS
        for a, b in itertools.product(OPERANDS, OPERANDS)
        if not (a == b == "NULL") and not (op == "div" and {a, b} & FLOATING)  # Spark's div takes no floats
    ]
    _assert_same(spark, view, expressions)


def test_functions_typed_by_their_arguments(spark: SparkSession, view: str) -> None:
    singles = [
        "abs({x})",
        "-({x})",
        "round({x})",
        "round({x}, -1)",
        "round({x}, 1)",
        "round({x}, 3)",
        "bround({x}, 1)",
        "floor({x})",
        "ceil({x})",
        "floor({x}, 1)",
        "ceil({x}, 3)",
        "sign({x})",
        "positive({x})",
    ]
    pairs = [
        "coalesce({x}, {y})",
        "nvl2({x}, {x}, {y})",
        "case when i > 0 then {x} else {y} end",
        "case when i > 0 then {x} when i < 0 then {y} end",
        "if(i > 0, {x}, {y})",
        "greatest({x}, {y})",
        "least({x}, {y}, {x})",
        "pmod({x}, {y})",
    ]
    numbers = [o for o in OPERANDS if o != "NULL"]
    expressions = [s.format(x=x) for s in singles for x in numbers]
    expressions += [p.format(x=x, y=y) for p in pairs for x, y in itertools.product(numbers, OPERANDS)]
    _assert_same(spark, view, expressions)


def test_date_parts_and_other_integer_functions(spark: SparkSession, view: str) -> None:
    parts = ["year", "quarter", "month", "day", "dayofmonth", "dayofweek", "dayofyear", "weekofyear", "weekday"]
    expressions = [f"{p}({c})" for p in parts for c in ("dt", "ts")]
    expressions += [f"extract({u} from ts)" for u in ("year", "month", "day", "hour", "minute", "second", "week")]
    expressions += ["date_part('year', dt)", "date_part('second', ts)", "hour(ts)", "minute(ts)", "second(ts)"]
    expressions += ["length(st)", "datediff(dt, dt)", "instr(st, 'x')", "ascii(st)", "year(dt) * 2", "year(dt) / 4"]
    _assert_same(spark, view, expressions)


def test_date_and_timestamp_functions(spark: SparkSession, view: str) -> None:
    """What a computed date or month column is made of (issue 41: `make_date` was untyped)."""
    expressions = ["make_date(i, i, i)", "make_date(cast(l as int), i, 1)", "make_timestamp(i, i, i, 0, 0, 0)"]
    expressions += [f"date_trunc('MONTH', {c})" for c in ("dt", "ts")] + [f"trunc({c}, 'MM')" for c in ("dt", "ts")]
    expressions += [
        "to_date(st)",
        "to_date(st, 'yyyy-MM-dd')",
        "cast(st as date)",
        "date_add(dt, 1)",
        "date_sub(dt, i)",
    ]
    expressions += ["add_months(dt, 1)", "last_day(dt)", "to_timestamp(st)", "next_day(dt, 'Mon')"]
    _assert_same(spark, view, expressions)


def test_window_functions(spark: SparkSession, view: str) -> None:
    calls = ["row_number()", "rank()", "dense_rank()", "ntile(3)", "percent_rank()", "cume_dist()", "lag(d5_2)"]
    calls += ["sum(d15_2)", "avg(d5_2)", "count(*)", "max(i)", "first_value(dbl)"]
    _assert_same(spark, view, [f"{c} over (partition by st order by i)" for c in calls])


def test_aggregates(spark: SparkSession, view: str) -> None:
    calls = ["sum({x})", "avg({x})", "min({x})", "max({x})", "count({x})", "sum(distinct {x})", "avg({x} * {x})"]
    expressions = [c.format(x=x) for c in calls for x in COLUMNS]
    expressions += ["sum(d15_2) / count(d15_2)", "sum(i) / count(*)", "100.00 * sum(d15_2) / sum(d38_10)"]
    _assert_same(spark, view, expressions)


def _random_expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(OPERANDS[:-1])
    left, right = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    form = rng.choice(["binary", "binary", "binary", "case", "coalesce", "round"])
    if form == "case":
        return f"case when i > 1 then {left} else {right} end"
    if form == "coalesce":
        return f"coalesce({left}, {right})"
    if form == "round":
        return f"round({left}, {rng.choice([-1, 0, 2, 5])})"
    op = rng.choice(["+", "-", "*", "/", "%"])
    return f"({left}) {op} ({right})"


def test_random_nested_expressions(spark: SparkSession, view: str) -> None:
    rng = random.Random(36)
    expressions = [_random_expression(rng, 4) for _ in range(600)]
    _assert_same(spark, view, expressions)
