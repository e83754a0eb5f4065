"""``/static``: the app's own scripts, styles and icons, kept by the browser but checked.

Every other response is ``no-store``. These files are public and the same for everyone, so
the browser may keep them, and with a kept copy it also keeps its compiled scripts (a
``no-store`` script is fetched and compiled afresh on every page). It asks again on every
use (``no-cache``: the ETag comes back as 304), so an upgraded Angelia never runs stale
files. Caching adds nothing to what a program answering on this port while Angelia is down
could do: its own headers decide how long the browser keeps what it sends
(docs/security.md, "Open pages once Angelia is gone").
"""

from __future__ import annotations

import os

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

CACHE_CONTROL = "no-cache"


class CheckedStaticFiles(StaticFiles):
    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers["Cache-Control"] = CACHE_CONTROL
        return response
