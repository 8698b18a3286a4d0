"""What `precube project config` and `precube model config` share: parsing the segment settings given on the
command line (auto-merge, its levels, volatile range, retention, first day of week) and printing them.

Kylin 5 keeps these in a project's `segment_config` (and the week start in the project property
`kylin.metadata.first-day-of-week`); a model's `segment_config` overrides them field by field (reference §1.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import typer
from rich.table import Table as RichTable

from precube.errors import InvalidInputError
from precube.metadata import AutoMergeTimeRange, RetentionRange, SegmentConfig, SegmentConfigOverride, VolatileRange

# The units a volatile range or a retention may be given in (Kylin's UI offers these; SIX_HOUR and HALF_DAY
# only exist as merge levels). QUARTER is stored as 3 months: Kylin's calendar shift has no QUARTER case, so
# a QUARTER volatile range would have no effect and a QUARTER retention would remove every segment (§1.4, §1.5).
RANGE_UNITS = (
    AutoMergeTimeRange.HOUR,
    AutoMergeTimeRange.DAY,
    AutoMergeTimeRange.WEEK,
    AutoMergeTimeRange.MONTH,
    AutoMergeTimeRange.QUARTER,
    AutoMergeTimeRange.YEAR,
)
WEEK_DAYS = ("monday", "sunday")
_LEVEL_ORDER = list(AutoMergeTimeRange)  # Kylin's AutoMergeTimeEnum codes follow this order
_RANGE_EXAMPLE = 'expected "N UNIT", e.g. "3 DAY" or "2 weeks"'

# The options both commands take. `--volatile`/`--no-volatile` and `--retention`/`--no-retention` are pairs of
# separate options (not Typer's `--x/--no-x` booleans) because the positive one takes a value.
AUTO_MERGE = typer.Option(
    None, "--auto-merge/--no-auto-merge", help="Merge segments automatically after builds.", show_default=False
)
MERGE_LEVELS = typer.Option(
    None,
    "--merge-levels",
    help="Comma-separated auto-merge levels: HOUR, SIX_HOUR, HALF_DAY, DAY, WEEK, MONTH, QUARTER, YEAR.",
    show_default=False,
)
MERGE_THRESHOLDS = typer.Option(
    None,
    "--merge-thresholds",
    help="Comma-separated auto-merge durations, e.g. 7d,28d (units h, d, w): seed 001's rule instead of the levels.",
    show_default=False,
)
VOLATILE = typer.Option(
    None,
    "--volatile",
    help='Keep the newest "N UNIT" of segments out of auto-merge (UNIT: HOUR, DAY, WEEK, MONTH, QUARTER, YEAR).',
    show_default=False,
)
NO_VOLATILE = typer.Option(False, "--no-volatile", help="Turn the volatile range off.")
RETENTION = typer.Option(
    None,
    "--retention",
    help='After builds, remove segments that end "N UNIT" or more before the newest one ends (UNIT as for --volatile).',
    show_default=False,
)
NO_RETENTION = typer.Option(False, "--no-retention", help="Turn retention off.")


def _unit(text: str, allowed: tuple[AutoMergeTimeRange, ...]) -> AutoMergeTimeRange | None:
    """The unit or level named by `text` (any case, `-` for `_`, singular or plural), if it is `allowed`."""
    name = text.strip().upper().replace("-", "_")
    for candidate in (name, name.removesuffix("S")):
        if candidate in AutoMergeTimeRange.__members__ and AutoMergeTimeRange(candidate) in allowed:
            return AutoMergeTimeRange(candidate)
    return None


def _choices(units: tuple[AutoMergeTimeRange, ...] | list[AutoMergeTimeRange]) -> str:
    names = [u.value for u in units]
    return f"{', '.join(names[:-1])} or {names[-1]}"


def parse_range(text: str, option: str) -> tuple[int, AutoMergeTimeRange]:
    """`"N UNIT"` (also `"NUNIT"`, any case, plural units) as a positive number and a unit; N QUARTER becomes
    3N MONTH. Errors name `option` and the bad part."""
    parts = text.split()
    if len(parts) == 1 and (glued := re.fullmatch(r"([0-9]+)([A-Za-z_-]+)", parts[0])):
        parts = [glued.group(1), glued.group(2)]
    if len(parts) != 2:
        raise InvalidInputError(f'{option}: "{text}" is not a range; {_RANGE_EXAMPLE}')
    number_text, unit_text = parts
    if not re.fullmatch(r"[0-9]+", number_text):
        raise InvalidInputError(f'{option}: "{number_text}" is not a positive whole number; {_RANGE_EXAMPLE}')
    number = int(number_text)
    if number < 1:
        off = option.replace("--", "--no-", 1)
        raise InvalidInputError(f"{option}: the number must be at least 1, not {number_text} (to turn it off: {off})")
    unit = _unit(unit_text, RANGE_UNITS)
    if unit is None:
        raise InvalidInputError(f'{option}: unknown unit "{unit_text}"; use {_choices(RANGE_UNITS)}')
    if unit is AutoMergeTimeRange.QUARTER:
        return number * 3, AutoMergeTimeRange.MONTH
    return number, unit


def parse_levels(text: str) -> list[AutoMergeTimeRange]:
    """Comma-separated auto-merge levels, deduplicated and in Kylin's order (HOUR … YEAR)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InvalidInputError(f"--merge-levels: give at least one of {_choices(_LEVEL_ORDER)}")
    levels = set()
    for name in names:
        level = _unit(name, tuple(_LEVEL_ORDER))
        if level is None:
            raise InvalidInputError(f'--merge-levels: unknown level "{name}"; use {_choices(_LEVEL_ORDER)}')
        levels.add(level)
    return sorted(levels, key=_LEVEL_ORDER.index)


