"""The Postgres wire front end's pure parts, without a server: bound parameters become literals that read back
as the same values (hostile strings included), statements are classified as PostgreSQL reads them, catalog
statements are confined to the emulated relations, and DataRows decode (by pygwire's backend decoder) to the
values of the Arrow table they were encoded from, in both formats."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal

import pyarrow as pa
import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from pygwire import BackendMessageDecoder, ConnectionPhase
from pygwire.messages import DataRow
from sqlglot import exp

from precube.query.frontend import DIALECT
from precube.server.pgwire import placeholders, rows
from precube.server.pgwire import types as pg
from precube.server.pgwire.catalog import current_schema, is_catalog_query, rewrite, sandbox_error
from precube.server.pgwire.catalog_tables import deparsed
from precube.server.pgwire.session_settings import SessionSettings, command_line_options
from precube.server.pgwire.sqlstate import PgError
from precube.server.pgwire.statements import Kind, classify, precube_sql, split

HOSTILE = ["' or 1=1 --", "it's", "\\' or 1=1 --", "back\\slash", '"; drop table x; --', "$1", "é🐘", "", "a\nb"]


def _bound_value(sql_template: str, value: exp.Expr) -> exp.Expr:
    """The literal a bound statement carries, as precube's front end reads the generated text back."""
    tree = classify(sql_template, 100).tree
    assert tree is not None
    text = precube_sql(placeholders.bind(tree, [value]))
    found = sqlglot.parse_one(text, read=DIALECT).find(exp.EQ)
    assert found is not None, text
    return found.expression


@pytest.mark.parametrize("value", HOSTILE)
def test_a_string_parameter_reads_back_as_itself(value: str) -> None:
    literal = _bound_value("select a from t where a = $1", placeholders.literal(value.encode(), 0, False))
    assert isinstance(literal, exp.Literal) and literal.is_string and literal.this == value


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")))
def test_any_text_parameter_reads_back_as_itself(value: str) -> None:
    literal = _bound_value("select a from t where a = $1", placeholders.literal(value.encode(), pg.TEXT.oid, False))
    assert literal.this == value


def test_typed_parameters() -> None:
    def shown(raw: bytes, oid: int, binary: bool = False) -> str:
        return placeholders.literal(raw, oid, binary).sql(dialect=DIALECT)

    assert shown(b"-42", pg.INT8.oid) == "-42"
    assert shown(struct.pack(">i", -7), pg.INT4.oid, True) == "-7"
    assert shown(b"1.5", pg.FLOAT8.oid) == "CAST('1.5' AS DOUBLE)"
    assert shown(b"0.1", pg.FLOAT4.oid) == "CAST('0.1' AS FLOAT)"
    assert shown(struct.pack(">f", 0.1), pg.FLOAT4.oid, True) == "CAST('0.10000000149011612' AS FLOAT)"
    assert shown(b"-Infinity", pg.FLOAT8.oid) == "CAST('-Infinity' AS DOUBLE)"
    assert shown(b"2024-01-01 01:00:00+02", pg.TIMESTAMPTZ.oid) == "CAST('2023-12-31 23:00:00' AS TIMESTAMP)"
    assert shown(b"12.50", pg.NUMERIC.oid) == "12.50"
    assert shown(b"t", pg.BOOL.oid) == "TRUE"
    assert shown(b"2024-02-29", pg.DATE.oid) == "CAST('2024-02-29' AS DATE)"
    assert shown(struct.pack(">i", 1), pg.DATE.oid, True) == "CAST('2000-01-02' AS DATE)"
    assert shown(rows.numeric_binary(Decimal("-10000.0001")), pg.NUMERIC.oid, True) == "-10000.0001"
    assert placeholders.literal(None, pg.INT4.oid, False).sql() == "NULL"
    refused = [(b"1 or 1=1", pg.INT4.oid), (b"1e400x", pg.FLOAT8.oid), (b"2024-13-01", pg.DATE.oid)]
    refused += [(b"NaN", pg.NUMERIC.oid), (b"0." + b"1" * 38, pg.NUMERIC.oid)]  # SQL's DECIMAL holds neither
    refused += [(b"0001-01-01 00:00:00+02", pg.TIMESTAMPTZ.oid)]  # in year 0 in UTC
    for raw, oid in refused:
        with pytest.raises(PgError) as bad:
            placeholders.literal(raw, oid, False)
        assert bad.value.sqlstate == "22P02"
    with pytest.raises(PgError) as nul:
        placeholders.literal(b"a\x00b", pg.TEXT.oid, False)
    assert nul.value.sqlstate == "22021"
    tree = classify("select $1, $3", 100).tree
    assert tree is not None
    with pytest.raises(PgError, match=r"no parameter \$3"):
        placeholders.bind(tree, [exp.Null(), exp.Null()])


