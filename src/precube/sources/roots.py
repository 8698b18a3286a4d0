"""Which file paths a remote user may register as tables: only those inside the directories an administrator
listed (`[server] source_roots`). A path is resolved first (symlinks followed, `..` collapsed) and must then lie
inside a resolved root; a link inside the data that points out of every root is refused too, so nothing a
request names can make the server read a file the administrator did not offer."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from precube.sources.errors import SourceError

SETTING = "[server] source_roots"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_MAX_PATH = 4096
_MAX_ENTRIES = 100_000  # entries walked when looking for links out of the roots


class SourceAccessError(SourceError):
    """A path a remote user gave lies outside the directories the server may read tables from (HTTP 403)."""

    code = "SOURCE_FORBIDDEN"


def _scheme(text: str) -> str | None:
    found = _SCHEME.match(text)
    # one letter before ':' would be a Windows drive, never a URI scheme precube reads
    return found.group(1).lower() if found and len(found.group(1)) > 1 else None


def _root_paths(roots: Sequence[str]) -> list[Path]:
    return [Path(r).expanduser().resolve() for r in roots if _scheme(r) is None]


def _inside(path: Path, roots: list[Path]) -> Path | None:
    """The root `path` lies in (`is_relative_to` compares whole components: /data2 is not in /data)."""
    return next((r for r in roots if path == r or path.is_relative_to(r)), None)


def check_source_path(text: str, roots: Sequence[str]) -> str:
    """`text` as the absolute path (or URI) to register, if it lies inside one of `roots`; else
    `SourceAccessError` naming the setting. Raises before anything is read."""
    if not roots:
        raise SourceAccessError(f"loading files through the server is disabled: {SETTING} lists no directories")
    if not text or len(text) > _MAX_PATH or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise SourceAccessError("the path is empty, too long or holds control characters")
    scheme = _scheme(text)
    if scheme == "file":
        local = re.sub(r"^file:(//localhost|//)?", "", text, flags=re.IGNORECASE)
        if not local.startswith("/"):
            raise SourceAccessError(f"{text!r} is not an absolute file: URI")
        text = local
    elif scheme is not None:
        return _check_uri(text, roots)
    path = Path(text)
    if not path.is_absolute():
        raise SourceAccessError(f"{text!r} is not an absolute path: give a path inside {SETTING}")
    resolved = path.resolve()  # follows every symlink, collapses `..`
    local_roots = _root_paths(roots)
    root = _inside(resolved, local_roots)
    if root is None:
        raise SourceAccessError(f"{text!r} is outside the directories of {SETTING}")
    _check_links(resolved, local_roots)
    return str(resolved)


def _check_uri(text: str, roots: Sequence[str]) -> str:
    """A URI is allowed only under a root that is a URI prefix of the same scheme, without `..` segments."""
    parts = text.split("/")
    if any(p in ("..", ".") for p in parts[3:]):
        raise SourceAccessError(f"{text!r} holds '.' or '..' segments")
    for root in roots:
        if _scheme(root) is None:
            continue
        prefix = root.rstrip("/")
        if text == prefix or text.startswith(prefix + "/"):
            return text
    raise SourceAccessError(f"{text!r} is outside the URI prefixes of {SETTING}")


def _check_links(location: Path, roots: list[Path]) -> None:
    """Refuse a data directory holding a link that resolves outside every root (the readers follow links)."""
    if not location.is_dir():
        return
    seen = 0
    for directory, dirs, files in os.walk(location, followlinks=False):
        for name in [*dirs, *files]:
            seen += 1
            if seen > _MAX_ENTRIES:
                raise SourceAccessError(f"{location} holds more than {_MAX_ENTRIES:,} files and directories")
            entry = Path(directory, name)
            if entry.is_symlink() and _inside(entry.resolve(), roots) is None:
                raise SourceAccessError(f"{entry} links outside the directories of {SETTING}")