_DURATION_MS = {"h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


def parse_thresholds(text: str) -> list[int]:
    """Comma-separated durations (`7d`, `28d`, `12h`, `2w`) as milliseconds, deduplicated, largest first."""
    found: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        m = re.fullmatch(r"([0-9]+)\s*([hdw])", part.lower())
        if m is None or int(m.group(1)) < 1:
            raise InvalidInputError(f'--merge-thresholds: "{part}" is not a duration like 7d, 28d, 12h or 2w')
        found.add(int(m.group(1)) * _DURATION_MS[m.group(2)])
    return sorted(found, reverse=True)


def thresholds_text(thresholds_ms: list[int]) -> str:
    """`28d, 7d`: durations as `--merge-thresholds` takes them, largest first."""

    def one(ms: int) -> str:
        unit = next((u for u in ("d", "h") if ms % _DURATION_MS[u] == 0), None)
        return f"{ms // _DURATION_MS[unit]}{unit}" if unit else f"{ms} ms"

    return ", ".join(one(ms) for ms in sorted(thresholds_ms, reverse=True))


def parse_first_day(text: str) -> str:
    day = text.strip().lower()
    if day not in WEEK_DAYS:
        raise InvalidInputError(f'--first-day-of-week: "{text}" is not monday or sunday')
    return day


@dataclass(frozen=True)
class SegmentEdits:
    """The changes asked for on the command line, already validated (None / False: leave as it is)."""

    auto_merge: bool | None = None
    levels: list[AutoMergeTimeRange] | None = None
    thresholds: list[int] | None = None
    volatile: tuple[int, AutoMergeTimeRange] | None = None
    volatile_off: bool = False
    retention: tuple[int, AutoMergeTimeRange] | None = None
    retention_off: bool = False

    @classmethod
    def parse(
        cls,
        auto_merge: bool | None,
        merge_levels: str | None,
        volatile: str | None,
        no_volatile: bool,
        retention: str | None,
        no_retention: bool,
        merge_thresholds: str | None = None,
    ) -> SegmentEdits:
        if volatile is not None and no_volatile:
            raise InvalidInputError("give --volatile or --no-volatile, not both")
        if retention is not None and no_retention:
            raise InvalidInputError("give --retention or --no-retention, not both")
        if merge_levels is not None and merge_thresholds is not None:
            raise InvalidInputError("give --merge-levels or --merge-thresholds, not both: auto-merge uses one rule")
        return cls(
            auto_merge=auto_merge,
            levels=None if merge_levels is None else parse_levels(merge_levels),
            thresholds=None if merge_thresholds is None else parse_thresholds(merge_thresholds),
            volatile=None if volatile is None else parse_range(volatile, "--volatile"),
            volatile_off=no_volatile,
            retention=None if retention is None else parse_range(retention, "--retention"),
            retention_off=no_retention,
        )

    def __bool__(self) -> bool:
        return self != SegmentEdits()

    def changes(self, current: SegmentConfig) -> dict[str, Any]:
        """The `segment_config` fields to set, given the settings in force now (turning a range off keeps its
        number and unit, as Kylin's switch does)."""
        update: dict[str, Any] = {}
        if self.auto_merge is not None:
            update["auto_merge_enabled"] = self.auto_merge
        if self.levels is not None:  # the calendar levels: no thresholds
            update["auto_merge_time_ranges"] = list(self.levels)
            update["auto_merge_thresholds_ms"] = []
        if self.thresholds is not None:
            update["auto_merge_thresholds_ms"] = list(self.thresholds)
        if self.volatile is not None:
            number, unit = self.volatile
            update["volatile_range"] = VolatileRange(
                volatile_range_number=number, volatile_range_enabled=True, volatile_range_type=unit
            )
        elif self.volatile_off:
            update["volatile_range"] = current.volatile_range.model_copy(update={"volatile_range_enabled": False})
        if self.retention is not None:
            number, unit = self.retention
            update["retention_range"] = RetentionRange(
                retention_range_number=number, retention_range_enabled=True, retention_range_type=unit
            )
        elif self.retention_off:
            update["retention_range"] = current.retention_range.model_copy(update={"retention_range_enabled": False})
        return update


def _volatile_text(vr: VolatileRange) -> str:
    return f"{vr.volatile_range_number} {vr.volatile_range_type.value}" if vr.volatile_range_enabled else "off"


def _retention_text(rr: RetentionRange) -> str:
    return f"{rr.retention_range_number} {rr.retention_range_type.value}" if rr.retention_range_enabled else "off"


def settings_table(
    config: SegmentConfig, first_day: str, override: SegmentConfigOverride | None = None, model: bool = False
) -> RichTable:
    """The settings as a table; for a model (`model=True`) a third column says whether each comes from the
    model's own override or from the project."""
    levels = ", ".join(lv.value for lv in config.auto_merge_time_ranges) or "(none)"
    if config.auto_merge_thresholds_ms:
        levels = "(thresholds instead)"
    thresholds = thresholds_text(config.auto_merge_thresholds_ms) or "(none)"
    rows = [
        ("auto-merge", "on" if config.auto_merge_enabled else "off", "auto_merge_enabled"),
        ("merge levels", levels, "auto_merge_time_ranges"),
        ("merge thresholds", thresholds, "auto_merge_thresholds_ms"),
        ("volatile range", _volatile_text(config.volatile_range), "volatile_range"),
        ("retention", _retention_text(config.retention_range), "retention_range"),
        ("first day of week", first_day, ""),  # a project property in Kylin, never per model
    ]
    view = RichTable("setting", "value", *(["from"] if model else []))
    for label, value, field_name in rows:
        if not model:
            view.add_row(label, value)
            continue
        own = override is not None and field_name != "" and getattr(override, field_name) is not None
        view.add_row(label, value, "model" if own else "project")
    return view