@pytest.mark.parametrize(
    ("sql", "kind", "name"),
    [
        ("BEGIN", Kind.BEGIN, ""),
        ("start transaction read only", Kind.BEGIN, ""),
        ("commit", Kind.COMMIT, ""),
        ("ROLLBACK", Kind.ROLLBACK, ""),
        ("SET search_path TO ssb, public", Kind.SET, "search_path"),
        ("set time zone 'UTC'", Kind.SET, "timezone"),
        ("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", Kind.NOOP, ""),
        ("RESET ALL", Kind.RESET, "all"),
        ("show transaction isolation level", Kind.SHOW, "transaction_isolation_level"),
        ("SHOW TABLES", Kind.PASSED, ""),
        ("describe ssb.dates", Kind.PASSED, ""),
        ('DEALLOCATE PREPARE "_pg3_1"', Kind.DEALLOCATE, "_pg3_1"),
        ("explain select 1", Kind.EXPLAIN, ""),
        ("select 1", Kind.QUERY, ""),
        ("select relname from pg_class", Kind.CATALOG, ""),
        ("select current_database()", Kind.CATALOG, ""),
        ("select * from information_schema.tables", Kind.CATALOG, ""),
        ("  ", Kind.EMPTY, ""),
    ],
)
def test_statements_are_classified(sql: str, kind: Kind, name: str) -> None:
    found = classify(sql, 100)
    assert found.kind == kind and found.name == name


def test_a_query_string_splits_outside_literals() -> None:
    assert split("select ';' ; set x = 1;;", 1000) == ["select ';'", "set x = 1"]
    with pytest.raises(PgError) as bad:
        classify("explain analyze select 1", 100)
    assert bad.value.sqlstate == "0A000"


