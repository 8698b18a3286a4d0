"""`precube project config` and `precube model config`: segment settings through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precube.cli.app import run
from precube.jobs.lifecycle import FIRST_DAY_OF_WEEK, segment_config
from precube.metadata import (
    AutoMergeTimeRange,
    Dataflow,
    IndexPlan,
    Model,
    Project,
    RetentionRange,
    SegmentConfig,
    VolatileRange,
    open_store,
)
from precube.settings import load_settings
from tests.cli.home import ssb_home
from tests.modeling.conftest import ssb_spec_data

T = AutoMergeTimeRange


@pytest.fixture
def home(tmp_path: Path, ssb_dir: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    args = ssb_home(tmp_path / "home", ssb_dir, ssb_spec_data())
    capsys.readouterr()
    return args


def _stored(home: list[str]) -> tuple[Project, Model, int, int]:
    """The project, the model, and the mvcc of its index plan and dataflow, read back from the store."""
    settings = load_settings(None, home=Path(home[1]))
    with open_store(settings.metadata_url, settings.metadata.table) as store, store.read("ssb") as tx:
        (model,) = tx.list(Model)
        return tx.project(), model, tx.require(IndexPlan, model.uuid).mvcc, tx.require(Dataflow, model.uuid).mvcc


def _rows(out: str) -> dict[str, list[str]]:
    """A printed settings table as {setting: [value, (from)]}."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) >= 2 and cells[0] and cells[0] != "setting":
            rows[cells[0]] = cells[1:]
    return rows


def test_show_defaults(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*home, "project", "config", "-p", "ssb"]) == 0
    out = capsys.readouterr().out
    assert "updated" not in out
    assert _rows(out) == {
        "auto-merge": ["off"],
        "merge levels": ["WEEK, MONTH, QUARTER, YEAR"],
        "merge thresholds": ["(none)"],
        "volatile range": ["off"],
        "retention": ["off"],
        "first day of week": ["monday"],
        "pushdown": ["on"],
    }
    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["auto-merge"] == ["off", "project"]
    assert rows["merge levels"] == ["WEEK, MONTH, QUARTER, YEAR", "project"]
    assert rows["first day of week"] == ["monday", "project"]
    project, model, _, _ = _stored(home)
    assert model.segment_config is None
    assert project.segment_config == SegmentConfig()


