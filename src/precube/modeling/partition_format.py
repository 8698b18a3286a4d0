"""Partition column formats: raw column values ↔ epoch milliseconds (UTC), and the range predicate of a segment.

A model's partition column holds dates in one of `SUPPORTED_FORMATS` (Kylin's Java patterns), in a string, an
integer (`yyyyMMdd` as 20240101), a DATE or a TIMESTAMP column. Segment ranges are half-open `[start, end)` epoch
milliseconds in UTC (Kylin runs its calendar in the JVM time zone; precube fixes it to UTC).

Also the UTC calendar used by all segment arithmetic (`utc_fields`, `utc_ms`): plain integer "civil date"
conversions, so every long Kylin can hold (up to `MAX_TIME`, year 292,278,994) is valid, where `datetime` stops at
year 9999.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import NamedTuple

from precube.metadata.dataflow import MAX_TIME, TimeRange
from precube.modeling.errors import InvalidModelError, SegmentRuleError

YMD_INT = "yyyyMMdd"
YMD_DASH = "yyyy-MM-dd"
YMD_HMS = "yyyy-MM-dd HH:mm:ss"
YMDHMS_INT = "yyyyMMddHHmmss"
YMD_SLASH = "yyyy/MM/dd"
YM_DASH = "yyyy-MM"

SUPPORTED_FORMATS: tuple[str, ...] = (YMD_INT, YMD_DASH, YMD_HMS, YMDHMS_INT, YMD_SLASH, YM_DASH)
DATE_ONLY_FORMATS: frozenset[str] = frozenset({YMD_INT, YMD_DASH, YMD_SLASH, YM_DASH})

_INTEGER_TYPES = frozenset({"tinyint", "smallint", "int", "integer", "bigint", "long"})
_STRING_TYPES = frozenset({"varchar", "char", "string"})
_DATE_TYPES = frozenset({"date"})
_TIMESTAMP_TYPES = frozenset({"timestamp", "timestamp_ntz", "datetime"})
# Smallest integer type that can hold each all-digit format: 20240101 fits an int, 20240101120000 does not.
_INTEGER_FORMAT_TYPES = {
    YMD_INT: frozenset({"int", "integer", "bigint", "long"}),
    YMDHMS_INT: frozenset({"bigint", "long"}),
}

_PATTERNS: dict[str, re.Pattern[str]] = {
    YMD_INT: re.compile(r"(\d{4})(\d{2})(\d{2})"),
    YMD_DASH: re.compile(r"(\d{4})-(\d{2})-(\d{2})"),
    # Timestamps often carry fractions of a second; they are accepted and kept to the millisecond.
    YMD_HMS: re.compile(r"(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"),
    YMDHMS_INT: re.compile(r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})"),
    YMD_SLASH: re.compile(r"(\d{4})/(\d{2})/(\d{2})"),
    YM_DASH: re.compile(r"(\d{4})-(\d{2})"),
}

MS_PER_SECOND = 1000
MS_PER_HOUR = 3_600_000
MS_PER_DAY = 86_400_000


# ---------------------------------------------------------------------------------------------------------------
# UTC calendar


class UtcFields(NamedTuple):
    year: int
    month: int  # 1..12
    day: int
    hour: int
    minute: int
    second: int
    millisecond: int
    weekday: int  # Monday = 0 … Sunday = 6, as `datetime.date.weekday()`


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day number since 1970-01-01 (inverse of `days_from_civil`)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def days_in_month(year: int, month: int) -> int:
    if month == 12:
        return 31
    return days_from_civil(year, month + 1, 1) - days_from_civil(year, month, 1)


def utc_fields(ms: int) -> UtcFields:
    """The UTC calendar fields of an epoch-millisecond instant."""
    days, ms_of_day = divmod(ms, MS_PER_DAY)
    year, month, day = civil_from_days(days)
    hour, rest = divmod(ms_of_day, MS_PER_HOUR)
    minute, rest = divmod(rest, 60_000)
    second, millis = divmod(rest, MS_PER_SECOND)
    return UtcFields(year, month, day, hour, minute, second, millis, (days + 3) % 7)  # 1970-01-01 was a Thursday


def utc_ms(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, millisecond: int = 0
) -> int:
    """Epoch milliseconds of a UTC date and time (fields are not range-checked)."""
    return (
        days_from_civil(year, month, day) * MS_PER_DAY
        + hour * MS_PER_HOUR
        + minute * 60_000
        + second * MS_PER_SECOND
        + millisecond
    )


# ---------------------------------------------------------------------------------------------------------------
# formats


def _base_type(datatype: str) -> str:
    m = re.match(r"\s*([a-zA-Z_]+)", datatype)
    return m.group(1).lower() if m else datatype.strip().lower()


def _require_supported(fmt: str) -> None:
    if fmt not in SUPPORTED_FORMATS:
        raise InvalidModelError(
            f'Unsupported partition date format "{fmt}"; supported formats are: {", ".join(SUPPORTED_FORMATS)}'
        )


def check_format(fmt: str, datatype: str) -> None:
    """Refuse a partition format that the column type cannot hold (InvalidModelError naming format and type).

    Rules (precube's; Kylin only checks the format string and lets the SQL fail later):
    - string columns take every supported format, compared as text (all formats are zero-padded);
    - integer columns take the all-digit formats `yyyyMMdd` (int/bigint) and `yyyyMMddHHmmss` (bigint only);
    - DATE columns take the formats without a time of day; TIMESTAMP columns take every format;
    - any other type (double, boolean, decimal, …) cannot be a partition column.
    """
    _require_supported(fmt)
    base = _base_type(datatype)
    if base in _STRING_TYPES or base in _TIMESTAMP_TYPES:
        return
    if base in _INTEGER_TYPES:
        allowed = _INTEGER_FORMAT_TYPES.get(fmt)
        if allowed is None:
            raise InvalidModelError(
                f'Partition date format "{fmt}" does not fit integer column type "{datatype}"; '
                f'integer columns take "{YMD_INT}" or "{YMDHMS_INT}"'
            )
        if base not in allowed:
            raise InvalidModelError(
                f'Partition date format "{fmt}" does not fit column type "{datatype}": its values need '
                f"{' or '.join(sorted(allowed))}"
            )
        return
    if base in _DATE_TYPES:
        if fmt not in DATE_ONLY_FORMATS:
            raise InvalidModelError(
                f'Partition date format "{fmt}" has a time of day, which DATE column type "{datatype}" cannot hold'
            )
        return
    raise InvalidModelError(f'Column type "{datatype}" cannot be a partition column (partition date format "{fmt}")')


def _is_integer(datatype: str) -> bool:
    return _base_type(datatype) in _INTEGER_TYPES


def to_epoch_ms(value: str | int | dt.date | dt.datetime, fmt: str) -> int:
    """Epoch milliseconds (UTC) of a partition value written in `fmt` (Kylin's `DateFormat.stringToMillis`).

    `date` values are midnight UTC; naive `datetime` values are read as UTC, aware ones are converted.
    Integers are accepted for the all-digit formats (20240101 for `yyyyMMdd`). A value that does not match
    the format exactly (zero-padded, valid month/day/time) raises InvalidModelError naming value and format.
    """
    _require_supported(fmt)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return utc_ms(
            value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond // 1000
        )
    if isinstance(value, dt.date):
        return utc_ms(value.year, value.month, value.day)
    if isinstance(value, bool):  # bool is an int subclass; True is no date
        raise InvalidModelError(f'Partition value {value!r} is not a date in format "{fmt}"')
    if isinstance(value, int):
        if fmt not in _INTEGER_FORMAT_TYPES:
            raise InvalidModelError(f'Integer partition value {value} cannot be read with format "{fmt}"')
        value = str(value)
    m = _PATTERNS[fmt].fullmatch(value.strip())
    if not m:
        raise InvalidModelError(f'Partition value "{value}" does not match the date format "{fmt}"')
    groups = m.groups()
    year, month = int(groups[0]), int(groups[1])
    day = int(groups[2]) if len(groups) > 2 else 1
    hour = minute = second = millis = 0
    if len(groups) > 3:
        hour, minute, second = int(groups[3]), int(groups[4]), int(groups[5])
        if len(groups) > 6 and groups[6]:
            millis = int(groups[6][:3].ljust(3, "0"))
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month) and hour < 24 and minute < 60 and second < 60):
        raise InvalidModelError(f'Partition value "{value}" is not a valid date in format "{fmt}"')
    return utc_ms(year, month, day, hour, minute, second, millis)


def _ymd(f: UtcFields, sep: str) -> str:
    return f"{f.year:04d}{sep}{f.month:02d}{sep}{f.day:02d}"


def _hms(f: UtcFields, sep: str) -> str:
    return f"{f.hour:02d}{sep}{f.minute:02d}{sep}{f.second:02d}"


_FORMATTERS: dict[str, Callable[[UtcFields], str]] = {
    YMD_INT: lambda f: _ymd(f, ""),
    YMD_DASH: lambda f: _ymd(f, "-"),
    YMD_HMS: lambda f: f"{_ymd(f, '-')} {_hms(f, ':')}",
    YMDHMS_INT: lambda f: _ymd(f, "") + _hms(f, ""),
    YMD_SLASH: lambda f: _ymd(f, "/"),
    YM_DASH: lambda f: f"{f.year:04d}-{f.month:02d}",
}


def _fields_for_text(ms: int) -> UtcFields:
    f = utc_fields(ms)
    if not 0 <= f.year <= 9999:  # four-digit years only: MAX_TIME (an open end) has no column value
        raise SegmentRuleError(f"Segment boundary {ms} (year {f.year}) cannot be written as a partition value")
    return f


def from_epoch_ms(ms: int, fmt: str, datatype: str) -> str | int:
    """The partition column value at boundary `ms` (Kylin's `DateFormat.formatToDateStr`).

    Integer columns get an int (20240101); string columns the text in `fmt`; DATE and TIMESTAMP columns the
    ISO literal text (`2024-01-01`, `2024-01-01 00:00:00[.mmm]`) whatever `fmt` says, as their values are typed.
    Parts finer than the format are truncated (a `yyyy-MM-dd` boundary at 12:00 gives that day), exactly as
    Kylin formats segment boundaries; truncating both ends of every segment keeps segments disjoint.
    """
    check_format(fmt, datatype)
    f = _fields_for_text(ms)
    base = _base_type(datatype)
    if base in _DATE_TYPES:
        return _ymd(f, "-")
    if base in _TIMESTAMP_TYPES:
        text = f"{_ymd(f, '-')} {_hms(f, ':')}"
        return f"{text}.{f.millisecond:03d}" if f.millisecond else text
    text = _FORMATTERS[fmt](f)
    return int(text) if _is_integer(datatype) else text


def truncate_to_format(ms: int, fmt: str) -> int:
    """`ms` truncated to the granularity of `fmt` (what a boundary becomes once written in the column)."""
    _require_supported(fmt)
    return to_epoch_ms(_FORMATTERS[fmt](_fields_for_text(ms)), fmt)


def _literal(ms: int, fmt: str, datatype: str) -> str:
    value = from_epoch_ms(ms, fmt, datatype)
    base = _base_type(datatype)
    if base in _DATE_TYPES:
        return f"DATE '{value}'"
    if base in _TIMESTAMP_TYPES:
        return f"TIMESTAMP '{value}'"
    if isinstance(value, int):
        return str(value)
    return f"'{value}'"  # formatted dates contain only digits and - / : space, nothing to escape


def range_predicate(column: str, rng: TimeRange, fmt: str, datatype: str) -> str | None:
    """A Spark-SQL/ANSI predicate selecting `[rng.start, rng.end)` on the raw partition column, or None for a
    full range (Kylin's `PartitionDesc.DefaultPartitionConditionBuilder.buildDateRangeCondition`).

    `column` is used as given (quote it first if needed). A start <= 0 is written as 1970-01-01 (Kylin
    normalises it to 0); an open end (`MAX_TIME`) has no upper bound.
    """
    check_format(fmt, datatype)
    if rng.is_full:
        return None
    lower = f"{column} >= {_literal(max(rng.start, 0), fmt, datatype)}"
    if rng.end >= MAX_TIME:
        return lower
    return f"{lower} AND {column} < {_literal(rng.end, fmt, datatype)}"


PartitionValue = int | str | dt.date | dt.datetime


def range_bounds(rng: TimeRange, fmt: str, datatype: str) -> tuple[PartitionValue, PartitionValue | None] | None:
    """The values `range_predicate` compares the column with, typed as the column holds them: `low <= column <
    high` (high None: no upper bound), or None for a full range. Integer columns get an int, string columns the
    text in `fmt`, DATE columns a `date` and TIMESTAMP columns a naive `datetime` in UTC (the session's zone)."""
    check_format(fmt, datatype)
    if rng.is_full:
        return None
    base = _base_type(datatype)

    def value(ms: int) -> PartitionValue:
        raw = from_epoch_ms(ms, fmt, datatype)
        if base in _DATE_TYPES:
            return dt.date.fromisoformat(str(raw))
        if base in _TIMESTAMP_TYPES:
            return dt.datetime.fromisoformat(str(raw))
        return raw

    return value(max(rng.start, 0)), None if rng.end >= MAX_TIME else value(rng.end)


def segment_name(rng: TimeRange) -> str:
    """Kylin's `Segments.makeSegmentName`: `FULL_BUILD` for `[0, MAX)`, else `yyyyMMddHHmmss_yyyyMMddHHmmss` (UTC)."""
    if rng.is_full:
        return "FULL_BUILD"

    def stamp(ms: int) -> str:
        f = utc_fields(max(ms, 0))
        return _ymd(f, "") + _hms(f, "")

    return f"{stamp(rng.start)}_{stamp(rng.end)}"
