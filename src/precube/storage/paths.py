"""Where built data lives (DESIGN §4):

    {root}/{project}/{model_uuid}/{segment_id}/{layout_id}/part-*.parquet

A segment directory is new for every build, refresh and merge, so files are never rewritten in place;
data becomes visible only when the metadata that points at it commits.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse


def segment_path(root: str, project: str, model_uuid: str, segment_id: str) -> str:
    return f"{root.rstrip('/')}/{project}/{model_uuid}/{segment_id}"


def layout_path(root: str, project: str, model_uuid: str, segment_id: str, layout_id: int) -> str:
    return f"{segment_path(root, project, model_uuid, segment_id)}/{layout_id}"


def local_path(path: str) -> Path | None:
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return Path(parsed.path if parsed.scheme else path)
    return None


def is_local(path: str) -> bool:
    return local_path(path) is not None