def test_set_project_settings(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["project", "config", "-p", "ssb", "--auto-merge", "--merge-levels", "year, days,Week"]
    argv += ["--volatile", "2 days", "--retention", "1 Quarter", "--first-day-of-week", "Sunday"]
    assert run([*home, *argv]) == 0
    out = capsys.readouterr().out
    assert "updated the settings of project ssb" in out
    assert _rows(out)["retention"] == ["3 MONTH"]
    project, _, _, _ = _stored(home)
    config = project.segment_config
    assert config.auto_merge_enabled is True
    assert config.auto_merge_time_ranges == [T.DAY, T.WEEK, T.YEAR]  # Kylin's order, whatever the input order
    assert config.volatile_range == VolatileRange(
        volatile_range_number=2, volatile_range_enabled=True, volatile_range_type=T.DAY
    )
    # a QUARTER has no case in Kylin's calendar shift (retention would remove everything): kept as 3 months
    assert config.retention_range == RetentionRange(
        retention_range_number=3, retention_range_enabled=True, retention_range_type=T.MONTH
    )
    assert project.override_kylin_properties == {FIRST_DAY_OF_WEEK: "sunday"}

    # turning off keeps the rest, and the number and unit of what is turned off
    assert (
        run([*home, "project", "config", "-p", "ssb", "--no-auto-merge", "--no-volatile", "--retention", "4HOURS"]) == 0
    )
    rows = _rows(capsys.readouterr().out)
    assert rows["auto-merge"] == ["off"] and rows["volatile range"] == ["off"] and rows["retention"] == ["4 HOUR"]
    project, _, _, _ = _stored(home)
    config = project.segment_config
    assert config.auto_merge_enabled is False
    assert config.auto_merge_time_ranges == [T.DAY, T.WEEK, T.YEAR]
    assert config.volatile_range == VolatileRange(
        volatile_range_number=2, volatile_range_enabled=False, volatile_range_type=T.DAY
    )
    assert config.retention_range.retention_range_number == 4
    assert config.retention_range.retention_range_type is T.HOUR
    assert project.override_kylin_properties[FIRST_DAY_OF_WEEK] == "sunday"
    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb"]) == 0
    assert _rows(capsys.readouterr().out)["first day of week"] == ["sunday", "project"]

    # the first day of week alone
    assert run([*home, "project", "config", "-p", "ssb", "--first-day-of-week", "MONDAY"]) == 0
    assert _rows(capsys.readouterr().out)["first day of week"] == ["monday"]
    project, _, _, _ = _stored(home)
    assert project.override_kylin_properties == {FIRST_DAY_OF_WEEK: "monday"}
    assert project.segment_config.retention_range.retention_range_number == 4


def test_model_override_and_inherit(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*home, "project", "config", "-p", "ssb", "--auto-merge", "--retention", "6 months"]) == 0
    _, before, plan_mvcc, df_mvcc = _stored(home)
    capsys.readouterr()

    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb", "--volatile", "3 week"]) == 0
    out = capsys.readouterr().out
    assert "updated the segment settings of model ssb" in out
    rows = _rows(out)
    assert rows["volatile range"] == ["3 WEEK", "model"]
    assert rows["auto-merge"] == ["on", "project"]
    assert rows["retention"] == ["6 MONTH", "project"]
    project, model, plan_after, df_after = _stored(home)
    assert model.segment_config is not None
    assert model.segment_config.volatile_range == VolatileRange(
        volatile_range_number=3, volatile_range_enabled=True, volatile_range_type=T.WEEK
    )
    assert model.segment_config.auto_merge_enabled is None and model.segment_config.retention_range is None
    effective = segment_config(project, model)
    assert effective.auto_merge_enabled is True
    assert effective.retention_range.retention_range_number == 6
    assert effective.volatile_range.volatile_range_number == 3
    # only the model document changed: no new semantic version, index plan and dataflow untouched
    assert model.semantic_version == before.semantic_version
    assert (plan_after, df_after) == (plan_mvcc, df_mvcc)

    # the project changes later: the model follows it except for what it overrides
    assert run([*home, "project", "config", "-p", "ssb", "--no-auto-merge", "--volatile", "1 day"]) == 0
    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb", "--no-retention"]) == 0
    rows = _rows(capsys.readouterr().out.split("updated the segment settings of model")[-1])
    assert rows["auto-merge"] == ["off", "project"]
    assert rows["volatile range"] == ["3 WEEK", "model"]
    assert rows["retention"] == ["off", "model"]
    project, model, _, _ = _stored(home)
    effective = segment_config(project, model)
    assert effective.retention_range == RetentionRange(
        retention_range_number=6, retention_range_enabled=False, retention_range_type=T.MONTH
    )
    assert project.segment_config.retention_range.retention_range_enabled is True

    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb", "--inherit"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert {r[1] for r in rows.values()} == {"project"}
    assert rows["volatile range"] == ["1 DAY", "project"] and rows["retention"] == ["6 MONTH", "project"]
    project, model, _, _ = _stored(home)
    assert model.segment_config is None
    assert segment_config(project, model) == project.segment_config

    # --inherit with other options: start over from the project, then override those given
    argv = ["model", "config", "-p", "ssb", "-m", "ssb", "--volatile", "5 hours"]
    assert run([*home, *argv]) == 0
    assert run([*home, *argv[:6], "--inherit", "--merge-levels", "month"]) == 0
    _, model, _, _ = _stored(home)
    assert model.segment_config is not None
    assert model.segment_config.volatile_range is None
    assert model.segment_config.auto_merge_time_ranges == [T.MONTH]


