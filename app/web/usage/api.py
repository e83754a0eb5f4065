"""What the agents cost and used, as JSON and as a CSV download, under /api/usage."""

from __future__ import annotations

import csv
import io
import re
from datetime import date
from typing import Annotated

from fastapi import APIRouter, Query, Response

from app.errors import ValidationFailed
from app.services.review import usage as usage_service
from app.services.review.usage import Group, Usage
from app.web.deps import StateDep

router = APIRouter(prefix="/api")

CSV_COLUMNS = (
    "key",
    "label",
    "cost_usd",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "turns",
    "sessions",
)


# What a spreadsheet may read as a formula: =, +, - or @ after any blanks or control
# characters, and a cell that starts with a TAB or CR at all (OWASP's CSV injection list).
_FORMULA = re.compile(r"[\s\x00-\x1f\x7f]*[=+\-@]|[\t\r]")


def csv_safe(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet will run: a formula gets a leading quote."""
    return f"'{text}" if _FORMULA.match(text) else text


SinceQ = Annotated[date | None, Query(description="first local day included (YYYY-MM-DD)")]
UntilQ = Annotated[date | None, Query(description="last local day included (YYYY-MM-DD)")]


def load(state: StateDep, group: Group, since: date | None, until: date | None) -> Usage:
    if since is not None and until is not None and since > until:
        raise ValidationFailed("since", "since must not be after until")
    return usage_service.usage(state.engine, group=group, since=since, until=until)


@router.get("/usage", tags=["usage"], response_model=Usage)
async def get_usage(
    state: StateDep, since: SinceQ = None, until: UntilQ = None, group: Group = "day"
) -> Usage:
    """Cost and tokens summed per day, profile, model or backend, from every stored turn.

    ``cost_usd`` is null where no turn reported a cost: such backends show tokens only."""
    return load(state, group, since, until)


@router.get(
    "/usage.csv",
    tags=["usage"],
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}}},
)
async def get_usage_csv(
    state: StateDep, since: SinceQ = None, until: UntilQ = None, group: Group = "day"
) -> Response:
    """The same figures as ``GET /api/usage``, one row per group and a total row."""
    found = load(state, group, since, until)
    out = io.StringIO()
    # CRLF as RFC 4180 has it; it also makes the writer quote a field holding a CR.
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in [*found.groups, found.total]:
        values = row.to_dict()
        # A label from the user (a profile's name) must not run as a spreadsheet formula.
        values["label"] = csv_safe(str(values["label"]))
        writer.writerow(["" if values[c] is None else values[c] for c in CSV_COLUMNS])
    name = f"angelia-usage-by-{group}.csv"
    return Response(
        content=out.getvalue().encode("utf-8"),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
