"""The SQL front end: parsing in precube's dialect, tables and columns qualified against the project's."""

from __future__ import annotations

import pytest
from sqlglot import exp

from precube.metadata import Column, SourceType, Table
from precube.query.errors import (
    AmbiguousColumnError,
    SqlSyntaxError,
    UnknownColumnError,
    UnknownObjectError,
    UnknownTableError,
)
from precube.query.frontend import DIALECT, Catalog, normalise, parse


def _table(db: str, name: str, **columns: str) -> Table:
    cols = [Column(id=str(i), name=c, datatype=t) for i, (c, t) in enumerate(columns.items(), start=1)]
    return Table(name=name, database=db, columns=cols, source_type=SourceType.PARQUET)


CATALOG = Catalog.of(
    "SSB",
    [
        _table("SSB", "LINEORDER", LO_ORDERDATE="date", LO_CUSTKEY="integer", LO_REVENUE="bigint"),
        _table("SSB", "DATES", D_DATEKEY="date", D_YEAR="integer"),
        _table("SSB", "CUSTOMER", C_CUSTKEY="integer", C_NATION="varchar(4096)"),
        _table("OTHER", "DATES", D_DATEKEY="date", HOLIDAY="boolean"),
    ],
)


def _sql(tree: exp.Expr) -> str:
    return tree.sql(dialect=DIALECT)


def test_names_are_case_insensitive_quoted_or_not_and_the_default_database_applies() -> None:
    tree = normalise(
        'select "d_year", `Lo_Revenue`, sum("LO_REVENUE") as s from LINEORDER l join ssb.Dates '
        "on l.lo_orderdate = D_DATEKEY group by 1, 2",
        CATALOG,
    )
    assert {(t.db, t.name, t.alias) for t in tree.find_all(exp.Table)} == {
        ("ssb", "lineorder", "l"),
        ("ssb", "dates", "dates"),
    }
    columns = {(c.table, c.name) for c in tree.find_all(exp.Column)}
    assert columns == {("dates", "d_year"), ("l", "lo_revenue"), ("l", "lo_orderdate"), ("dates", "d_datekey")}


def test_another_database_is_reached_by_name() -> None:
    tree = normalise("select holiday from other.dates", CATALOG)
    [table] = tree.find_all(exp.Table)
    assert (table.db, table.name) == ("other", "dates")
    assert [c.table for c in tree.find_all(exp.Column)] == ["dates"]


def test_strings_stay_strings_and_double_quotes_are_identifiers() -> None:
    tree = normalise("select c_nation from customer where c_nation = 'CHINA'", CATALOG)
    assert [lit.this for lit in tree.find_all(exp.Literal)] == ["CHINA"]
    with pytest.raises(UnknownObjectError, match="CHINA"):
        normalise('select c_nation from customer where c_nation = "CHINA"', CATALOG)


def test_ctes_subqueries_and_star_are_qualified() -> None:
    sql = """
        with yearly as (select d_year, sum(lo_revenue) as revenue from lineorder
                        join dates on lo_orderdate = d_datekey group by d_year)
        select * from yearly where revenue > (select avg(lo_revenue) from ssb.lineorder)
    """
    tree = normalise(sql, CATALOG)
    tables = sorted((t.db, t.name) for t in tree.find_all(exp.Table))
    assert tables == [("", "yearly"), ("ssb", "dates"), ("ssb", "lineorder"), ("ssb", "lineorder")]
    assert [s.alias_or_name for s in tree.selects] == ["d_year", "revenue"]  # `*` expanded


def test_unknown_tables_and_columns_are_named() -> None:
    with pytest.raises(UnknownTableError, match=r"table ORDERS \(default database SSB\) does not exist"):
        normalise("select count(*) from orders", CATALOG)
    with pytest.raises(UnknownTableError, match=r"table NOWHERE\.LINEORDER does not exist"):
        normalise("select count(*) from nowhere.lineorder", CATALOG)
    with pytest.raises(UnknownColumnError, match="column LO_TAX is in none"):
        normalise("select sum(lo_tax) from lineorder", CATALOG)
    with pytest.raises(UnknownColumnError, match="(?i)lo_tax"):
        normalise("select lineorder.lo_tax from lineorder", CATALOG)
    with pytest.raises(AmbiguousColumnError, match="D_DATEKEY"):  # in two tables of the join
        normalise("select d_datekey from dates join other.dates o on dates.d_datekey = o.d_datekey", CATALOG)


def test_only_one_query_is_accepted() -> None:
    with pytest.raises(SqlSyntaxError, match="cannot parse"):
        parse("select from where")
    with pytest.raises(SqlSyntaxError, match="not INSERT"):
        parse("insert into lineorder values (1)")
    with pytest.raises(SqlSyntaxError, match="not 2 statements"):
        parse("select 1; select 2")


def test_star_expands_to_real_columns_and_computed_ones_are_read_by_name() -> None:
    catalog = Catalog.of(
        "SSB",
        [
            _table("SSB", "LINEORDER", LO_ORDERDATE="date", LO_REVENUE="bigint"),
            _table("SSB", "DATES", D_YEAR="integer"),
        ],
        {"SSB.LINEORDER": {"v_revenue": "bigint"}},
    )
    star = normalise("select * from lineorder", catalog)
    assert [s.alias_or_name for s in star.selects] == ["lo_orderdate", "lo_revenue"]
    both = normalise("select l.*, v_revenue from lineorder l", catalog)
    assert [(c.table, c.name) for c in both.find_all(exp.Column)] == [
        ("l", "lo_orderdate"),
        ("l", "lo_revenue"),
        ("l", "v_revenue"),
    ]
