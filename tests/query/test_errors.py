"""Every bad statement gets precube's own error: a `QueryError` subclass whose text is one line naming the
problem, raised in bounded time (pytest-timeout is the safety net; no test times anything), on the Python
API, on both engines and through the CLI. Long statements within the limits are still answered, from a
layout, as the oracle answers them."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from precube.cli.app import run
from precube.metadata import Project, SourceType, open_store
from precube.query.errors import (
    EngineError,
    NestingTooDeepError,
    NumericRangeError,
    QueryError,
    ReadOnlyStatementError,
    SqlSyntaxError,
    StatementTooLargeError,
    UnknownColumnError,
    UnknownTableError,
)
from precube.query.session import Session
from precube.settings import QuerySettings
from precube.sources.tables import load_file_table
from tests.query.conftest import QueryModel
from tests.query.oracle import Oracle, assert_same, load_case

SAFETY_S = 10  # a bound on each test body (not its fixtures), only against hangs: these fail in milliseconds


def _nested(open_: str, inner: str, close: str, n: int) -> str:
    return open_ * n + inner + close * n


FACT = "ssb.lineorder"
# (id, statement, error class, a word the message names: the problem, the limit or the object)
BAD: list[tuple[str, str, type[QueryError], str]] = [
    ("unterminated_string", "select '", SqlSyntaxError, "not closed"),
    ("unterminated_name", 'select "lo_discount from ssb.lineorder', SqlSyntaxError, "not closed"),
    ("unterminated_comment", "select 1 /* the rest", SqlSyntaxError, "not closed"),
    ("syntax", "select from where", SqlSyntaxError, "'where'"),
    ("truncated", f"select lo_discount from {FACT} where", SqlSyntaxError, "where"),
    ("truncated_from", "select 1 from", SqlSyntaxError, "end of the statement"),
    ("unknown_function", f"select nosuch_fn(lo_discount) from {FACT}", QueryError, "nosuch_fn"),
    ("arity_front_end", f"select abs(lo_discount, 2) from {FACT}", SqlSyntaxError, "arguments"),
    # sqlglot's parser drops PERCENTILE's frequency argument: refused rather than answered without it
    (
        "percentile_frequency",
        f"select percentile(lo_discount, 0.5, lo_quantity) from {FACT}",
        SqlSyntaxError,
        "frequency",
    ),
    ("arity_engine", f"select round(lo_discount, 1, 2, 3) from {FACT}", EngineError, "round"),
    ("type_string_plus_int", f"select lo_shipmode + 1 from {FACT}", EngineError, "+"),
    ("type_bad_date_literal", "select date 'not a date'", EngineError, "date"),
    ("overflow_int", "select cast(2147483647 as int) + cast(1 as int)", NumericRangeError, "overflow"),
    ("overflow_sum", f"select sum(lo_revenue * 9223372036854775807) from {FACT}", EngineError, "overflow"),
    ("lone_surrogate", "select '\udc80'", SqlSyntaxError, "utf-8"),
    ("undecodable_byte", b"select '\xff' as x".decode("utf-8", "surrogateescape"), SqlSyntaxError, "utf-8"),
    ("undecodable_name", b"select \xfe from ssb.lineorder".decode("utf-8", "surrogateescape"), SqlSyntaxError, "utf-8"),
    ("parentheses_1000", "select " + _nested("(", "1", ")", 1000), NestingTooDeepError, "max_nesting_depth"),
    (
        "derived_tables_1000",
        "select count(*) from " + _nested("(select * from ", FACT, ") t", 1000),
        NestingTooDeepError,
        "max_nesting_depth",
    ),
    (
        "in_subqueries_300",
        f"select count(*) from {FACT} where lo_discount in "
        + _nested(f"(select lo_discount from {FACT} where lo_discount in ", "(1, 2)", ")", 300),
        NestingTooDeepError,
        "max_nesting_depth",
    ),
    (
        "case_500",
        "select " + _nested("case when true then ", "1", " end", 500),
        NestingTooDeepError,
        "max_nesting_depth",
    ),
    ("calls_1000", "select " + _nested("abs(", "1", ")", 1000), NestingTooDeepError, "max_nesting_depth"),
    (
        "and_chain_5000",
        f"select count(*) from {FACT} where " + " and ".join(f"lo_discount <> {i}" for i in range(5000)),
        NestingTooDeepError,
        "max_nesting_depth",
    ),
    ("concat_chain_5000", "select " + " || ".join(["'a'"] * 5000), NestingTooDeepError, "max_nesting_depth"),
    ("not_run_5000", "select " + "not " * 5000 + "true", NestingTooDeepError, "nests too deeply"),
    ("minus_run_2000", "select " + "- " * 2000 + "1", NestingTooDeepError, "nests too deeply"),
    ("over_size_limit", "select 1 as x" + " " * 1_000_000, StatementTooLargeError, "max_statement_chars"),
    ("empty", "", SqlSyntaxError, "empty"),
    ("blank", "  \n\t ", SqlSyntaxError, "empty"),
    ("only_comment", "-- nothing here", SqlSyntaxError, "empty"),
    ("only_semicolon", ";", SqlSyntaxError, "empty"),
    ("two_statements", "select 1; select 2", SqlSyntaxError, "2 statements"),
    ("insert", f"insert into {FACT} values (1)", ReadOnlyStatementError, "INSERT"),
    ("drop", f"drop table {FACT}", SqlSyntaxError, "DROP"),
    ("create", "create table x (a int)", SqlSyntaxError, "CREATE"),
    ("set", "set x = 1", SqlSyntaxError, "SET"),
    ("use", "use ssb", SqlSyntaxError, "USE"),
    ("unknown_table", "select 1 from ssb.nosuch", UnknownTableError, "NOSUCH"),
    ("unknown_column", f"select nosuch_col from {FACT}", UnknownColumnError, "NOSUCH_COL"),
]


# found before any engine runs (an engine's error, of any kind, is found only by running)
PLANNING = [c for c in BAD if not issubclass(c[2], EngineError) and c[2] is not QueryError]


def assert_one_line(err: BaseException, kind: type[QueryError], word: str) -> None:
    text = str(err)
    assert isinstance(err, kind), f"{type(err).__name__}: {text}"
    assert text.strip() and "\n" not in text and "\r" not in text, repr(text)
    assert word.lower() in text.lower(), f"{word!r} not in {text!r}"
    assert "Traceback" not in text and "<Token" not in text and "<class" not in text, text


@pytest.fixture(scope="module")
def session(query_model: QueryModel) -> Iterator[Session]:
    with Session(*query_model.session_args) as found:
        yield found


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S, func_only=True)
@pytest.mark.parametrize(("sql", "kind", "word"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_statement_is_one_line_query_error(session: Session, sql: str, kind: type[QueryError], word: str) -> None:
    with pytest.raises(QueryError) as caught:
        session.sql(sql)
    assert_one_line(caught.value, kind, word)


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S, func_only=True)
@pytest.mark.parametrize(
    ("sql", "kind", "word"),
    [c[1:] for c in PLANNING],
    ids=[c[0] for c in PLANNING],
)
def test_explain_and_plan_refuse_alike(session: Session, sql: str, kind: type[QueryError], word: str) -> None:
    for call in (session.explain, session.plan):
        with pytest.raises(QueryError) as caught:
            call(sql)
        assert_one_line(caught.value, kind, word)


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S * 6, func_only=True)  # Spark runs each statement in a few seconds
@pytest.mark.parametrize(
    ("sql", "word"),
    [
        ("select 1 / 0", "divide"),  # Spark 4 runs in ANSI mode: division by zero is an error
        ("select cast('x' as int)", "cast"),
        ("select cast('2024-13-45' as date)", "2024-13-45"),  # an unknown function never reaches an engine
        (f"select sum(lo_revenue * 9223372036854775807) from {FACT}", "overflow"),
    ],
)
def test_spark_engine_errors_are_one_line(query_model: QueryModel, spark: object, sql: str, word: str) -> None:
    with (
        Session(*query_model.session_args, engine="spark", spark=lambda: spark) as on_spark,
        pytest.raises(QueryError) as caught,
    ):
        on_spark.sql(sql)
    err = caught.value
    assert isinstance(err, (EngineError, SqlSyntaxError)), f"{type(err).__name__}: {err}"
    assert_one_line(err, QueryError, word)
    assert "SQLSTATE" not in str(err) and "py4j" not in str(err).lower()


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S, func_only=True)
def test_limits_come_from_the_settings(query_model: QueryModel) -> None:
    tight = QuerySettings(max_statement_chars=60, max_nesting_depth=4)
    with Session(*query_model.session_args, settings=tight) as s:
        assert s.sql("select " + _nested("(", "1", ")", 4)).rows == [(1,)]
        for sql, kind, word in [
            ("select " + _nested("(", "1", ")", 5), NestingTooDeepError, "max_nesting_depth = 4"),
            ("select " + " + ".join(["1"] * 6), NestingTooDeepError, "max_nesting_depth = 4"),
            ("select 1 as x" + " " * 60, StatementTooLargeError, "max_statement_chars = 60"),
        ]:
            with pytest.raises(QueryError) as caught:
                s.sql(sql)
            assert_one_line(caught.value, kind, word)


def _check_with_oracle(session: Session, oracle: Oracle, tmp_path: Path, name: str, sql: str) -> None:
    """`sql` is answered from a layout, as the oracle answers it."""
    case_file = tmp_path / f"{name}.sql"
    case_file.write_text(f"-- {name}\n-- answer: layout\n{sql}\n")
    result = session.sql(sql)
    assert not result.pushdown, result.plan.pushdown_reason if result.plan else "from the result cache"
    assert_same(load_case(case_file), oracle.run(sql), result.table)


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S * 6, func_only=True)
def test_in_list_of_20000_integers_is_answered_from_a_layout(session: Session, oracle: Oracle, tmp_path: Path) -> None:
    values = ", ".join(str(v) for v in range(-10_000, 10_000))  # every quantity (1-50) and many others
    sql = f"select lo_discount, count(*) as n from ssb.lineorder where lo_quantity in ({values}) group by lo_discount"
    _check_with_oracle(session, oracle, tmp_path, "in_20000_integers", sql)


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S * 6, func_only=True)
def test_in_list_of_5000_strings_is_answered_from_a_layout(session: Session, oracle: Oracle, tmp_path: Path) -> None:
    # SSB's cities are a nation's first 9 letters and a digit: ten real ones among 4,990 that match nothing
    cities = [f"'UNITED KI{i}'" for i in range(10)] + [f"'CITY {i:05d}'" for i in range(4990)]
    sql = (
        "select d_year, sum(lo_revenue) as revenue from ssb.lineorder "
        "left join ssb.customer on lo_custkey = c_custkey left join ssb.dates on lo_orderdate = d_datekey "
        f"where c_city in ({', '.join(cities)}) group by d_year"
    )
    _check_with_oracle(session, oracle, tmp_path, "in_5000_strings", sql)


@pytest.mark.spark
@pytest.mark.timeout(SAFETY_S * 3, func_only=True)
def test_100_nested_derived_tables_are_answered(session: Session, oracle: Oracle, tmp_path: Path) -> None:
    inner = "(select lo_discount, count(*) as n from ssb.lineorder where lo_quantity < 10 group by lo_discount) t"
    sql = "select lo_discount, n from " + _nested("(select * from ", inner, ") t", 99)
    _check_with_oracle(session, oracle, tmp_path, "nested_derived_tables_100", sql)


@pytest.fixture
def bad_csv_project(tmp_path: Path) -> Iterator[tuple[Session, Path]]:
    """A project with one CSV table whose file, after loading, holds a byte that is not UTF-8."""
    folder = tmp_path / "notes"
    folder.mkdir()
    data = folder / "part-0.csv"
    data.write_text("id,note\n1,fine\n2,also fine\n")
    with open_store(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        store.create_project(Project(name="p", default_database="DB"))
        load_file_table(store, "p", folder, SourceType.CSV)
        data.write_bytes(b"id,note\n1,fine\n2,caf\xe9 au lait\n")  # Latin-1, as an old export writes it
        with Session(store, "p", str(tmp_path / "warehouse")) as session:
            yield session, data


@pytest.mark.timeout(SAFETY_S, func_only=True)
@pytest.mark.parametrize("sql", ["select note from db.notes", "select count(*) from notes where note = 'x'"])
def test_csv_with_a_bad_byte_under_pushdown(bad_csv_project: tuple[Session, Path], sql: str) -> None:
    session, data = bad_csv_project
    with pytest.raises(QueryError) as caught:
        session.sql(sql)
    assert_one_line(caught.value, EngineError, "utf-8")
    assert str(data) in str(caught.value)  # which file
    assert "caf" not in str(caught.value)  # never the row's text


def test_cli_prints_one_line_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(tmp_path)]
    assert run([*home, "project", "create", "p", "-d", "DB"]) == 0
    capsys.readouterr()
    for sql in [
        "select '",
        "select " + _nested("(", "1", ")", 1000),
        "select 1; select 2",
        "select cast(2147483647 as int) + cast(1 as int)",
        b"select '\xff'".decode("utf-8", "surrogateescape"),
    ]:
        assert run([*home, "query", "-p", "p", sql]) == 1
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
        assert "Traceback" not in captured.err and not captured.out.strip()


def test_cli_reads_undecodable_stdin_as_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = ["--home", str(tmp_path)]
    assert run([*home, "project", "create", "p", "-d", "DB"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"select '\xff\xfe' as x")))
    assert run([*home, "query", "-p", "p", "-"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "UTF-8" in lines[0], lines
