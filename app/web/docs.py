"""The API's documentation: a reference page in the app's layout, drawn from the OpenAPI
document (app/web/api_reference.py), and the interactive Swagger UI explorer, served from
vendored files (no CDN, no inline script)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.web.api_reference import reference
from app.web.context import base_context
from app.web.deps import StateDep

router = APIRouter(include_in_schema=False)

# Swagger UI's own markup cannot be read well by a screen reader (controls inside
# controls, low contrast): the page says first where the readable reference is.
_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Angelia API explorer</title>
<link rel="stylesheet" href="/static/vendor/swagger-ui.css">
</head>
<body>
<p><a href="/api-reference">Read the API reference</a> (the same document as a plain page,
for screen readers and keyboards).</p>
<div id="swagger-ui"></div>
<script src="/static/vendor/swagger-ui-bundle.js"></script>
<script src="/static/api-docs.js"></script>
</body>
</html>
"""


@router.get("/api-reference", response_class=HTMLResponse)
async def api_reference(request: Request, state: StateDep) -> HTMLResponse:
    """Every operation and schema of /openapi.json as one server-rendered page."""
    context = base_context(request, state) | {
        "reference": reference(request.app.openapi()),
        "active_nav": "api",
    }
    return state.templates.TemplateResponse(request, "api_reference.html", context)


@router.get("/docs", response_class=HTMLResponse)
async def api_docs() -> HTMLResponse:
    """Swagger UI for the OpenAPI spec at /openapi.json."""
    return HTMLResponse(_PAGE)
