"""Signed-in browsers: the page that lists them and signs them out, its JSON API, and the
single-use sign-in links ``angelia open`` asks for.

Each browser that opened a sign-in link has a sign-in of its own (app/services/access/signins.py);
signing one out refuses its cookie from the next request on, and ends its open event
streams at their next event (app/web/access/guard.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.errors import AppError
from app.services.access.codes import LIFETIME, SignInCodes, signin_url
from app.services.access.signins import SignIns, SignInView
from app.web.access.guard import COOKIE_NAME
from app.web.context import base_context
from app.web.deps import StateDep

router = APIRouter()
pages = APIRouter(include_in_schema=False)


def _signins(request: Request) -> SignIns:
    signins: SignIns = request.app.state.signins
    return signins


def _current(request: Request) -> str | None:
    """This browser's sign-in id; None for a bearer-token client."""
    current: str | None = getattr(request.state, "signin_id", None)
    return current


def _as_json(view: SignInView, current: str | None) -> dict[str, Any]:
    return {
        "id": view.id,
        "label": view.label,
        "browser": view.browser,
        "created_at": view.created_at.isoformat(),
        "last_used_at": view.last_used_at.isoformat(),
        "expires_at": view.ends_at.isoformat(),
        "current": view.id == current,
    }


@router.get("/api/signins", tags=["sign-ins"], summary="List the signed-in browsers")
def list_signins(request: Request) -> list[dict[str, Any]]:
    current = _current(request)
    return [_as_json(v, current) for v in _signins(request).list()]


@router.delete(
    "/api/signins/{signin_id}",
    status_code=204,
    tags=["sign-ins"],
    summary="Sign a browser out",
    responses={404: {"description": "No signed-in browser with that id"}},
)
def revoke_signin(signin_id: str, request: Request) -> Response:
    _signins(request).revoke(signin_id)
    return Response(status_code=204)


@router.post(
    "/api/signin-links",
    status_code=201,
    tags=["sign-ins"],
    summary="Make a link that signs one browser in, once, within 2 minutes",
)
def new_signin_link(request: Request, state: StateDep) -> dict[str, Any]:
    codes: SignInCodes = request.app.state.signin_codes
    code = codes.issue()
    return {
        "url": signin_url(state.settings.public_url, code),
        "expires_in_s": int(LIFETIME.total_seconds()),
    }


@pages.get("/signins", response_class=HTMLResponse)
def signins_page(request: Request, state: StateDep, done: str = "") -> HTMLResponse:
    current = _current(request)
    views = _signins(request).list()
    context = base_context(request, state) | {
        "active_nav": "signins",
        "signins": views,
        "current": current,
        "others": sum(1 for v in views if v.id != current),
        "done": done if done in ("revoked", "others") else "",
    }
    return state.templates.TemplateResponse(request, "signins.html", context)


@pages.post("/signins/{signin_id}/revoke", response_model=None)
def revoke_from_page(signin_id: str, request: Request, state: StateDep) -> Response:
    if signin_id == _current(request):
        return _sign_out(request, state)
    _signins(request).revoke(signin_id)
    return RedirectResponse("/signins?done=revoked", status_code=303)


@pages.post("/signins/revoke-others")
def revoke_others(request: Request) -> RedirectResponse:
    current = _current(request)
    if current is None:
        raise AppError("Only a signed-in browser can keep itself and sign out the others.")
    _signins(request).revoke_others(current)
    return RedirectResponse("/signins?done=others", status_code=303)


@pages.post("/signout", response_model=None)
def sign_out(request: Request, state: StateDep) -> Response:
    return _sign_out(request, state)


def _sign_out(request: Request, state: StateDep) -> Response:
    current = _current(request)
    if current is None:
        raise AppError("This client is not a signed-in browser: it has nothing to sign out.")
    _signins(request).revoke(current)
    page = state.templates.TemplateResponse(request, "signed_out.html", {"request": request})
    page.delete_cookie(COOKIE_NAME, path="/", httponly=True, samesite="strict")
    return page


router.include_router(pages)
