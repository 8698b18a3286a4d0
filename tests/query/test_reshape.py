"""Reshaping a statement into blocks layouts answer (`query.reshape`) keeps its meaning: each rule is checked
on its shape, and every reshaped statement gives DuckDB the same rows as the statement as written, over
random tables with NULLs, duplicate keys and unmatched keys."""

from __future__ import annotations

import random

import duckdb
import pytest
from sqlglot import exp

from precube.query.frontend import Catalog, normalise
from precube.query.reshape import UNIQUE_KEY, reshaped

CATALOG = Catalog(
    "db",
    {
        "db": {
            "f": {"k": "bigint", "d": "int", "v": "decimal(15,2)", "w": "int"},
            "o": {"k": "bigint", "p": "string", "q": "int"},
        }
    },
)

STATEMENTS = [
    # a derived table projecting the joined tables, aggregated outside
    "select p, sum(x) from (select o.p as p, f.v * 2 as x from f, o where f.k = o.k and f.d > 2) t group by p",
    "with t as (select f.d as d, f.v as v from f where f.w < 5) select d, count(*), max(v) from t group by d",
    # conjuncts common to every OR branch
    "select count(*) from f, o where (f.k = o.k and f.d = 1 and o.q > 2) or (f.k = o.k and f.d = 2 and o.q < 5)",
    "select count(*) from f where (d = 1 and w = 2) or (d = 1)",
    "select count(*) from f where (d = 1 and w = 2) or (d = 3 and w = 2) or (w = 2 and v > 1)",
    # [NOT] EXISTS over one correlating equality
    "select p, count(*) from o where exists (select * from f where f.k = o.k and f.d < f.w) group by p",
    "select p, count(*) from o where not exists (select * from f where f.k = o.k and f.d < f.w) group by p",
    "select count(*) from o where q > 1 and not exists (select 1 from f where o.k = f.k)",
    # an IN subquery
    "select count(*) from o where k in (select k from f where d > 3)",
    "select count(*) from o where k not in (select k from f where d > 3)",
]


def _table(rng: random.Random, rows: int, columns: str) -> str:
    def value(c: str) -> str:
        if rng.random() < 0.1:
            return "NULL"
        if c == "k":
            return str(rng.randint(1, 12))
        if c == "p":
            return f"'{rng.choice('xyz')}'"
        if c == "v":
            return f"{rng.randint(-999, 999) / 100}"
        return str(rng.randint(0, 6))

    return ", ".join("(" + ", ".join(value(c) for c in columns) + ")" for _ in range(rows))


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    rng = random.Random(36)
    con = duckdb.connect()
    con.execute("CREATE SCHEMA db")
    # NULL keys on both sides, whatever the random rows hold: where IN and EXISTS differ
    facts = _table(rng, 60, "kdvw") + ", (NULL, 1, 1.5, 9), (NULL, 5, 2.5, 0)"
    con.execute(
        "CREATE TABLE db.f AS SELECT k::BIGINT k, d::INT d, v::DECIMAL(15,2) v, w::INT w "
        f"FROM (VALUES {facts}) t(k, d, v, w)"
    )
    orders = _table(rng, 15, "kpq") + ", (NULL, 'x', 2), (NULL, 'y', 3)"
    con.execute(f"CREATE TABLE db.o AS SELECT k::BIGINT k, p, q::INT q FROM (VALUES {orders}) t(k, p, q)")
    return con


def _rows(con: duckdb.DuckDBPyConnection, tree: exp.Expr) -> list[tuple[object, ...]]:
    return sorted(con.sql(tree.sql(dialect="duckdb")).fetchall(), key=repr)


@pytest.mark.parametrize("sql", STATEMENTS)
def test_a_reshaped_statement_means_the_same(sql: str, con: duckdb.DuckDBPyConnection) -> None:
    tree = normalise(sql, CATALOG)
    shaped = reshaped(tree)
    assert shaped is not tree, "no rule applied"
    assert shaped.sql() != tree.sql()
    assert _rows(con, shaped) == _rows(con, tree)


def test_a_derived_table_is_merged_into_the_block_that_reads_it() -> None:
    shaped = reshaped(normalise(STATEMENTS[0], CATALOG))
    assert shaped.find(exp.Subquery) is None
    assert "SUM(f.v * 2)" in shaped.sql()


def test_the_join_common_to_every_branch_leaves_the_or() -> None:
    shaped = reshaped(normalise(STATEMENTS[2], CATALOG))
    where = shaped.args["where"].this
    assert isinstance(where, exp.And) and "f.k = o.k" in [c.sql() for c in where.flatten()]
    assert shaped.sql().count("f.k = o.k") == 1


