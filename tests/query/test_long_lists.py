"""Long IN lists: the front end reads a list of more than MIN_LIFTED plain literals as one literal, and the
DuckDB engine binds it as one parameter instead of parsing it as SQL text (`literal_lists`); every answer
still equals the oracle's — NULLs in the list, NOT IN, strings, HAVING, CASE, pruning, the plan cache with
another list of the same shape, pushdown, Spark."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from precube.query import pruning
from precube.query.frontend import DIALECT, parse, tokens_of
from precube.query.literal_lists import MIN_LIFTED, collapse, items_of, lift_lists, run_lifted, value_list
from precube.query.plan_cache import shape_of
from precube.query.session import Session
from tests.query.conftest import QueryModel
from tests.query.oracle import Case, Oracle, assert_same
from tests.query.test_pruning import RANGES, range_of, where

N = 3 * MIN_LIFTED


def _ints(values: range | list[int], null: bool = False) -> str:
    return ", ".join([*(str(v) for v in values), *(["NULL"] if null else [])])


def _strs(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def test_only_long_lists_of_one_plain_kind_outside_quotes_are_lifted() -> None:
    ints, strs = _ints(range(-5, N)), _strs(["it's", *(f"v{i}" for i in range(N))])
    sql = f"SELECT 'IN ({ints})' AS \"IN ({ints})\", x IN ({ints}) /* IN ({ints}) */ FROM t WHERE y IN ({strs})"
    text, params = lift_lists(sql)
    assert params == [list(range(-5, N)), ["it's", *(f"v{i}" for i in range(N))]]
    assert text.count("IN (SELECT UNNEST(") == 2 and text.count(ints) == 3  # the quoted and commented stay
    for kept in (
        f"x IN ({_ints(range(MIN_LIFTED))})",  # short
        f"x IN ({_ints(range(N), null=True)})",  # holds NULL
        f"x IN ({_ints(range(N))}, 'a')",  # mixed kinds
        f"x IN ({_ints(range(N))}, 1.5)",  # a decimal
        f"x IN ({_ints(range(N))}, 12345678901234567890)",  # past BIGINT
    ):
        assert lift_lists(kept) == (kept, [])


def test_only_long_lists_of_plain_literals_as_written_are_collapsed() -> None:
    ints, strs = _ints(range(-5, N)), _strs([f"v {i}, x" for i in range(N)])
    sql = (
        f"SELECT 'IN ({ints})' AS `IN ({ints})`, x in({ints}) /* IN ({ints}) */ -- IN ({ints})\n"
        f'FROM t WHERE y NOT IN (\n{strs}\n) AND "IN ({ints})" = 1'
    )
    text, lists = collapse(sql)
    assert sorted(lists.values()) == sorted([ints, strs]) and text.count(ints) == 5  # quoted and commented stay
    for offset in lists:
        assert text[offset] == "0"  # the placeholder the tokenizer reads as one number
    for kept in (
        f"x IN ({_ints(range(MIN_LIFTED))})",  # short
        f"x IN ({_ints(range(N), null=True)})",  # holds NULL
        f"x IN ({_ints(range(N))}, 'a')",  # mixed kinds
        f"x IN ({_ints(range(N))}, 1e3)",  # an exponent
        f"x IN ({_strs(['it' + chr(39) + 's', *map(str, range(N))])})",  # a quote inside a string
        "x IN (" + ", ".join([r"'a\'b'", *(f"'{i}'" for i in range(N))]) + ")",  # a backslash escape
        f"x IN ({_ints(range(N))}, y)",  # a column
        f"x IN (/* c */ {_ints(range(N))})",  # a comment inside
        f"'x IN ({_ints(range(N))})'",  # inside a string
        f"x\u0665IN ({_ints(range(N))})",  # not the keyword IN
    ):
        assert collapse(kept) == (kept, {})


@pytest.mark.parametrize(
    "values",
    [
        [str(i) for i in range(N)],
        ["-3", "1.50", *(str(i) for i in range(N))],
        [f"'v{i}'" for i in range(N)],
        ["'a, b'", "''", "'é ü'", *(f"'{i}'" for i in range(N))],
    ],
)
def test_a_collapsed_list_is_one_literal_that_prints_as_the_list(values: list[str]) -> None:
    sql = f"select a from t where x in ({', '.join(values)}) and y not in ({', '.join(values)})"
    tree = parse(sql)
    lists = [e.expressions for e in tree.find_all(exp.In)]
    assert [len(v) for v in lists] == [1, 1]
    found = value_list(lists[0][0])
    assert found is not None and found[0] is values[0].startswith("'")
    assert [exp.Literal(this=t, is_string=found[0]).sql(dialect=DIALECT) for t in found[1]] == values
    assert [v.sql(dialect=DIALECT) for v in items_of(lists[0])] == values
    plain = sqlglot.parse_one(sql, read=DIALECT)
    for dialect in ("duckdb", "spark"):
        assert tree.sql(dialect=dialect) == plain.sql(dialect=dialect)
    shape = shape_of(sql)
    assert shape is not None and len(shape.params) == 1  # the two equal lists: one parameter
    other = shape_of(sql.replace(values[-1], values[-2]))
    assert other is not None and other.key == shape.key and other.params != shape.params
    assert len(tokens_of(sql)) < 20


def test_a_syntax_error_after_a_collapsed_list_is_placed_in_the_text_as_written() -> None:
    from precube.query.errors import SqlSyntaxError

    sql = f"select a from t where x in ({_ints(range(N))}) and and y = 1"
    with pytest.raises(SqlSyntaxError) as raised:
        parse(sql)
    column = int(re.search(r"column (\d+)", str(raised.value)).group(1))  # type: ignore[union-attr]
    assert sql.index("and and") < column <= sql.index("y = 1")  # not where it is in the collapsed text


def test_pruning_reads_a_collapsed_list_as_the_items_written_out() -> None:
    rng = random.Random(18)
    pool = {
        "n": [str(i) for i in range(40)],
        "x": ["1.50", "2.25", "3", "1", "2.0"],
        "f": ["0.1", "0.3", "0.7"],
        "s": ["'apple'", "'b'", "'banana'", "'c'", "'aa'"],
        "d": ["'1994-06-01'", "'1993-12-31'", "'1995-01-01'"],
        "ps": ["'19940601'", "'19950101'", "'1994'"],
    }
    for column, values in pool.items():
        for _ in range(20):
            items = rng.choices(values, k=MIN_LIFTED + 1)
            negated = rng.choice(["in", "not in"])
            condition = f"{column} {negated} ({', '.join(items)})"
            collapsed = parse(f"select * from t where {condition}").args["where"].this
            assert value_list(next(collapsed.find_all(exp.In)).expressions[0]) is not None
            written = where(condition)
            assert pruning.may_match(collapsed, range_of) == pruning.may_match(written, range_of), condition
            assert pruning.pinned_columns(collapsed) == pruning.pinned_columns(written)


@pytest.mark.parametrize(
    "predicate",
    [
        f"x IN ({_ints(range(N))})",
        f"x NOT IN ({_ints(range(N))})",
        f"NOT x IN ({_ints(range(2, N + 2))})",
        f"s IN ({_strs([str(i) for i in range(N)])})",  # integers in text: a VARCHAR column
        f"s IN ({_ints(range(N))})",  # integers against VARCHAR: the text form casts, the lifted one is refused
        f"d IN ({_strs([f'1994-01-{i % 28 + 1:02d}' for i in range(N)])})",  # text against DATE: likewise
        f"c IN ({_ints(range(N))})",  # integers against DECIMAL
        f"e IN ({_strs(['AIR', *(f'M{i}' for i in range(N))])})",  # strings against an ENUM
    ],
)
def test_lifted_lists_answer_as_the_text_does(predicate: str) -> None:
    con = duckdb.connect()
    con.execute("CREATE TYPE mode AS ENUM ('AIR', 'MAIL')")
    con.execute(
        "CREATE TABLE t AS SELECT * FROM (VALUES (1, '1', DATE '1994-01-02', 2.00::DECIMAL(9, 2), 'AIR'::mode),"
        " (NULL, NULL, NULL, NULL, NULL), (500, '07', DATE '1995-01-01', 2.50::DECIMAL(9, 2), 'MAIL'::mode))"
        " t(x, s, d, c, e)"
    )
    sql = f"SELECT x, {predicate} AS p FROM t ORDER BY x NULLS FIRST"
    assert lift_lists(sql)[1], "the list is lifted"
    assert run_lifted(con, sql).fetchall() == con.execute(sql).fetchall()


def test_pruning_reads_long_lists_as_it_reads_short_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """`pruning._plain_values` (one pass over a list of plain literals) judges as the literal-by-literal
    reading does, on random lists against every kind of range."""
    rng = random.Random(17)
    pool = ["10", "15", "20", "7", "2.25", "1.5", "0.1", "0.3", "-1", "1e400", "'apple'", "'b'", "'banana'", "'c'",
            "'1994-06-01'", "'19941231'", "DATE '1994-02-01'", "NULL", "'x'"]  # fmt: skip
    conditions = [
        f"{column} {rng.choice(['in', 'not in'])} ({', '.join(rng.choices(pool, k=rng.randint(1, 6)))})"
        for column in RANGES
        for _ in range(30)
    ]
    fast = [pruning.may_match(where(c), range_of) for c in conditions]
    monkeypatch.setattr(pruning, "_plain_values", lambda *_: None)
    assert fast == [pruning.may_match(where(c), range_of) for c in conditions]


@pytest.fixture
def fresh(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as session:
        yield session


def _check(session: Session, oracle: Oracle, sql: str, **kwargs: object) -> None:
    result = session.sql(sql, **kwargs)  # type: ignore[arg-type]
    assert_same(Case("long_lists", "", "layout", False, 1e-9, False, False, sql), oracle.run(sql), result.table)


_DAYS = "select d_year, count(*) as n, sum(lo_revenue) as r from ssb.lineorder {join} where {where} group by d_year"
_JOIN = "left join ssb.dates on lo_orderdate = d_datekey left join ssb.customer on lo_custkey = c_custkey"


@pytest.mark.spark
@pytest.mark.parametrize(
    "where",
    [
        f"lo_quantity in ({_ints(range(10, 10 + N))})",
        f"lo_quantity in ({_ints(range(10, 10 + N), null=True)})",
        f"lo_quantity not in ({_ints(range(10, 10 + N))})",
        f"lo_quantity not in ({_ints(range(10, 10 + N), null=True)})",  # NULL in NOT IN: no row
        f"c_nation in ({_strs(['CHINA', 'FRANCE', *(f'NATION {i}' for i in range(N))])})",
        f"c_nation not in ({_strs(['CHINA', *(f'NATION {i}' for i in range(N))])})",
        f"d_year in ({_ints(range(1900, 1900 + N))}) and lo_discount in ({_ints(range(2, 2 + N))})",
    ],
)
def test_long_lists_answer_as_the_oracle_does(fresh: Session, oracle: Oracle, where: str) -> None:
    _check(fresh, oracle, _DAYS.format(join=_JOIN, where=where))


@pytest.mark.spark
def test_long_lists_in_having_case_and_subqueries(fresh: Session, oracle: Oracle) -> None:
    counts = _ints(range(0, 40 * N, 40))
    for sql in (
        f"select lo_discount, count(*) as n from ssb.lineorder group by lo_discount having count(*) not in ({counts})",
        f"select lo_discount, sum(case when lo_quantity in ({_ints(range(N))}) then 1 else 0 end) as n "
        "from ssb.lineorder group by lo_discount",
        f"select count(*) as n from (select lo_quantity from ssb.lineorder where lo_quantity in ({_ints(range(N))})) q",
    ):
        _check(fresh, oracle, sql)


@pytest.mark.spark
def test_same_shape_other_list_is_answered_for_its_own(query_model: QueryModel, fresh: Session, oracle: Oracle) -> None:
    where = "d_year in ({}) and lo_quantity in ({})"
    lists = [(range(1992, 1992 + N), range(N)), (range(1996, 1996 + N), range(20, 20 + N)), ([1993] * N, [5] * N)]
    for years, quantities in lists:
        _check(fresh, oracle, _DAYS.format(join=_JOIN, where=where.format(_ints(years), _ints(quantities))))
    assert fresh.plans.hits + fresh.plans.misses == len(lists)


@pytest.mark.spark
def test_long_lists_on_pushdown_and_spark(query_model: QueryModel, spark: object, oracle: Oracle) -> None:
    sql = _DAYS.format(join=_JOIN, where=f"lo_quantity in ({_ints(range(10, 10 + N))}) and c_region <> 'ASIA'")
    with Session(*query_model.session_args) as session:
        _check(session, oracle, sql, force_pushdown=True)
    with Session(*query_model.session_args, engine="spark", spark=lambda: spark) as on_spark:
        _check(on_spark, oracle, sql)


@pytest.mark.spark
def test_explain_shows_a_long_list_by_its_first_values(fresh: Session) -> None:
    sql = _DAYS.format(join=_JOIN, where=f"lo_quantity in ({_ints(range(1000, 1000 + N))}) and lo_discount in (1, 2)")
    text = fresh.explain(sql).text()
    assert f"1000, 1001, 1002, … {N} values" in text and "1003" not in text
    assert "IN (1, 2)" in text
    fresh.sql(sql)  # the plan explained is still run whole
    assert fresh.plans.misses == 1


@pytest.mark.spark
def test_one_value_and_a_collapsed_list_share_a_shape_and_answer_each_for_its_own(
    fresh: Session, oracle: Oracle
) -> None:
    """`x in (5)` and `x in (<a long list>)` have one shape: the plan made for either answers the other, its
    segments pruned again by the list's items (dates as text against the DATE partition column)."""
    days = [f"'199{y}-{m:02d}-{d:02d}'" for y in (2, 3) for m in range(1, 13) for d in (1, 15, 28)]
    later = [f"'1997-{m:02d}-{d:02d}'" for m in range(1, 13) for d in range(1, 29, 4)]
    sql = "select lo_discount, count(*) as n, sum(lo_revenue) as r from ssb.lineorder where lo_orderdate in ({}) "
    sql += "group by lo_discount"
    scanned = []
    for values in (["'1993-03-01'"], days, later, ["'1997-06-01'"], [*days, *later]):
        statement = sql.format(", ".join(values))
        _check(fresh, oracle, statement)
        scanned.append(len(fresh.sql(statement).segments))
    assert scanned == [1, 1, 1, 1, 2]  # each list prunes by its own days (segments 1992-1994 and 1995-1998)
    assert fresh.plans.hits > 0
