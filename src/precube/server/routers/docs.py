"""The API's OpenAPI description (`/openapi.json`) and Swagger UI (`/docs`), for any signed-in user. The
UI's script and style come from the `swagger-ui-bundle-v2` package and are served here (`/docs/assets/…`):
the server needs no CDN (hosts often have no internet)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from precube.metadata import NotFoundError
from precube.server.security import requires

router = APIRouter(tags=["docs"], dependencies=[Depends(requires())])

# the only files served: a fixed list, so no request names a path of its own
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


@router.get("/openapi.json", include_in_schema=False)
def openapi(request: Request) -> dict[str, Any]:
    schema: dict[str, Any] = request.app.openapi()
    # every operation needs HTTP Basic: said once, globally, so clients and Swagger UI's "Authorize" know
    schema.setdefault("components", {}).setdefault("securitySchemes", {})["basic"] = {"type": "http", "scheme": "basic"}
    schema["security"] = [{"basic": []}]
    return schema


@router.get("/docs", include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/openapi.json",
        title=f"{request.app.title} — REST API",
        swagger_js_url="/docs/assets/swagger-ui-bundle.js",
        swagger_css_url="/docs/assets/swagger-ui.css",
        swagger_favicon_url="/docs/assets/favicon-32x32.png",
    )


@router.get("/docs/assets/{name}", include_in_schema=False)
def asset(name: str) -> FileResponse:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise NotFoundError(f"no documentation asset {name[:100]!r}")
    from swagger_ui_bundle import swagger_ui_path

    return FileResponse(str(swagger_ui_path / name), media_type=media_type)
