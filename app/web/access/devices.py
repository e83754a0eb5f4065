"""Pairing a phone and the paired devices: the Devices page, the phone's ``/pair`` page,
and their JSON API.

A pairing is made only by a loopback request that passed the access check (the master
token or a desktop sign-in) — never through the remote origin, whatever it carries — and
only the desktop answers it. The phone reaches ``/pair`` and its two calls without a
session (``PAIRING_PATHS`` in app/web/access/guard.py); the device cookie it ends with is
minted here, by the server, at the status check that follows the desktop's Allow.
"""

from __future__ import annotations

from typing import Any

import anyio
import segno
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import Field

from app.errors import AppError, ConflictError
from app.nul import Input
from app.services.access.devices import DEVICE_COOKIE, IDLE, NAME_MAX, DeviceSessions
from app.services.access.pairing import LIFETIME as PAIRING_LIFETIME
from app.services.access.pairing import SECRET_MAX as PAIRING_SECRET_MAX
from app.services.access.pairing import Issued, Pairings, State
from app.web.context import base_context
from app.web.deps import StateDep

router = APIRouter()
pages = APIRouter(include_in_schema=False)


class RemoteOnlyDesktop(AppError):
    status = 403


class RedeemIn(Input):
    secret: str | None = Field(default=None, max_length=PAIRING_SECRET_MAX)
    code: str | None = Field(default=None, max_length=PAIRING_SECRET_MAX)
    name: str = Field(default="", max_length=200)


class StatusIn(Input):
    waiting: str = Field(max_length=PAIRING_SECRET_MAX)


def _pairings(request: Request) -> Pairings:
    pairings: Pairings = request.app.state.pairings
    return pairings


def _devices(request: Request) -> DeviceSessions:
    devices: DeviceSessions = request.app.state.devices
    return devices


def _desktop_only(request: Request) -> None:
    """Refuse what only the computer Angelia runs on may do (make or answer a pairing)."""
    if getattr(request.state, "remote", True):
        raise RemoteOnlyDesktop(
            "Only the computer where Angelia runs can pair a device (open Devices there)."
        )


def _new_pairing(request: Request, state: StateDep) -> tuple[Issued, str]:
    _desktop_only(request)
    origin = state.settings.remote_origin
    if not origin:
        raise ConflictError(
            "No remote origin is set up, so a phone has no address to reach: run "
            "'angelia remote enable' first."
        )
    issued = _pairings(request).create()
    return issued, f"{origin.rstrip('/')}/pair#s={issued.secret}"


def qr_svg(url: str) -> str:
    """The URL as a QR code, an inline SVG drawn here (no script draws it)."""
    qr = segno.make(url, error="m")
    svg: str = qr.svg_inline(scale=5, dark="#000", light="#fff", omitsize=False)
    return svg


@router.post("/api/pairings", status_code=201, tags=["devices"], summary="Make a pairing")
def create_pairing(request: Request, state: StateDep) -> dict[str, Any]:
    issued, url = _new_pairing(request, state)
    return {
        "id": issued.id,
        "url": url,
        "code": issued.code,
        "expires_at": issued.expires_at.isoformat(),
    }


@router.get("/api/pairings", tags=["devices"], summary="List the pairings waiting for an answer")
def list_pairings(request: Request) -> list[dict[str, Any]]:
    _desktop_only(request)
    return [
        {"id": w.id, "name": w.name, "asked_at": w.asked_at.isoformat()}
        for w in _pairings(request).waiting()
    ]


@router.post(
    "/api/pairings/{pairing_id}/approve", status_code=204, tags=["devices"], summary="Allow"
)
def approve(pairing_id: str, request: Request) -> Response:
    _desktop_only(request)
    _pairings(request).answer(pairing_id, allow=True)
    return Response(status_code=204)


@router.post(
    "/api/pairings/{pairing_id}/refuse", status_code=204, tags=["devices"], summary="Refuse"
)
def refuse(pairing_id: str, request: Request) -> Response:
    _desktop_only(request)
    _pairings(request).answer(pairing_id, allow=False)
    return Response(status_code=204)


@router.post("/api/pairings/redeem", tags=["devices"], summary="A phone redeems a pairing")
def redeem(body: RedeemIn, request: Request) -> dict[str, str]:
    waiting = _pairings(request).redeem(
        secret=body.secret, code=body.code, name=body.name[:NAME_MAX]
    )
    return {"waiting": waiting, "state": State.ASKED.value}


