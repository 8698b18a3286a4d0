"""The front end's guard (issue 17): a statement may read the project's tables and nothing else.

A parsed query passes when each of its table references is a project table, or a CTE in scope, and
each function it calls is an ordinary SQL function: a sqlglot expression class on `ALLOWED_FUNCTIONS`
or a Spark function sqlglot does not model (`ALLOWED_NAMES`). It is an allow-list, not a deny-list:
an engine's own functions (DuckDB's `read_text`, `glob`, `current_setting`, `query`, the extensions'
scans; Spark's generators) and precube's internal merge functions are refused by not being on it, as
are table functions, file paths used as tables, `LATERAL VIEW`/`UNNEST` and engine catalogs. It runs
on the tree as parsed, before the tables are resolved, so nothing the user wrote reaches an engine
unchecked and a refusal names what the user wrote.
"""

from __future__ import annotations

import re

from sqlglot import exp

from precube.query.errors import ForbiddenSqlError, UnknownTableError
from precube.query.frontend import Catalog

_WHY_FUNCTION = "only SQL functions over the project's tables can be used"
_WHY_TABLE = "only the project's tables can be read"


def _words(text: str) -> list[str]:
    return text.split()


# sqlglot expression classes of ordinary scalar, aggregate and window functions (class names, so a class
# a sqlglot version lacks is skipped rather than failing the import).
_ALLOWED_CLASS_NAMES = _words(
    """
And Or Xor Case If Coalesce Nullif Nvl2 Greatest Least EqualNull Decode DecodeCase Exists IsNan IsInf
Cast TryCast Typeof
Abs Acos Acosh Asin Asinh Atan Atan2 Atanh Cbrt Ceil Cos Cosh Cot Coth Csc Csch Sec Sech Degrees Exp
Factorial Floor Ln Log Pi Pow Radians Rand Randn Round Sign Sin Sinh Sqrt Tan Tanh Trunc Rint
SafeDivide SafeAdd SafeSubtract SafeMultiply SafeNegate Negative WidthBucket Nanvl Hex Unhex LowerHex
BitwiseCount Getbit
Ascii BitLength ByteLength Chr Concat ConcatWs Contains EndsWith StartsWith Format Initcap Left Right
Length Levenshtein Lower Upper MD5 SHA SHA2 Pad RegexpExtract RegexpExtractAll RegexpLike RegexpILike
RegexpReplace RegexpSplit RegexpCount RegexpInstr RegexpSubstr Repeat Replace Reverse Soundex Space Split
SplitPart StrPosition Substring SubstringIndex Translate Trim Overlay Elt Encode ToBase64 FromBase64
Base64Encode Base64DecodeString NumberToStr ToChar ToNumber Unicode Collate
AddMonths CurrentDate CurrentDatetime CurrentTime CurrentTimestamp CurrentTimezone Localtime Localtimestamp
Date DateAdd DateDiff DateSub DateTrunc DateFromParts DateStrToDate DateToDateStr DateToDi DiToDate
Datetime DatetimeAdd DatetimeDiff DatetimeSub DatetimeTrunc Day DayOfMonth DayOfWeek DayOfWeekIso DayOfYear
Dayname Extract Hour LastDay MakeInterval Minute Month Monthname MonthsBetween NextDay PreviousDay Quarter
Second StrToDate StrToTime StrToUnix Time TimeAdd TimeDiff TimeSub TimeTrunc TimeToStr TimeToUnix
TimeToTimeStr TimeStrToDate TimeStrToTime TimeStrToUnix TimeFromParts Timestamp TimestampAdd TimestampDiff
TimestampSub TimestampTrunc TimestampFromParts TsOrDsAdd TsOrDsDiff TsOrDsToDate TsOrDsToDateStr
TsOrDsToDatetime TsOrDsToTime TsOrDsToTimestamp TsOrDiToDi UnixDate UnixToStr UnixToTime UnixToTimeStr
UnixSeconds UnixMillis UnixMicros Week WeekOfYear WeekStart Year YearOfWeek YearOfWeekIso UtcDate UtcTime
UtcTimestamp ConvertTimezone DateFromUnixDate
AnyValue ApproxDistinct ApproxQuantile ArgMax ArgMin ArrayAgg ArrayUniqueAgg Avg BitwiseAndAgg BitwiseOrAgg
BitwiseXorAgg Corr Count CountIf CovarPop CovarSamp First Last GroupConcat Kurtosis LogicalAnd LogicalOr Max
Median Min Mode PercentileCont PercentileDisc Quantile Skewness Stddev StddevPop StddevSamp Sum Variance
VariancePop RegrAvgx RegrAvgy RegrCount RegrIntercept RegrR2 RegrSlope RegrSxx RegrSxy RegrSyy Grouping
GroupingId
CumeDist DenseRank FirstValue Lag LastValue Lead NthValue Ntile PercentRank Rank RowNumber
Array ArrayContains ArraySize ArrayDistinct ArrayToString ArraySort ArrayConcat ArrayIntersect ArrayExcept
ArrayMax ArrayMin ArrayPosition ArrayRemove ArraySlice ArrayOverlaps Transform ArrayFilter
Struct StructExtract Map VarMap MapKeys
JSONExtract JSONExtractScalar JSONFormat FromJson ParseUrl StrToMap ArrayAppend ArrayInsert ArrayPrepend
ArrayCompact ArraysZip MapFromEntries GenerateSeries ToBinary Uuid
"""
)

