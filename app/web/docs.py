"""The interactive API explorer, served from vendored files (no CDN, no inline script)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Angelia API</title>
<link rel="stylesheet" href="/static/vendor/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/static/vendor/swagger-ui-bundle.js"></script>
<script src="/static/api-docs.js"></script>
</body>
</html>
"""


@router.get("/docs", response_class=HTMLResponse)
async def api_docs() -> HTMLResponse:
    """Swagger UI for the OpenAPI spec at /openapi.json."""
    return HTMLResponse(_PAGE)