@pytest.mark.parametrize(
    "sql",
    [
        "select * from pg_catalog.pg_class, ssb.lineorder",
        "select * from pg_class where oid in (select 1 from lineorder)",
        "select * from pg_catalog.pg_class, read_csv('/etc/passwd')",
        "select pg_read_file('/etc/passwd') from pg_class",
        "select * from pg_catalog.pg_class c where exists (select 1 from duckdb_settings())",
        "select * from pg_catalog.pg_class c, pgw_catalog.pg_type t",
    ],
)
def test_catalog_statements_stay_in_the_catalog(sql: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    assert is_catalog_query(tree)
    with pytest.raises(PgError):
        rewrite(tree, "ssb", "ssb", SessionSettings("ADMIN"))


@pytest.mark.parametrize(
    ("sql", "command"),
    [
        ("create table ssb.t (a int)", "CREATE TABLE"),
        ("CREATE INDEX i ON ssb.dates (d_year)", "CREATE INDEX"),
        ("drop view v", "DROP VIEW"),
        ("insert into ssb.dates values (1)", "INSERT"),
        ("update ssb.dates set d_year = 1", "UPDATE"),
        ("delete from ssb.dates", "DELETE"),
        ("truncate ssb.dates", "TRUNCATE TABLE"),
        ("comment on table ssb.dates is 'x'", "COMMENT"),
        ("copy ssb.dates from stdin", "COPY FROM"),
    ],
)
def test_writes_are_refused_as_on_a_read_only_server(sql: str, command: str) -> None:
    with pytest.raises(PgError) as refused:
        classify(sql, 100)
    assert (refused.value.sqlstate, refused.value.message) == (
        "25006",
        f"cannot execute {command} in a read-only transaction",
    )


def test_settings_from_startup_options_and_search_path_as_postgresql_shows_it() -> None:
    assert command_line_options(r"-c search_path=ssb --DateStyle=ISO,\ MDY -cstatement_timeout=5") == [
        ("search_path", "ssb"),
        ("DateStyle", "ISO, MDY"),
        ("statement_timeout", "5"),
    ]
    settings = SessionSettings("ADMIN")
    assert settings.show("search_path") == '"$user", public'
    settings.set("search_path", '"ssb", "Ab", "$user", PUBLIC')
    assert settings.show("search_path") == 'ssb, "Ab", "$user", public'


def test_computed_expressions_read_as_pg_get_expr_gives_them() -> None:
    assert deparsed("LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT") == (
        "(LINEORDER.LO_EXTENDEDPRICE * LINEORDER.LO_DISCOUNT)"
    )
    assert deparsed("NOT A.B") == "(NOT A.B)"
    for bare in ("LINEORDER.LO_REVENUE", "CASE WHEN A.B > 5 THEN A.C END", "substr(A.B, 1, 2)", "(A.B + 1)"):
        assert deparsed(bare) == bare


def test_current_schema_follows_search_path() -> None:
    """The first schema of the path the project has (`"$user"` the user's name), else the default database."""
    settings = SessionSettings("ADMIN")
    assert current_schema(settings, {"ssb", "other"}, "ssb") == "ssb"  # '"$user", public': neither exists
    settings.set("search_path", "nosuch, Other, ssb")
    assert current_schema(settings, {"ssb", "other"}, "ssb") == "other"
    settings.set("search_path", '"$user", ssb')
    assert current_schema(settings, {"ssb", "admin"}, "other") == "admin"


@pytest.mark.parametrize(
    ("sql", "rewritten"),
    [  # what tools send (Metabase, pgjdbc, Grafana, psql's \dd) and what the sandbox runs
        ('select 1 as select, 2 as update, 3 as "Yr" from pg_class', '1 AS "select", 2 AS update, 3 AS "Yr"'),
        ("select word from pg_get_keywords() where word <> all ('{a,\"b,c\",NULL}'::text[])", "pgw_keywords"),
        ("select word from pg_get_keywords() where word <> all ('{a,\"b,c\",NULL}'::text[])", "'a', 'b,c', NULL"),
        ("select s[1] from pg_am, string_to_array('a,b', ',') s", "(SELECT STRING_TO_ARRAY('a,b', ',') AS s) AS s"),
        ("select (information_schema._pg_expandarray(indkey)).n from pg_index", "(PGW__PG_EXPANDARRAY(indkey)).n"),
        ("select c.tableoid, t.tableoid from pg_class c, pg_type t", "SELECT 1259, 1247 FROM"),
    ],
)
def test_tools_catalog_statements_rewrite(sql: str, rewritten: str) -> None:
    statement = classify(sql, 100)
    assert statement.kind == Kind.CATALOG and statement.tree is not None
    assert rewritten in rewrite(statement.tree, "ssb", "ssb", SessionSettings("ADMIN")).sql("duckdb")


def test_sandbox_errors_read_as_postgresqls() -> None:
    tree = sqlglot.parse_one("select pg_catalog.pg_namespace.nspname from pg_catalog.pg_namespace", read="postgres")
    assert "pgw_catalog.pg_namespace.nspname" in rewrite(tree, "ssb", "ssb", SessionSettings("ADMIN")).sql("duckdb")
    found = [
        (e.sqlstate, e.message)
        for e in map(
            sandbox_error,
            [
                'Binder Error: Referenced column "b" not found in FROM clause!',
                'Binder Error: Table "c" does not have a column named "castmethod"',
                'Binder Error: Referenced table "x" not found!',
                "Catalog Error: Scalar Function with name foo does not exist!",
                "Binder Error: Something else",
            ],
        )
    ]
    assert found == [
        ("42703", 'column "b" does not exist'),
        ("42703", 'column "castmethod" does not exist'),
        ("42P01", 'missing FROM-clause entry for table "x"'),
        ("42883", "function foo() does not exist"),
        ("0A000", "the catalog cannot answer this query: Binder Error: Something else"),
    ]


def _decoded(table: pa.Table, formats: list[int]) -> list[list[bytes | None]]:
    decoder = BackendMessageDecoder()
    decoder.phase = ConnectionPhase.READY
    decoder.feed(rows.data_rows(rows.encode(table, formats), 0, table.num_rows))
    return [m.columns for m in decoder if isinstance(m, DataRow)]


def test_data_rows_carry_every_value() -> None:
    table = pa.table(
        {
            "i": pa.array([1, None, -3], pa.int16()),
            "s": ["x", None, "hé,llo"],
            "b": [True, False, None],
            "d": pa.array([Decimal("12.50"), None, Decimal("-0.0001")], pa.decimal128(10, 4)),
            "f": [1.5, float("nan"), float("-inf")],
            "day": [dt.date(2000, 1, 1), None, dt.date(1999, 12, 31)],
            "a": pa.array([[1, None], None, []], pa.list_(pa.int32())),
            "t": pa.array([["a b", "NULL"], ['q"'], None], pa.list_(pa.string())),
        }
    )
    assert _decoded(table, [0]) == [
        [b"1", b"x", b"t", b"12.5000", b"1.5", b"2000-01-01", b"{1,NULL}", b'{"a b","NULL"}'],
        [None, None, b"f", None, b"NaN", None, None, b'{"q\\""}'],
        [b"-3", "hé,llo".encode(), None, b"-0.0001", b"-Infinity", b"1999-12-31", b"{}", None],
    ]
    binary = _decoded(table, [1])
    assert [r[0] for r in binary] == [struct.pack(">h", 1), None, struct.pack(">h", -3)]
    assert [r[5] for r in binary] == [struct.pack(">i", 0), None, struct.pack(">i", -1)]
    assert binary[0][6] == struct.pack(">iiiii", 1, 1, pg.INT4.oid, 2, 1) + struct.pack(">ii", 4, 1) + b"\xff" * 4
    assert [pg.of_arrow(f.type).oid for f in table.schema] == [21, 25, 16, 1700, 701, 1082, 1007, 1009]


@given(
    st.lists(
        st.tuples(
            st.none() | st.integers(-(2**63), 2**63 - 1),
            st.none() | st.text(),
            st.none() | st.booleans(),
        ),
        max_size=40,
    )
)
@settings(max_examples=60, deadline=None)
def test_small_plain_answers_are_laid_out_as_the_vectorised_path_does(values: list[tuple[object, ...]]) -> None:
    """`plain_text_rows` (integers, strings, booleans in text, with Python) gives the very bytes of `encode` and
    `data_rows`."""
    ints, texts, flags = (list(c) for c in zip(*values, strict=True)) if values else ([], [], [])
    table = pa.table({"i": pa.array(ints, pa.int64()), "s": pa.array(texts, pa.string()), "b": pa.array(flags)})
    table = table.cast(pa.schema([("i", pa.int64()), ("s", pa.string()), ("b", pa.bool_())]))
    for formats in ([], [0], [0, 0, 0]):
        assert rows.plain_text_rows(table, formats) == rows.data_rows(rows.encode(table, formats), 0, table.num_rows)


def test_other_answers_take_the_vectorised_path() -> None:
    small = pa.table({"i": [1, 2]})
    assert rows.plain_text_rows(small, [1]) is None  # binary
    assert rows.plain_text_rows(small, [0, 1]) is None
    assert rows.plain_text_rows(pa.table({"f": [1.5]}), []) is None  # floats: NaN and Infinity as Postgres shows
    assert rows.plain_text_rows(pa.table({"i": list(range(rows.PLAIN_CELLS + 1))}), []) is None
    assert rows.plain_text_rows(pa.table({"i": [1, None]}), []) is not None
