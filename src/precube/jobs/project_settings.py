"""A project's own settings: its segment settings (auto-merge, volatile range, retention) and its overridden
Kylin properties (pushdown, first day of week, …). One function changes them for `precube project config`
and for the server's `segment_config`, `push_down_config` and `project_config` endpoints."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from precube.errors import InvalidInputError
from precube.jobs.lifecycle import FIRST_DAY_OF_WEEK
from precube.metadata import MetadataStore, Project
from precube.metadata.project import SegmentConfig
from precube.query.session import PUSHDOWN_PROPERTY

_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,199}$")
_MAX_VALUE = 4096
# the properties precube reads, with the values each accepts
_CHOICES: dict[str, tuple[str, ...]] = {
    PUSHDOWN_PROPERTY: ("true", "false"),
    FIRST_DAY_OF_WEEK: ("monday", "sunday"),
}


def pushdown_enabled(project: Project) -> bool:
    """May queries no layout answers run on the source tables (as the query session reads the property)."""
    return project.override_kylin_properties.get(PUSHDOWN_PROPERTY, "true").strip().lower() != "false"


def check_properties(properties: Mapping[str, str | None]) -> dict[str, str | None]:
    """Property names are dotted identifiers; values one line; those precube reads take one of their values.
    A None value removes the property."""
    checked: dict[str, str | None] = {}
    for key, value in properties.items():
        if not _KEY.match(key):
            raise InvalidInputError(f"invalid property name {key!r}: letters, digits, '.', '_', '-'")
        if value is None:
            checked[key] = None
            continue
        if len(value) > _MAX_VALUE or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise InvalidInputError(f"property {key}: the value is too long or holds control characters")
        allowed = _CHOICES.get(key)
        if allowed is not None and value.strip().lower() not in allowed:
            raise InvalidInputError(f"property {key} must be {' or '.join(allowed)}, not {value!r}")
        checked[key] = value.strip().lower() if allowed is not None else value
    return checked


def update_project_settings(
    store: MetadataStore,
    project: str,
    writer: str,
    segment_changes: Mapping[str, Any] | None = None,
    properties: Mapping[str, str | None] | None = None,
) -> Project:
    """Change the fields of the project's segment config in `segment_changes` and set (None: remove) the
    `properties`; both are validated before anything is written."""
    props = check_properties(properties or {})
    with store.transaction(project, writer) as tx:
        p = tx.project()
        if segment_changes:
            merged = p.segment_config.model_dump() | dict(segment_changes)
            try:
                p.segment_config = SegmentConfig.model_validate(merged)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(x) for x in first["loc"])
                raise InvalidInputError(f"segment config {where}: {first['msg']}") from err
        for key, value in props.items():
            if value is None:
                p.override_kylin_properties.pop(key, None)
            else:
                p.override_kylin_properties[key] = value
        tx.update(p)
        return p