def test_a_correlated_exists_is_an_uncorrelated_in() -> None:
    shaped = reshaped(normalise(STATEMENTS[5], CATALOG))
    member = shaped.find(exp.In)
    assert member is not None and shaped.find(exp.Exists) is None
    inner = member.args["query"].this
    assert inner.args.get("group") is not None and "o." not in inner.sql()


@pytest.mark.parametrize(
    "sql",
    [
        "select count(*) from o where exists (select * from f where f.k = o.k and f.d = o.q)",  # two correlations
        "select count(*) from o where exists (select * from f where f.k > o.k)",  # not an equality
        "select count(*) from o where q = 1 or exists (select * from f where f.k = o.k)",  # not a conjunct
        "select count(*) from o where exists (select count(*) from f where f.k = o.k)",  # an aggregate: always a row
    ],
)
def test_other_exists_stay_as_written(sql: str) -> None:
    shaped = reshaped(normalise(sql, CATALOG))
    assert shaped.find(exp.Exists) is not None


KEYS = frozenset({("DB.F", "K", "DB.O", "K")})  # a model joining o to its fact f on f.k = o.k
COUNTED = [
    "select p, count(*) from o where q > 1 and exists (select * from f where f.k = o.k and f.d > 2) group by p",
    "select count(*) from o where k in (select k from f where w < 5)",
    "select p, count(*) as c from o where exists (select * from f where f.k = o.k) group by p having count(*) > 1",
]


@pytest.fixture(scope="module")
def unique_keys() -> duckdb.DuckDBPyConnection:
    """f and o as in `con`, o's keys unique (NULL ones aside; some unmatched, some f keys missing from o)."""
    rng = random.Random(7)
    con = duckdb.connect()
    con.execute("CREATE SCHEMA db")
    facts = _table(rng, 80, "kdvw") + ", (NULL, 1, 1.5, 9), (14, 5, 2.5, 0)"
    con.execute(
        "CREATE TABLE db.f AS SELECT k::BIGINT k, d::INT d, v::DECIMAL(15,2) v, w::INT w "
        f"FROM (VALUES {facts}) t(k, d, v, w)"
    )
    orders = ", ".join(f"({k}, '{rng.choice('xyz')}', {rng.randint(0, 6)})" for k in range(1, 13))
    con.execute(
        f"CREATE TABLE db.o AS SELECT k::BIGINT k, p, q::INT q FROM (VALUES {orders}, (NULL, 'x', 2)) t(k, p, q)"
    )
    return con


@pytest.mark.parametrize("sql", COUNTED)
def test_a_counted_semi_join_is_a_count_of_distinct_keys_over_the_join(
    sql: str, unique_keys: duckdb.DuckDBPyConnection, con: duckdb.DuckDBPyConnection
) -> None:
    """Over a unique lookup key, counting the lookup's rows whose key the fact holds is counting the distinct
    fact keys of the join: one block over f JOIN o, marked for matching to prove o's key unique. With duplicate
    keys (`con`) the two differ: why the proof is asked for."""
    tree = normalise(sql, CATALOG)
    shaped = reshaped(tree, KEYS)
    assert shaped.find(exp.Subquery) is None and shaped.meta.get(UNIQUE_KEY) == "o"
    assert "COUNT(DISTINCT f.k)" in shaped.sql() and "COUNT(*)" not in shaped.sql()
    assert _rows(unique_keys, shaped) == _rows(unique_keys, tree)
    assert reshaped(tree).find(exp.Subquery) is not None  # no model joins them: an IN as before
    if "group by p" in sql and "having" not in sql:
        assert _rows(con, shaped) != _rows(con, tree)


@pytest.mark.parametrize(
    "sql",
    [
        "select p, sum(q) from o where exists (select * from f where f.k = o.k) group by p",  # not only COUNT(*)
        "select count(*) from o where not exists (select * from f where f.k = o.k)",  # an anti-join
        "select count(*) from o where q in (select k from f)",  # not the join's key
        "select count(*) from o where k in (select k from f where f.d > 1 group by k having count(*) > 1)",
    ],
)
def test_other_semi_joins_are_not_counted(sql: str) -> None:
    shaped = reshaped(normalise(sql, CATALOG), KEYS)
    assert shaped.find(exp.Subquery) is not None and UNIQUE_KEY not in shaped.meta