UNITS = "use HOUR, DAY, WEEK, MONTH, QUARTER or YEAR"
LEVELS = "HOUR, SIX_HOUR, HALF_DAY, DAY, WEEK, MONTH, QUARTER or YEAR"
EXAMPLE = 'expected "N UNIT", e.g. "3 DAY" or "2 weeks"'


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--volatile", "2 fortnights", f'--volatile: unknown unit "fortnights"; {UNITS}'),
        ("--retention", "1 SIX_HOUR", f'--retention: unknown unit "SIX_HOUR"; {UNITS}'),
        ("--volatile", "two days", f'--volatile: "two" is not a positive whole number; {EXAMPLE}'),
        ("--retention", "-1 day", f'--retention: "-1" is not a positive whole number; {EXAMPLE}'),
        ("--retention", "0 day", "--retention: the number must be at least 1, not 0 (to turn it off: --no-retention)"),
        ("--volatile", "day", f'--volatile: "day" is not a range; {EXAMPLE}'),
        ("--merge-levels", "week,decade", f'--merge-levels: unknown level "decade"; use {LEVELS}'),
        ("--merge-levels", " , ", f"--merge-levels: give at least one of {LEVELS}"),
    ],
)
def test_bad_input_is_one_line(
    home: list[str], capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    for command in (["project", "config", "-p", "ssb"], ["model", "config", "-p", "ssb", "-m", "ssb"]):
        assert run([*home, *command, "--auto-merge", option, value]) == 1
        captured = capsys.readouterr()
        assert captured.err.strip() == f"error: {message}"
        assert "updated" not in captured.out
    project, model, _, _ = _stored(home)
    assert project.segment_config == SegmentConfig()  # nothing half-applied
    assert model.segment_config is None


def test_other_bad_input(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run([*home, "project", "config", "-p", "ssb", "--first-day-of-week", "friday"]) == 1
    assert capsys.readouterr().err.strip() == 'error: --first-day-of-week: "friday" is not monday or sunday'
    assert run([*home, "project", "config", "-p", "ssb", "--volatile", "1 day", "--no-volatile"]) == 1
    assert capsys.readouterr().err.strip() == "error: give --volatile or --no-volatile, not both"
    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb", "--retention", "1 day", "--no-retention"]) == 1
    assert capsys.readouterr().err.strip() == "error: give --retention or --no-retention, not both"
    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb", "--first-day-of-week", "sunday"]) == 1
    assert "is a project setting" in capsys.readouterr().err
    assert run([*home, "model", "config", "-p", "ssb", "-m", "nope"]) == 1
    assert "nope" in capsys.readouterr().err
    project, model, _, _ = _stored(home)
    assert project.override_kylin_properties == {}
    assert model.segment_config is None


def test_pushdown_on_and_off(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`--pushdown off` makes a query no layout answers (nothing is built) an error; `on` lets the source
    tables answer it, and the answer says why."""
    sql = "select count(*) as n from ssb.lineorder where lo_discount = 3"
    query = [*home, "query", "-p", "ssb", sql, "--format", "json", "--no-cache"]
    assert run([*home, "project", "config", "-p", "ssb", "--pushdown", "off"]) == 0
    assert _rows(capsys.readouterr().out)["pushdown"] == ["off"]
    assert _stored(home)[0].override_kylin_properties["kylin.query.pushdown-enabled"] == "false"
    assert run(query) == 1
    err = capsys.readouterr().err
    assert "no layout can answer the query" in err and "kylin.query.pushdown-enabled is false" in err
    assert run([*home, "project", "config", "-p", "ssb", "--pushdown", "on"]) == 0
    assert _rows(capsys.readouterr().out)["pushdown"] == ["on"]
    assert run(query) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["pushdown"] is True and answer["pushdown_reason"] and answer["rows"][0][0] > 0
    assert run([*home, "project", "config", "-p", "ssb", "--pushdown", "maybe"]) == 2


def test_merge_thresholds_replace_the_levels(home: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`--merge-thresholds 7d,28d` (seed 001) is stored in ms, largest first, and `--merge-levels` brings the
    calendar levels back; the two in one command are refused."""
    assert run([*home, "project", "config", "-p", "ssb", "--merge-thresholds", "7d, 28d,7D"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["merge thresholds"] == ["28d, 7d"] and rows["merge levels"] == ["(thresholds instead)"]
    project, _, _, _ = _stored(home)
    assert project.segment_config.auto_merge_thresholds_ms == [28 * 86_400_000, 7 * 86_400_000]
    assert run([*home, "model", "config", "-p", "ssb", "-m", "ssb", "--merge-levels", "month"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert rows["merge levels"] == ["MONTH", "model"] and rows["merge thresholds"] == ["(none)", "model"]
    assert run([*home, "project", "config", "-p", "ssb", "--merge-thresholds", "7 days"]) == 1
    assert '"7 days" is not a duration like 7d' in capsys.readouterr().err
    assert run([*home, "project", "config", "-p", "ssb", "--merge-thresholds", "7d", "--merge-levels", "WEEK"]) == 1
    assert "not both" in capsys.readouterr().err