ALLOWED_FUNCTIONS: frozenset[type[exp.Func]] = frozenset(
    c for c in (getattr(exp, n, None) for n in _ALLOWED_CLASS_NAMES) if isinstance(c, type) and issubclass(c, exp.Func)
)

# Ordinary Spark SQL functions that sqlglot parses as `exp.Anonymous` (lower case); none of them reads
# anything but its arguments, in Spark or in DuckDB.
ALLOWED_NAMES = frozenset(
    _words(
        """
    pmod bround crc32 hash log1p expm1 btrim positive isnull isnotnull weekday date_part datepart e std mean
    every some bin conv format_number printf mid octet_length find_in_set regexp make_date timestamp_seconds
    timestamp_millis timestamp_micros now unix_date unix_seconds unix_millis unix_micros ceiling signum lcase
    ucase char_length character_length dayofweek dayofmonth dayofyear weekofyear bool_and bool_or var_pop
    var_samp stddev_pop stddev_samp approx_count_distinct percentile percentile_approx date_diff date_add
    date_sub to_date to_timestamp from_utc_timestamp to_utc_timestamp nullifzero zeroifnull try_subtract
    try_multiply try_divide try_add base64 unbase64 sha1 sha cardinality array_union map_values xxhash64 hypot
    """
    )
)

# Engine catalogs, refused by name (with the reason) when the project has no table of that name.
_ENGINE_SCHEMAS = frozenset({"information_schema", "pg_catalog", "system", "temp", "main", "memory", "sys"})
_ENGINE_TABLE = re.compile(r"^(duckdb_|pragma_|pg_|sqlite_)", re.IGNORECASE)
# A name that is a path or URL rather than an identifier (DuckDB reads `FROM "x.csv"` as that file), or
# Spark's `format.path` file syntax.
_PATHLIKE = re.compile(r"[/\\.:~*?\[\]{}$]")
_FILE_FORMATS = frozenset({"parquet", "csv", "json", "orc", "text", "avro", "delta", "iceberg", "binaryfile"})
# Parts of a query that read something other than the rows of its tables.
_GENERATORS = (exp.Unnest, exp.Explode, exp.TableFromRows)


def check(tree: exp.Query, catalog: Catalog) -> None:
    """Refuse `tree` (as parsed, before `normalise`) with a ForbiddenSqlError naming the first table or
    function it may not use."""
    for node in tree.walk():
        if isinstance(node, exp.Table):
            _check_table(node, catalog)
        elif isinstance(node, exp.Lateral) and node.args.get("view"):
            raise ForbiddenSqlError(f"LATERAL VIEW is not allowed: {_WHY_TABLE}")
        elif isinstance(node, _GENERATORS):
            raise ForbiddenSqlError(f"{_name(node)} is not allowed: {_WHY_TABLE}")
        elif isinstance(node, exp.Func) and not _allowed(node):
            raise ForbiddenSqlError(f"function {_name(node)} is not allowed: {_WHY_FUNCTION}")
        elif isinstance(node, exp.Select) and node.args.get("into") is not None:
            raise ForbiddenSqlError("SELECT INTO is not allowed: queries can only read")


