"""Result column names on the wire as PostgreSQL names them (`pgwire/colnames.py`): each expected name was
read from a PostgreSQL 15 server's RowDescription for the same select item."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlglot

from precube.server.pgwire.colnames import names
from precube.server.pgwire.executor import pg_named

NAMED = [  # (select item, PostgreSQL's name)
    ("1", "?column?"),
    ("count(*)", "count"),
    ("count(distinct x)", "count"),
    ("sum(x)", "sum"),
    ("1::int", "int4"),
    ("cast('2020-01-01' as date)", "date"),
    ("x::date", "x"),
    ("cast(t.x as date)", "x"),
    ("(t.x)::date", "x"),
    ("true", "?column?"),
    ("case when true then 1 end", "case"),
    ("case when true then 1 else t.x end", "x"),
    ("extract(year from d)", "extract"),
    ("coalesce(1, 2)", "coalesce"),
    ("(select 1 as q)", "q"),
    ("interval '1 day'", "interval"),
    ("date '2020-01-01'", "date"),
    ("x is null", "?column?"),
    ("'a'", "?column?"),
    ("-1", "?column?"),
    ("a + b", "?column?"),
    ('"A"', "A"),
    ("A", "a"),
    ("t.col", "col"),
    ("sum(1) over ()", "sum"),
    ("nullif(1, 2)", "nullif"),
    ("greatest(1, 2)", "greatest"),
    ("substring('abc' from 1)", "substring"),
    ("trim(' a ')", "btrim"),
    ("position('a' in 'b')", "position"),
    ("current_date", "current_date"),
    ("array[1]", "array"),
    ("exists(select 1)", "exists"),
    ("1 in (1)", "?column?"),
    ("cast(null as int)", "int4"),
    ("1.5::numeric(3, 1)", "numeric"),
    ("cast(x as varchar)", "x"),
    ("x as Foo", "foo"),
    ('x as "Foo"', "Foo"),
    ("1::float8", "float8"),
    ("1::bigint", "int8"),
    ("1::text", "text"),
    ("'2020-01-01'::timestamp", "timestamp"),
    ("1::double precision", "float8"),
    ("count(1) filter (where true)", "count"),
    ("1::varchar(3)", "varchar"),
    ("1::char", "bpchar"),
    ("1::real", "float4"),
    ("1::smallint", "int2"),
    ("'2020-01-01'::timestamptz", "timestamptz"),
    ("upper('a')", "upper"),
    ("pg_catalog.lower('A')", "lower"),
    ("not true", "?column?"),
    ("'a' || 'b'", "?column?"),
    ("1 between 0 and 2", "?column?"),
    ("null", "?column?"),
    ("1::boolean", "bool"),
    ("$1", "?column?"),
    ("percentile_cont(0.5) within group (order by x)", "percentile_cont"),
]


@pytest.mark.parametrize(("item", "pg"), NAMED, ids=[i for i, _ in NAMED])
def test_a_select_item_is_named_as_postgresql_names_it(item: str, pg: str) -> None:
    assert names(sqlglot.parse_one(f"select {item} from t", read="postgres")) == [pg]


def test_set_operations_take_the_first_branchs_names_and_stars_keep_the_engines() -> None:
    tree = sqlglot.parse_one("select a, count(*) from t union all select b as z, 2 from u", read="postgres")
    assert names(tree) == ["a", "count"]
    assert names(sqlglot.parse_one("show tables", read="postgres")) is None
    table = pa.table({"X": [1], "A": [2], "B": [3], "COUNT(*)": [4], "S": [5]})
    starred = sqlglot.parse_one("select x, t.*, count(*) as s from t", read="postgres")
    assert pg_named(table, starred).column_names == ["x", "A", "B", "COUNT(*)", "s"]
    duplicated = sqlglot.parse_one("select count(*), count(*), 1, 2, 3 from t", read="postgres")
    assert pg_named(table, duplicated).column_names == ["count", "count", "?column?", "?column?", "?column?"]
    assert pg_named(table, sqlglot.parse_one("select 1 from t", read="postgres")) is table  # widths disagree
