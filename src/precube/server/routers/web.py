"""The web UI's static shell: `/` (index.html) and `/web/…` (ES modules, CSS, icon) from the package's `web`
folder. These are the only paths besides `/health` served without credentials: they hold no data (every
piece of data comes from the REST API, which the page calls with the user's HTTP Basic credentials).

The files served are a fixed map read once from the package (URL path → bytes and media type): a request
never names a file of its own, so nothing outside that folder can be reached. Every answer carries a strict
Content-Security-Policy (scripts, styles and connections to this origin only, no inline script), `nosniff`,
and no caching of the page itself (its modules are revalidated by ETag)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from precube.metadata import NotFoundError
from precube.server.security import public

router = APIRouter(tags=["web"], dependencies=[Depends(public())])

PREFIX = "/web/"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


def _load() -> dict[str, Asset]:
    """Every file of the package's `web` folder by its URL path (`/web/js/app.js`), and `/` for index.html."""
    root = resources.files("precube").joinpath("web")
    found: dict[str, Asset] = {}

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
                continue
            suffix = entry.name[entry.name.rfind(".") :] if "." in entry.name else ""
            if suffix not in TYPES:
                continue  # only the kinds of file the UI is made of
            body = entry.read_bytes()
            found[f"{PREFIX}{prefix}{entry.name}"] = Asset(body, TYPES[suffix], hashlib.sha256(body).hexdigest()[:20])

    walk(root, "")
    found["/"] = found.pop(f"{PREFIX}index.html")
    return found


ASSETS = _load()
PATHS = frozenset(ASSETS)  # the exact paths `Authenticate` lets through without credentials


def _answer(request: Request, path: str) -> Response:
    asset = ASSETS[path]
    headers = dict(HEADERS)
    if path == "/":
        headers["Cache-Control"] = "no-store"  # a new version of the UI is picked up at the next load
    else:
        headers["Cache-Control"] = "no-cache"  # revalidated each time: an upgrade never mixes old and new modules
        headers["ETag"] = f'"{asset.etag}"'
        if request.headers.get("if-none-match") == headers["ETag"]:
            return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


@router.get("/", include_in_schema=False)
def index(request: Request) -> Response:
    """The single page of the UI; its routes are the URL's hash (`#/projects/ssb/models/ssb/segments`)."""
    return _answer(request, "/")


@router.get(PREFIX + "{name:path}", include_in_schema=False)
def asset(request: Request, name: str) -> Response:
    path = PREFIX + name
    if path not in ASSETS:  # (only with credentials: `Authenticate` lets nothing but ASSETS through without)
        raise NotFoundError(f"no web asset {name[:100]!r}")
    return _answer(request, path)