def _allowed(node: exp.Func) -> bool:
    if isinstance(node, exp.Anonymous):
        return isinstance(node.this, str) and node.this.lower() in ALLOWED_NAMES
    return type(node) in ALLOWED_FUNCTIONS


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.upper()
    if isinstance(node, exp.Func):
        return node.sql_name().upper()
    return node.key.upper()


def _check_table(table: exp.Table, catalog: Catalog) -> None:
    source = table.this
    if isinstance(source, exp.Func):
        raise ForbiddenSqlError(f"table function {_table_function(source)} is not allowed: {_WHY_TABLE}")
    if not isinstance(source, exp.Identifier):
        raise ForbiddenSqlError(f"table {table.sql(dialect='spark')} is not allowed: {_WHY_TABLE}")
    name, db = table.name.lower(), table.db.lower()
    if not db and _in_scope_cte(table, name):
        return
    if catalog.has(db or catalog.default_database, name) and not _PATHLIKE.search(table.catalog):
        return
    parts = [p for p in (table.catalog, table.db, table.name) if p]
    shown = ".".join(parts).upper() if not _PATHLIKE.search(".".join(parts)) else "'" + ".".join(parts) + "'"
    if any(_PATHLIKE.search(p) for p in parts) or db in _FILE_FORMATS:
        raise ForbiddenSqlError(f"reading the file or URL {shown} is not allowed: {_WHY_TABLE}")
    if db in _ENGINE_SCHEMAS or table.catalog.lower() in _ENGINE_SCHEMAS or _ENGINE_TABLE.match(name):
        raise ForbiddenSqlError(f"the engine catalog {shown} is not allowed: {_WHY_TABLE}")
    if not db and any(cte.alias_or_name.lower() == name for cte in table.root().find_all(exp.CTE)):
        # `normalise` takes a name some CTE has for that CTE: out of its scope, the engine would resolve it
        raise UnknownTableError(f"table {name.upper()} does not exist in the project (its CTE is not in scope here)")
    # any other name: not a project table, which `normalise` reports as an unknown table


def _table_function(source: exp.Func) -> str:
    """The function a table function calls, looking through `TABLE(f(...))`."""
    if isinstance(source, exp.Anonymous) and str(source.this).lower() == "table" and source.expressions:
        inner = source.expressions[0]
        if isinstance(inner, exp.Func):
            return _name(inner)
    return _name(source)


def _in_scope_cte(table: exp.Table, name: str) -> bool:
    """Whether a CTE of this name is visible where the table is: one of an enclosing query's WITH, where
    inside a WITH's own CTEs only the earlier ones are visible (and the CTE itself under RECURSIVE) — a
    later one is not, and the engine would resolve the name as a table or a file."""
    node: exp.Expr = table
    while node.parent is not None:
        parent = node.parent
        with_ = parent.args.get("with_") or parent.args.get("with")
        if isinstance(parent, exp.With):
            with_ = None  # the WITH's query decides, knowing which CTE the table is in
        elif isinstance(with_, exp.With):
            ctes = list(with_.expressions)
            if node is with_:  # the table is inside one of these CTEs
                inner = next(c for c in ctes if c is _child_of(table, with_))
                at = ctes.index(inner)
                ctes = ctes[: at + 1] if with_.args.get("recursive") else ctes[:at]
            if any(c.alias_or_name.lower() == name for c in ctes):
                return True
        node = parent
    return False


def _child_of(node: exp.Expr, ancestor: exp.Expr) -> exp.Expr:
    """The child of `ancestor` on the way down to `node`."""
    while node.parent is not ancestor:
        assert node.parent is not None
        node = node.parent
    return node
