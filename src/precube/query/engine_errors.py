"""Any failure on the query path as precube's own one-line error: the one place where engine, parser and
Python exceptions become `QueryError`s (the engines' `execute` and the Session's entry points go through it).

DuckDB's messages are kept, cut to their first line (the rest is a caret under the SQL precube wrote, or
candidate names of its internal relations; a CSV error keeps the line saying what is wrong); Spark's lose
the Java exception's class and the SQLSTATE. DuckDB's type errors (a comparison, a function or a CASE its
argument types do not fit, a string that is no value of a type) are said in precube's words with SQL's type
names, as their own errors with PostgreSQL's SQLSTATEs (`typed_error`); the planner catches the commonest, a
column compared with a literal, first and names the column (`type_checks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
from sqlglot.errors import OptimizeError, ParseError, SqlglotError, TokenError

from precube.errors import PrecubeError
from precube.query.errors import (
    AmbiguousColumnError,
    DivisionByZeroError,
    EngineError,
    InvalidTextError,
    NestingTooDeepError,
    NumericRangeError,
    OperatorTypeError,
    QueryError,
    QueryMemoryError,
    ResultTooLargeError,
    SqlSyntaxError,
    TypeMismatchError,
    UnknownColumnError,
    UnknownFunctionError,
    UnknownObjectError,
    UnknownTableError,
)
from precube.query.frontend import parse_message, token_message
from precube.query.value_bounds import MARK

_JAVA_CLASS = re.compile(r"^(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error): ")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+[.;]?")
_SPARK_MODULES = ("pyspark", "py4j")
_SPARK_READ_FAILURES = ("FileNotFoundException", "PATH_NOT_FOUND", "Path does not exist", "Parquet", "parquet")


OUT_OF_MEMORY_HINT = "it needs more than [query] memory_limit (env PRECUBE__QUERY__MEMORY_LIMIT) allows"
SPILL_HINT = (
    "it needs more than [query] memory_limit and spilling more than [query] max_spill_mb to disk "
    "(env PRECUBE__QUERY__MAX_SPILL_MB)"
)
MAX_LINE = 500  # an error quoting a huge identifier or literal stays readable


def first_line(err: BaseException) -> str:
    """The exception's first non-blank line (its type's name when it has no text), at most MAX_LINE long."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return _short(lines[0]) if lines else type(err).__name__