@router.post(
    "/api/pairings/redeem/status", tags=["devices"], summary="The desktop's answer, for the phone"
)
async def redeem_status(body: StatusIn, request: Request) -> Response:
    answer, name = _pairings(request).status(body.waiting)
    if answer is not State.ALLOWED:
        return JSONResponse({"state": answer.value})
    _, secret = await anyio.to_thread.run_sync(_devices(request).create, name or "")
    response = JSONResponse({"state": answer.value})
    # The value is minted just now: whatever device cookie the request carried is ignored.
    response.set_cookie(
        DEVICE_COOKIE,
        secret,
        max_age=int(IDLE.total_seconds()),
        path="/",
        secure=True,
        httponly=True,
        samesite="strict",
    )
    return response


def _device_json(view: Any, current: str | None) -> dict[str, Any]:
    return {
        "id": view.id,
        "name": view.name,
        "paired_at": view.created_at.isoformat(),
        "last_seen_at": view.last_seen_at.isoformat(),
        "expires_at": view.ends_at.isoformat(),
        "current": view.id == current,
    }


@router.get("/api/devices", tags=["devices"], summary="List the paired devices")
def list_devices(request: Request) -> list[dict[str, Any]]:
    current = getattr(request.state, "device_id", None)
    return [_device_json(v, current) for v in _devices(request).list()]


@router.delete(
    "/api/devices/{device_id}",
    status_code=204,
    tags=["devices"],
    summary="Unpair a device",
    responses={404: {"description": "No paired device with that id"}},
)
def revoke_device(device_id: str, request: Request) -> Response:
    _devices(request).revoke(device_id)
    return Response(status_code=204)


@pages.get("/pair", response_class=HTMLResponse)
def pair_page(request: Request, state: StateDep) -> HTMLResponse:
    context = {"request": request, "app_name": "Angelia"}
    return state.templates.TemplateResponse(request, "pair.html", context)


def _devices_page(
    request: Request, state: StateDep, *, new: tuple[Issued, str] | None = None, done: str = ""
) -> HTMLResponse:
    context = base_context(request, state) | {
        "active_nav": "devices",
        "devices": _devices(request).list(),
        "waiting": _pairings(request).waiting(),
        "remote": getattr(request.state, "remote", False),
        "remote_origin": state.settings.remote_origin,
        "current_device": getattr(request.state, "device_id", None),
        "done": done,
        "new": None,
    }
    if new is not None:
        issued, url = new
        context["new"] = {
            "code": f"{issued.code[:4]}-{issued.code[4:]}",
            "url": url,
            "qr": qr_svg(url),
            "expires_at": issued.expires_at,
        }
        context["lifetime_minutes"] = int(PAIRING_LIFETIME.total_seconds() // 60)
    return state.templates.TemplateResponse(request, "devices.html", context)


@pages.get("/devices", response_class=HTMLResponse)
def devices_page(request: Request, state: StateDep, done: str = "") -> HTMLResponse:
    known = ("allowed", "refused", "revoked")
    return _devices_page(request, state, done=done if done in known else "")


@pages.post("/devices/pair", response_class=HTMLResponse)
def pair_from_page(request: Request, state: StateDep) -> HTMLResponse:
    # Drawn in this answer only: the secret is not kept, so the QR cannot be shown again.
    return _devices_page(request, state, new=_new_pairing(request, state))


@pages.post("/devices/pairings/{pairing_id}/{answer}")
def answer_from_page(pairing_id: str, answer: str, request: Request) -> RedirectResponse:
    _desktop_only(request)
    if answer not in ("allow", "refuse"):
        raise AppError("Answer a pairing with allow or refuse.")
    _pairings(request).answer(pairing_id, allow=answer == "allow")
    done = "allowed" if answer == "allow" else "refused"
    return RedirectResponse(f"/devices?done={done}", status_code=303)


@pages.post("/devices/{device_id}/revoke")
def revoke_from_page(device_id: str, request: Request) -> RedirectResponse:
    _devices(request).revoke(device_id)
    return RedirectResponse("/devices?done=revoked", status_code=303)


router.include_router(pages)
