"""Partition formats: values ↔ epoch ms (UTC), boundary values, range predicates, segment names, UTC calendar."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from precube.metadata.dataflow import MAX_TIME, TimeRange
from precube.modeling.errors import InvalidModelError, SegmentRuleError
from precube.modeling.partition_format import (
    DATE_ONLY_FORMATS,
    SUPPORTED_FORMATS,
    check_format,
    civil_from_days,
    days_from_civil,
    from_epoch_ms,
    range_bounds,
    range_predicate,
    segment_name,
    to_epoch_ms,
    truncate_to_format,
    utc_fields,
    utc_ms,
)
from tests.modeling.times import ts

JAN1 = ts("2024-01-01")
FEB1 = ts("2024-02-01")


@pytest.mark.parametrize(
    ("value", "fmt", "expected"),
    [
        ("20240101", "yyyyMMdd", "2024-01-01"),
        (20240101, "yyyyMMdd", "2024-01-01"),
        ("2024-01-01", "yyyy-MM-dd", "2024-01-01"),
        ("2024-02-29 13:45:06", "yyyy-MM-dd HH:mm:ss", "2024-02-29 13:45:06"),
        ("20240229134506", "yyyyMMddHHmmss", "2024-02-29 13:45:06"),
        (20240229134506, "yyyyMMddHHmmss", "2024-02-29 13:45:06"),
        ("2024/12/31", "yyyy/MM/dd", "2024-12-31"),
        ("2024-07", "yyyy-MM", "2024-07-01"),
        (" 2024-01-01 ", "yyyy-MM-dd", "2024-01-01"),
        ("1970-01-01", "yyyy-MM-dd", "1970-01-01"),
    ],
)
def test_to_epoch_ms_reads_every_format(value: str | int, fmt: str, expected: str) -> None:
    assert to_epoch_ms(value, fmt) == ts(expected)


def test_to_epoch_ms_keeps_milliseconds_of_timestamps() -> None:
    assert to_epoch_ms("2024-01-01 00:00:01.5", "yyyy-MM-dd HH:mm:ss") == JAN1 + 1500
    assert to_epoch_ms("2024-01-01 00:00:01.123456", "yyyy-MM-dd HH:mm:ss") == JAN1 + 1123


def test_to_epoch_ms_takes_dates_and_datetimes_in_utc() -> None:
    assert to_epoch_ms(dt.date(2024, 1, 1), "yyyy-MM-dd") == JAN1
    assert to_epoch_ms(dt.datetime(2024, 1, 1, 12, 0), "yyyy-MM-dd HH:mm:ss") == JAN1 + 12 * 3_600_000
    aware = dt.datetime(2024, 1, 1, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    assert to_epoch_ms(aware, "yyyy-MM-dd HH:mm:ss") == JAN1


@pytest.mark.parametrize(
    ("value", "fmt"),
    [
        ("2024-1-1", "yyyy-MM-dd"),  # not zero-padded
        ("2024011", "yyyyMMdd"),
        ("2023-02-29", "yyyy-MM-dd"),  # no leap day in 2023
        ("2024-13-01", "yyyy-MM-dd"),
        ("2024-01-01 24:00:00", "yyyy-MM-dd HH:mm:ss"),
        ("2024-01-01", "yyyy-MM-dd HH:mm:ss"),
        ("2024-01-01", "yyyyMMdd"),
        ("hello", "yyyy-MM"),
        (20240101, "yyyy-MM-dd"),  # an integer only for the all-digit formats
        (True, "yyyyMMdd"),
    ],
)
def test_to_epoch_ms_refuses_values_not_in_the_format(value: str | int, fmt: str) -> None:
    with pytest.raises(InvalidModelError, match=fmt):
        to_epoch_ms(value, fmt)


def test_unsupported_format_is_named() -> None:
    with pytest.raises(InvalidModelError, match="dd.MM.yyyy"):
        to_epoch_ms("01.01.2024", "dd.MM.yyyy")
    with pytest.raises(InvalidModelError, match="yyyyMM"):
        check_format("yyyyMM", "varchar(4096)")


@pytest.mark.parametrize(
    ("fmt", "datatype", "expected"),
    [
        ("yyyyMMdd", "integer", 20240101),
        ("yyyyMMdd", "bigint", 20240101),
        ("yyyyMMdd", "varchar(4096)", "20240101"),
        ("yyyyMMddHHmmss", "bigint", 20240101000000),
        ("yyyyMMddHHmmss", "string", "20240101000000"),
        ("yyyy-MM-dd", "varchar(4096)", "2024-01-01"),
        ("yyyy-MM-dd HH:mm:ss", "varchar(4096)", "2024-01-01 00:00:00"),
        ("yyyy/MM/dd", "varchar(10)", "2024/01/01"),
        ("yyyy-MM", "string", "2024-01"),
        ("yyyy-MM-dd", "date", "2024-01-01"),
        ("yyyyMMdd", "date", "2024-01-01"),  # typed columns get the ISO literal text
        ("yyyy-MM-dd HH:mm:ss", "timestamp", "2024-01-01 00:00:00"),
        ("yyyy-MM-dd", "timestamp", "2024-01-01 00:00:00"),
    ],
)
def test_from_epoch_ms_gives_the_column_value(fmt: str, datatype: str, expected: str | int) -> None:
    value = from_epoch_ms(JAN1, fmt, datatype)
    assert value == expected and type(value) is type(expected)


def test_from_epoch_ms_truncates_below_the_format_granularity() -> None:
    noon = ts("2024-01-15 12:30:45")
    assert from_epoch_ms(noon, "yyyy-MM-dd", "varchar(4096)") == "2024-01-15"
    assert from_epoch_ms(noon, "yyyy-MM", "varchar(4096)") == "2024-01"
    assert from_epoch_ms(noon, "yyyy-MM-dd HH:mm:ss", "varchar(4096)") == "2024-01-15 12:30:45"
    assert from_epoch_ms(noon + 7, "yyyy-MM-dd HH:mm:ss", "timestamp") == "2024-01-15 12:30:45.007"
    assert truncate_to_format(noon, "yyyy-MM-dd") == ts("2024-01-15")
    assert truncate_to_format(noon, "yyyy-MM") == ts("2024-01-01")
    assert truncate_to_format(noon, "yyyyMMddHHmmss") == noon


def test_from_epoch_ms_refuses_an_open_end() -> None:
    with pytest.raises(SegmentRuleError, match=str(MAX_TIME)):
        from_epoch_ms(MAX_TIME, "yyyy-MM-dd", "date")


@pytest.mark.parametrize(
    ("fmt", "datatype"),
    [
        ("yyyy-MM-dd", "integer"),  # the example of the brief: a dash format on an integer column
        ("yyyy/MM/dd", "bigint"),
        ("yyyyMMdd", "smallint"),  # 20240101 does not fit
        ("yyyyMMddHHmmss", "integer"),  # 20240101000000 does not fit an int
        ("yyyy-MM-dd HH:mm:ss", "date"),  # a DATE has no time of day
        ("yyyyMMddHHmmss", "date"),
        ("yyyy-MM-dd", "double"),
        ("yyyy-MM-dd", "boolean"),
    ],
)
def test_check_format_refuses_formats_the_column_cannot_hold(fmt: str, datatype: str) -> None:
    with pytest.raises(InvalidModelError) as err:
        check_format(fmt, datatype)
    assert fmt in str(err.value) and datatype in str(err.value)


@pytest.mark.parametrize("fmt", SUPPORTED_FORMATS)
def test_check_format_accepts_every_format_on_strings_and_timestamps(fmt: str) -> None:
    check_format(fmt, "varchar(4096)")
    check_format(fmt, "STRING")
    check_format(fmt, "timestamp")
    if fmt in DATE_ONLY_FORMATS:
        check_format(fmt, "date")


@pytest.mark.parametrize(
    ("fmt", "datatype", "expected"),
    [
        ("yyyy-MM-dd", "date", "d >= DATE '2024-01-01' AND d < DATE '2024-02-01'"),
        (
            "yyyy-MM-dd HH:mm:ss",
            "timestamp",
            "d >= TIMESTAMP '2024-01-01 00:00:00' AND d < TIMESTAMP '2024-02-01 00:00:00'",
        ),
        ("yyyyMMdd", "integer", "d >= 20240101 AND d < 20240201"),
        ("yyyyMMddHHmmss", "bigint", "d >= 20240101000000 AND d < 20240201000000"),
        ("yyyyMMdd", "varchar(4096)", "d >= '20240101' AND d < '20240201'"),
        ("yyyy-MM-dd", "varchar(4096)", "d >= '2024-01-01' AND d < '2024-02-01'"),
        ("yyyy/MM/dd", "string", "d >= '2024/01/01' AND d < '2024/02/01'"),
        ("yyyy-MM", "string", "d >= '2024-01' AND d < '2024-02'"),
        ("yyyy-MM-dd HH:mm:ss", "string", "d >= '2024-01-01 00:00:00' AND d < '2024-02-01 00:00:00'"),
    ],
)
def test_range_predicate_selects_the_half_open_range(fmt: str, datatype: str, expected: str) -> None:
    assert range_predicate("d", TimeRange.of(JAN1, FEB1), fmt, datatype) == expected


def test_range_predicate_full_open_end_and_zero_start() -> None:
    assert range_predicate("d", TimeRange.full(), "yyyy-MM-dd", "date") is None
    assert range_predicate("`T`.`D`", TimeRange.of(JAN1, MAX_TIME), "yyyyMMdd", "integer") == "`T`.`D` >= 20240101"
    assert range_predicate("d", TimeRange.of(0, JAN1), "yyyyMMdd", "integer") == "d >= 19700101 AND d < 20240101"


def test_range_predicate_checks_the_format() -> None:
    with pytest.raises(InvalidModelError, match="yyyy-MM-dd"):
        range_predicate("d", TimeRange.of(JAN1, FEB1), "yyyy-MM-dd", "integer")


def test_segment_names() -> None:
    assert segment_name(TimeRange.full()) == "FULL_BUILD"
    assert segment_name(TimeRange.of(JAN1, FEB1)) == "20240101000000_20240201000000"
    assert segment_name(TimeRange.of(ts("2010-01-01 08:00"), ts("2010-01-01 10:15:30"))) == (
        "20100101080000_20100101101530"
    )
    assert segment_name(TimeRange.of(0, JAN1)) == "19700101000000_20240101000000"


def test_zero_padded_text_order_is_time_order() -> None:
    """The reason string predicates may compare lexicographically."""
    instants = [ts("2009-12-31 23:59:59"), ts("2010-01-01"), ts("2010-01-09"), ts("2010-01-10"), ts("2010-10-01")]
    for fmt in SUPPORTED_FORMATS:
        texts = [str(from_epoch_ms(i, fmt, "string")) for i in instants]
        assert texts == sorted(texts)


# --- UTC calendar ---------------------------------------------------------------------------------------------

MAX_DATETIME_MS = ts("9999-12-31 23:59:59")


@given(st.integers(min_value=-62_135_596_800_000, max_value=MAX_DATETIME_MS))
def test_utc_fields_match_datetime(ms: int) -> None:
    d = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
    f = utc_fields(ms)
    assert (f.year, f.month, f.day, f.hour, f.minute, f.second) == (d.year, d.month, d.day, d.hour, d.minute, d.second)
    assert f.millisecond == d.microsecond // 1000 and f.weekday == d.weekday()
    assert utc_ms(f.year, f.month, f.day, f.hour, f.minute, f.second, f.millisecond) == ms


@given(st.integers(min_value=-(10**9), max_value=10**11))
def test_civil_days_round_trip_beyond_datetime(days: int) -> None:
    assert days_from_civil(*civil_from_days(days)) == days


def test_max_time_has_fields() -> None:
    f = utc_fields(MAX_TIME)
    assert (f.year, f.month, f.day) == (292278994, 8, 17)  # Long.MAX_VALUE in Java's Gregorian calendar


@given(
    st.dates(min_value=dt.date(1970, 1, 1), max_value=dt.date(9999, 12, 31)),
    st.sampled_from(SUPPORTED_FORMATS),
)
def test_boundaries_round_trip_through_every_format(day: dt.date, fmt: str) -> None:
    ms = to_epoch_ms(day.replace(day=1) if fmt == "yyyy-MM" else day, "yyyy-MM-dd")
    for datatype in ("varchar(4096)", "bigint" if fmt in ("yyyyMMdd", "yyyyMMddHHmmss") else "string"):
        assert to_epoch_ms(from_epoch_ms(ms, fmt, datatype), fmt) == ms


@pytest.mark.parametrize(
    ("fmt", "datatype", "expected"),
    [
        ("yyyyMMdd", "integer", (20240101, 20240201)),
        ("yyyyMMdd", "varchar(8)", ("20240101", "20240201")),
        ("yyyy-MM-dd", "string", ("2024-01-01", "2024-02-01")),
        ("yyyy-MM", "string", ("2024-01", "2024-02")),
        ("yyyy-MM-dd", "date", (dt.date(2024, 1, 1), dt.date(2024, 2, 1))),
        ("yyyy-MM-dd HH:mm:ss", "timestamp", (dt.datetime(2024, 1, 1), dt.datetime(2024, 2, 1))),
        ("yyyyMMddHHmmss", "bigint", (20240101000000, 20240201000000)),
    ],
)
def test_range_bounds_are_the_predicate_values_typed(fmt: str, datatype: str, expected: tuple[object, object]) -> None:
    """What a source plan compares file statistics with: the range predicate's values, in the column's type."""
    assert range_bounds(TimeRange.of(JAN1, FEB1), fmt, datatype) == expected
    assert range_bounds(TimeRange.full(), fmt, datatype) is None
    assert range_bounds(TimeRange.of(JAN1, MAX_TIME), fmt, datatype) == (expected[0], None)
