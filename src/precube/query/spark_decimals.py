"""Spark's decimal arithmetic computed by DuckDB, so that an answer has the values and types Spark gives the
same SQL (DuckDB's own: `/` and AVG of decimals are DOUBLE, `div` of decimals is a DOUBLE division, its result
types follow its own widths, and YEAR, EXTRACT, LENGTH… are BIGINT where Spark's are INT).

`in_spark_terms(tree, schema)` annotates a copy of the engine's tree with Spark's types (`modeling.spark_types`;
`schema` types the layouts, snapshots and source tables it reads) and rewrites, where Spark's type is a DECIMAL:

- `a / b` into Spark's division: the quotient rounded half-up to 38 significant digits (Java's `MathContext`
  that Spark's `Decimal` divides with), then to the result's scale, half-up (`decimal_op`, a Python function
  the engine registers; NULL when `b` is 0, as DuckDB's own division gives);
- `a div b` into the truncated exact quotient, a BIGINT;
- AVG(x) into Spark's own (`spark_average`): SUM(x) as DECIMAL(p+10, s) divided by COUNT(x) as DECIMAL(20, 0),
  the quotient rounded half-up to 38 digits, then once to DECIMAL(p+4, s+4) (with its FILTER and OVER); a
  division marked so (a layout's AVG merge) is computed the same way;
- `+ - * %`, negation, ABS, ROUND, FLOOR, CEIL, CASE, IF, COALESCE, NVL2, GREATEST, LEAST and decimal literals
  as outputs into a CAST to Spark's type: DuckDB computes them exactly, and a cast rounds half-up as Spark does
  where Spark's precision loss cuts digits. A product whose exact scale DuckDB cannot hold (over 38) is
  computed by `decimal_op` too;
- a function Spark types INT, SMALLINT or TINYINT into a CAST to that type, one Spark types DATE (DATE_ADD,
  ADD_MONTHS…, a TIMESTAMP in DuckDB) into a CAST to DATE, `div` of integers into a CAST to BIGINT.

Predicates (WHERE, HAVING, join and FILTER conditions) are left as they are: comparing DuckDB's exact values
gives Spark's answer, and their literals stay plain parameters for the plan cache.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.schema import MappingSchema

from precube.metadata import Table, datatypes
from precube.modeling import spark_types
from precube.modeling.spark_types import DecimalType, decimal_of

DECIMAL_OP = "precube_decimal"  # the Python function: (op, a, b, scale) over decimals as text
AVERAGE = "precube_average"  # meta of a division that is Spark's AVG: the quotient rounded once, to its cast's scale
_DIVIDE = Context(prec=38, rounding=ROUND_HALF_UP)  # Spark's Decimal.MATH_CONTEXT
_WIDE = Context(prec=200)  # quantizing to a result's scale never runs out of digits
_CAST_TO_SPARK = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Mod,
    exp.Neg,
    exp.Abs,
    exp.Round,
    exp.Floor,
    exp.Ceil,
    exp.Case,
    exp.If,
    exp.Coalesce,
    exp.Nvl2,
    exp.Greatest,
    exp.Least,
)
_RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank, exp.Ntile)  # window functions Spark types INT
_CONDITIONS = (exp.Where, exp.Having, exp.Qualify, exp.Predicate, exp.Connector, exp.Not)


def decimal_op(op: pa.Array, left: pa.Array, right: pa.Array, scale: pa.Array) -> pa.Array:
    """Spark's `left op right` over decimals written as text: `div` (Spark's division rounded to `scale`),
    `quot` (the truncated quotient) or `mul` (the product rounded to `scale`); NULL for NULL or a zero divisor."""
    out: list[str | None] = []
    for o, a, b, s in zip(op.to_pylist(), left.to_pylist(), right.to_pylist(), scale.to_pylist(), strict=True):
        if a is None or b is None:
            out.append(None)
            continue
        x, y = Decimal(a), Decimal(b)
        if o == "mul":
            value = _WIDE.multiply(x, y)
        elif y == 0:
            out.append(None)
            continue
        elif o == "quot":
            out.append(str(_WIDE.divide_int(x, y)))
            continue
        else:
            value = _DIVIDE.divide(x, y)
        try:
            out.append(str(value.quantize(Decimal(1).scaleb(-s), rounding=ROUND_HALF_UP, context=_WIDE)))
        except InvalidOperation:  # cannot happen within _WIDE's 200 digits; kept as Spark's overflow: NULL
            out.append(None)
    return pa.array(out, pa.string())


def relation_types(relations: Iterable[tuple[str, dict[str, str]]], sources: Iterable[Table]) -> MappingSchema:
    """sqlglot's schema of what a statement reads: each relation (layout or snapshot: name → column → Spark
    type) and each source table."""
    scans = {name: dict(cols) for name, cols in relations if cols}
    tables: dict[str, object] = {"": scans} if scans else {}
    for t in sources:
        columns = {c.name.lower(): datatypes.to_spark(c.datatype) for c in t.columns}
        database = tables.setdefault(t.database.lower(), {})
        assert isinstance(database, dict)
        database[t.name.lower()] = columns
    return MappingSchema(tables, dialect="spark")


def in_spark_terms(tree: exp.Query, schema: MappingSchema) -> exp.Query:
    """A copy of `tree` (the engine's, in precube's dialect) whose decimal arithmetic DuckDB computes as Spark
    does (module docstring); `tree` itself when it has none or cannot be typed."""
    if tree.find(exp.Func, exp.Binary, exp.Literal) is None:
        return tree
    copy = tree.copy()
    try:
        spark_types.annotate(copy, schema)
    except (SqlglotError, ValueError, KeyError):  # a shape sqlglot cannot type: DuckDB's own arithmetic
        return tree
    changed = False
    for node in reversed(list(copy.find_all(exp.Expr, bfs=False))):  # children before their parents
        replacement = _replacement(node)
        if replacement is not None:
            replacement.type = node.type
            _whole(node).replace(replacement)
            changed = True
    return copy if changed else tree


def _replacement(node: exp.Expr) -> exp.Expr | None:
    if node.parent is None or _in_condition(node) or isinstance(node.parent, exp.Case):  # a CASE's branch: no value
        return None
    if isinstance(node, exp.Avg):
        return _average(node)
    if isinstance(node, exp.Div) and node.meta.get(AVERAGE) and isinstance(node.parent, exp.Cast):
        target = decimal_of(node.parent.to)  # a layout's AVG merge
        return _call("div", node.left, node.right, target.scale) if target is not None else None
    found = decimal_of(node.type)
    if isinstance(node, exp.IntDiv):
        return _quotient(node)
    if found is None:
        return _function_type(node)
    if isinstance(node, exp.Div):
        return _exact(node, "div", found)
    if isinstance(node, exp.Mul) and _operand_scale(node.left) + _operand_scale(node.right) > 38:
        return _exact(node, "mul", found)
    if isinstance(node, _CAST_TO_SPARK) or (isinstance(node, exp.Literal) and isinstance(node.parent, exp.Alias)):
        parent = node.parent
        if isinstance(parent, exp.Cast) and parent.to == found.data_type():
            return None
        return _cast(node.copy(), found)
    return None


def _function_type(node: exp.Expr) -> exp.Expr | None:
    """A function whose Spark type DuckDB gives otherwise, cast to it (a window function with its OVER): INT,
    SMALLINT or TINYINT (YEAR, EXTRACT, LENGTH, DATEDIFF, ROW_NUMBER, RANK…: BIGINT in DuckDB), DATE (DATE_ADD,
    ADD_MONTHS…: a date plus an interval is a TIMESTAMP in DuckDB)."""
    plain = not isinstance(node, (exp.AggFunc, exp.Cast, exp.TryCast, exp.Anonymous))
    if (
        isinstance(node, exp.Func)
        and (plain or isinstance(node, _RANKS))
        and not isinstance(node, _CAST_TO_SPARK)
        and node.type is not None
        and node.type.is_type(exp.DType.INT, exp.DType.SMALLINT, exp.DType.TINYINT, exp.DType.DATE)
        and not (isinstance(node.parent, exp.Cast) and node.parent.to == node.type)
    ):
        return _cast(_whole(node).copy(), node.type)
    return None


def _in_condition(node: exp.Expr) -> bool:
    """Whether `node` sits in a condition of its SELECT: WHERE, HAVING, a join's ON, a CASE branch's WHEN, a
    comparison or a logical operator."""
    child, parent = node, node.parent
    while parent is not None and not isinstance(parent, exp.Query):
        if (
            isinstance(parent, _CONDITIONS)
            or (isinstance(parent, exp.Join) and child.arg_key == "on")
            or (isinstance(parent, exp.If) and child.arg_key == "this")
        ):
            return True
        child, parent = parent, parent.parent
    return False


def _whole(node: exp.Expr) -> exp.Expr:
    """A call with its FILTER and OVER (what replaces it must replace them too)."""
    whole = node
    for wrapper in (exp.Filter, exp.Window):
        if isinstance(node, exp.Func) and isinstance(whole.parent, wrapper) and whole.arg_key == "this":
            whole = whole.parent
    return whole


def _cast(node: exp.Expr, to: DecimalType | exp.DataType | str) -> exp.Expr:
    if isinstance(to, DecimalType):
        target = to.data_type()
    else:
        target = to.copy() if isinstance(to, exp.DataType) else exp.DataType.build(to)
    cast = exp.Cast(this=node, to=target)
    cast.type = target
    return cast


def _text(node: exp.Expr) -> exp.Expr:
    return exp.Cast(this=node.copy(), to=exp.DataType.build("VARCHAR"))


def _operand_scale(node: exp.Expr) -> int:
    found = decimal_of(node.type)
    return found.scale if found is not None else 0


def _call(op: str, left: exp.Expr, right: exp.Expr, scale: int) -> exp.Expr:
    return exp.Anonymous(
        this=DECIMAL_OP, expressions=[exp.Literal.string(op), _text(left), _text(right), exp.Literal.number(scale)]
    )


def _exact(node: exp.Binary, op: str, result: DecimalType) -> exp.Expr:
    return _cast(_call(op, node.left, node.right, result.scale), result)


def _quotient(node: exp.IntDiv) -> exp.Expr | None:
    """`a div b`, a BIGINT in Spark: with a decimal operand the exact quotient truncated (DuckDB's `//` of
    decimals divides), of integers DuckDB's `//` as BIGINT (DuckDB keeps the operands' type)."""
    if decimal_of(node.left.type) is None and decimal_of(node.right.type) is None:
        return _cast(node.copy(), "BIGINT") if not isinstance(node.parent, exp.Cast) else None
    return _cast(_call("quot", node.left, node.right, 0), "BIGINT")


def _average(node: exp.Avg) -> exp.Expr | None:
    """Spark's AVG of a decimal (`spark_average`), its FILTER and OVER applied to both the SUM and the COUNT."""
    arg = node.this.expressions[0] if isinstance(node.this, exp.Distinct) else node.this
    datatype = arg.type if isinstance(arg, exp.Expr) else None
    if datatype is None or decimal_of(datatype) is None:
        return None
    whole = _whole(node)

    def whole_of(call: exp.AggFunc) -> exp.Expr:
        if whole is node:
            return call
        copy = whole.copy()
        next(n for n in copy.find_all(exp.Avg)).replace(call)
        return copy

    total, rows = whole_of(exp.Sum(this=node.this.copy())), whole_of(exp.Count(this=node.this.copy()))
    return _average_of(spark_average(total, rows, datatype))


def _average_of(average: exp.Expr) -> exp.Expr:
    """A `spark_average` whose division the engine computes as Spark's AVG does."""
    assert isinstance(average, exp.Cast)
    division, target = average.this, decimal_of(average.to)
    assert isinstance(division, exp.Div) and target is not None
    division.replace(_call("div", division.left, division.right, target.scale))
    return average


def spark_average(total: exp.Expr, rows: exp.Expr, datatype: exp.DataType) -> exp.Expr:
    """AVG of values of the decimal `datatype` from their SUM and COUNT, as Spark computes it: the sum as
    DECIMAL(p+10, s) over the count as DECIMAL(20, 0), cast to DECIMAL(p+4, s+4). The division is marked, so
    that DuckDB rounds the quotient once, to the result's scale, as Spark's AVG does (Spark's own `/` would
    first round it to its division type)."""
    summed, result = spark_types.sum_type(datatype), spark_types.avg_type(datatype)
    assert summed is not None and result is not None
    division = exp.Div(this=_cast(total, summed), expression=_cast(rows, DecimalType(20, 0)))
    division.meta[AVERAGE] = True
    return _cast(division, result)