def _short(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…"


def _duckdb_line(err: BaseException) -> str:
    """A DuckDB error's first line; for a file DuckDB cannot read (a CSV with a byte that is not UTF-8), the
    first line says only where, so the line saying what (never the row's text) and the file follow."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    first = lines[0].rstrip("!")
    if "CSV Error" in first:
        what = next((x for x in lines[1:] if not x.startswith(("Original Line", "Possible Solution"))), None)
        where = next((x.removeprefix("file = ") for x in lines if x.startswith("file = ")), None)
        first += (f": {what}" if what else "") + (f" (file {where})" if where else "")
    return _short(first)


def _spark_line(err: BaseException) -> str:
    """A Spark (or py4j) error's message: py4j's 'An error occurred while calling …' and the Java class go."""
    for line in str(err).splitlines():
        line = line.strip().removeprefix(": ")
        if line and not line.startswith("An error occurred while calling"):
            return _short(_SQLSTATE.sub("", _JAVA_CLASS.sub("", line)).strip())
    return type(err).__name__


_COMPARE = re.compile(r"Cannot compare values of type (\S+) and type (\S+)")
_MIX = re.compile(r"Cannot mix values of type (\S+) and (\S+) in (.+?) (?:- an explicit cast|$)")
_NO_FUNCTION = re.compile(r"No function matches the given name and argument types '([^(]+)\((.*)\)'")
_NO_CANDIDATE = re.compile(r'Could not choose a best candidate function for the function call "([^(]+)\((.*)\)"')
_NOT_CONVERTED = re.compile(r"""Could not convert string (['"])(.*)\1 to ([\w(), ]+?)(?: when casting.*)?$""")
_DATE_TEXT = re.compile(r'(?:invalid date field format|date field value out of range): "(.*?)"')
# DuckDB's internal and literal type names → SQL's
_TYPE_NAMES = {"INT8": "TINYINT", "INT16": "SMALLINT", "INT32": "INTEGER", "INT64": "BIGINT", "INT128": "HUGEINT"}


def _sql_type(name: str) -> str:
    name = name.strip().removesuffix("_LITERAL")
    return "VARCHAR" if name == "STRING" else _TYPE_NAMES.get(name, name)


def _types(listed: str) -> str:
    return ", ".join(_sql_type(t) for t in listed.split(",") if t.strip())


def typed_error(line: str) -> EngineError | None:
    """DuckDB's type error (its first line) in precube's words, as its own error; None for any other error."""
    if found := _COMPARE.search(line):
        a, b = _sql_type(found[1]), _sql_type(found[2])
        hint = "DATE '1994-01-01'" if "DATE" in (a, b) else f"CAST(… AS {a})"
        return OperatorTypeError(f"cannot compare {a} with {b}: make both sides one type, e.g. {hint}")
    if found := _MIX.search(line):
        a, b = _sql_type(found[1]), _sql_type(found[2])
        return TypeMismatchError(f"cannot mix values of type {a} and {b} in {found[3]}: CAST them to one type")
    if found := _NO_FUNCTION.search(line) or _NO_CANDIDATE.search(line):
        name, types = found[1], _types(found[2])
        return OperatorTypeError(f"no function {name} takes ({types}): CAST the arguments to the types it takes")
    if found := _NOT_CONVERTED.search(line):
        value = found[2] if len(found[2]) <= 40 else found[2][:39] + "…"
        return InvalidTextError(f"{value!r} is not a valid {_sql_type(found[3])}: write a value of that type")
    if found := _DATE_TEXT.search(line):
        return InvalidTextError(f"{found[1]!r} is not a valid DATE: write it as 'yyyy-mm-dd', e.g. DATE '1994-01-01'")
    return None


# What DuckDB's binder and catalog errors are about: their classes are broad, so the message's opening words tell
_DUCKDB_BINDER = (
    ("Referenced column", UnknownColumnError),
    ("Ambiguous reference", AmbiguousColumnError),
    ("No function matches", UnknownFunctionError),
    ("Could not choose a best candidate function", UnknownFunctionError),
    ("Referenced table", UnknownTableError),
)
_DUCKDB_CATALOG = (("Table with name", UnknownTableError), ("Function with name", UnknownFunctionError))
# Spark's error conditions (its own names for PostgreSQL's SQLSTATEs), by their first part
_SPARK_CONDITIONS: dict[str, type[PrecubeError]] = {
    "UNRESOLVED_COLUMN": UnknownColumnError,
    "UNRESOLVED_FIELD": UnknownColumnError,
    "TABLE_OR_VIEW_NOT_FOUND": UnknownTableError,
    "UNRESOLVED_ROUTINE": UnknownFunctionError,
    "AMBIGUOUS_REFERENCE": AmbiguousColumnError,
    "DIVIDE_BY_ZERO": DivisionByZeroError,
    "INTERVAL_DIVIDED_BY_ZERO": DivisionByZeroError,
    "CAST_INVALID_INPUT": InvalidTextError,
    "ARITHMETIC_OVERFLOW": NumericRangeError,
    "NUMERIC_VALUE_OUT_OF_RANGE": NumericRangeError,
    "CAST_OVERFLOW": NumericRangeError,
    "DATATYPE_MISMATCH": TypeMismatchError,
}


def _duckdb_kind(err: duckdb.Error) -> type[PrecubeError]:
    """The error class for a DuckDB failure: by its exception class, and for the broad ones (binder, catalog,
    invalid input, conversion) by what their message says it is about."""
    text = str(err).split(": ", 1)[-1]
    if isinstance(err, duckdb.BinderException):
        return next((kind for words, kind in _DUCKDB_BINDER if text.startswith(words)), EngineError)
    if isinstance(err, duckdb.CatalogException):
        return next((kind for words, kind in _DUCKDB_CATALOG if words in text.split("!")[0]), EngineError)
    if isinstance(err, duckdb.ConversionException):
        return NumericRangeError if "out of range" in text or "Could not cast value" in text else InvalidTextError
    if isinstance(err, duckdb.OutOfRangeException):
        return NumericRangeError
    if isinstance(err, duckdb.TypeMismatchException):
        return TypeMismatchError
    if isinstance(err, duckdb.InvalidInputException) and text.startswith("Division by zero"):
        return DivisionByZeroError
    return EngineError


def _spark_kind(err: BaseException) -> type[PrecubeError]:
    """The error class for a Spark failure, by its error condition (`getCondition`, `getErrorClass` before
    Spark 4)."""
    condition = ""
    for method in ("getCondition", "getErrorClass"):
        if callable(getattr(err, method, None)):
            try:
                condition = str(getattr(err, method)() or "")
            except Exception:  # noqa: BLE001 - a py4j error whose JVM object is gone: no condition to read
                condition = ""
            if condition:
                break
    return _SPARK_CONDITIONS.get(condition.split(".")[0], EngineError)


def query_error(err: BaseException, engine: str | None = None) -> PrecubeError:
    """The error to raise for `err`, caught while answering a statement (on `engine`, when it ran there)."""
    if isinstance(err, PrecubeError):
        return err
    if isinstance(err, RecursionError):
        return NestingTooDeepError("the statement nests too deeply to be planned: simplify its nesting")
    if isinstance(err, TokenError):
        return SqlSyntaxError(token_message(err))
    if isinstance(err, OptimizeError):
        return UnknownObjectError(f"cannot resolve the SQL: {first_line(err)}")
    if isinstance(err, ParseError):
        return SqlSyntaxError(f"cannot parse the SQL: {parse_message(err)}")
    if isinstance(err, SqlglotError):
        return SqlSyntaxError(f"cannot parse the SQL: {first_line(err)}")
    if isinstance(err, UnicodeError):
        return SqlSyntaxError(f"the statement holds text that is not valid Unicode: {first_line(err)}")
    if isinstance(err, duckdb.OutOfMemoryException) and "max_temp_directory_size" in str(err):
        return QueryMemoryError(f"the statement ran out of memory: {SPILL_HINT} ({first_line(err)})")
    if isinstance(err, (duckdb.OutOfMemoryException, MemoryError)):
        return QueryMemoryError(f"the statement ran out of memory: {OUT_OF_MEMORY_HINT} ({first_line(err)})")
    if isinstance(err, duckdb.InvalidInputException) and MARK in str(err):  # a guard of `value_bounds`
        return ResultTooLargeError(first_line(err).partition(MARK)[2])
    if isinstance(err, duckdb.Error):
        line = _duckdb_line(err)
        if isinstance(err, (duckdb.BinderException, duckdb.ConversionException)) and (typed := typed_error(line)):
            return typed  # in precube's words, naming the types
        found = _duckdb_kind(err)(f"DuckDB cannot run the statement: {line}")
        if isinstance(found, EngineError):  # an unknown name is no read failure
            # the first line only: the rest quotes the SQL, whose relations may read Parquet (a type error is no read)
            found.reading = isinstance(err, duckdb.IOException) or "parquet" in line.lower()
        return found
    if type(err).__module__.startswith(_SPARK_MODULES):
        found = _spark_kind(err)(f"Spark cannot run the statement: {_spark_line(err)}")
        if isinstance(found, EngineError):
            found.reading = any(word in str(err) for word in _SPARK_READ_FAILURES)
        return found
    where = f" on {engine}" if engine else ""
    return QueryError(f"the query failed{where} with an internal error: {type(err).__name__}: {first_line(err)}")


@contextmanager
def mapped_errors(engine: str | None = None) -> Iterator[None]:
    """Raise whatever fails inside as its `query_error`, chained to the original (`--debug` shows both)."""
    try:
        yield
    except PrecubeError:
        raise
    except Exception as err:  # every failure of a statement reaches the user as one line
        raise query_error(err, engine) from err
