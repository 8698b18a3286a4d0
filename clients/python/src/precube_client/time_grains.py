"""Superset's time grains (ISO 8601 durations) as precube SQL over a date or timestamp column, e.g. a model's
partition column: Spark's DATE_TRUNC, which precube answers from a layout holding the column (or pushes down).
Apart from the engine spec so that it is usable, and tested, without Superset installed."""

from __future__ import annotations

TIME_GRAIN_EXPRESSIONS: dict[str | None, str] = {
    None: "{col}",
    "PT1S": "DATE_TRUNC('SECOND', {col})",
    "PT1M": "DATE_TRUNC('MINUTE', {col})",
    "PT1H": "DATE_TRUNC('HOUR', {col})",
    "P1D": "DATE_TRUNC('DAY', {col})",
    "P1W": "DATE_TRUNC('WEEK', {col})",
    "P1M": "DATE_TRUNC('MONTH', {col})",
    "P3M": "DATE_TRUNC('QUARTER', {col})",
    "P1Y": "DATE_TRUNC('YEAR', {col})",
    # weeks starting on Sunday and ending on Saturday, as Superset names them
    "1969-12-28T00:00:00Z/P1W": "DATE_SUB(DATE_TRUNC('WEEK', DATE_ADD({col}, 1)), 1)",
    "P1W/1970-01-03T00:00:00Z": "DATE_ADD(DATE_TRUNC('WEEK', DATE_ADD({col}, 1)), 5)",
}
EPOCH_TO_DATETIME = "TIMESTAMP_SECONDS({col})"
EPOCH_MS_TO_DATETIME = "TIMESTAMP_MILLIS({col})"


def datetime_literal(target_type: str, iso: str) -> str | None:
    """The SQL literal of an ISO datetime `iso` for a column of `target_type` (Superset's `convert_dttm`); None
    for a type it cannot compare with."""
    base = target_type.strip().upper().split("(", 1)[0]
    if base == "DATE":
        return f"CAST('{iso[:10]}' AS DATE)"
    if base in ("TIMESTAMP", "TIMESTAMP_NTZ", "DATETIME"):
        return f"CAST('{iso.replace('T', ' ')}' AS TIMESTAMP)"
    return None
