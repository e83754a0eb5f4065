"""Web Push: the server's public key and the browsers' subscriptions.

``GET /api/push/key`` gives the VAPID public key a page subscribes with;
``POST /api/push/subscriptions`` stores a subscription, tied to the browser sign-in it
came from (signing that browser out deletes it), or to nothing for a bearer-token client;
``DELETE /api/push/subscriptions`` removes one by its endpoint. What is sent, and when,
is app/services/access/push_send.py and push_triggers.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import Field

from app.nul import Input
from app.resources import static_dir
from app.services.access.push import PushSubscriptions, check_endpoint, check_keys
from app.services.access.push_send import PushSender
from app.services.access.push_settings import PushSettings
from app.services.access.push_triggers import PushNotifier
from app.services.access.vapid import VapidKey, load_or_create
from app.web.deps import AppState

router = APIRouter(tags=["push"])


@dataclass
class PushState:
    settings: PushSettings
    key: VapidKey
    subscriptions: PushSubscriptions
    notifier: PushNotifier


class SubscriptionKeys(Input):
    p256dh: str = Field(max_length=200)
    auth: str = Field(max_length=100)


class SubscriptionIn(Input):
    endpoint: str = Field(max_length=4096)
    keys: SubscriptionKeys


class SubscriptionGone(Input):
    endpoint: str = Field(max_length=4096)


def _push(request: Request) -> PushState:
    push: PushState = request.app.state.push
    return push


@router.get("/api/push/key", summary="The VAPID public key to subscribe with")
def public_key(request: Request) -> JSONResponse:
    # Never cached: a browser holding an old key would subscribe to nothing.
    return JSONResponse(
        {"public_key": _push(request).key.public_key}, headers={"Cache-Control": "no-store"}
    )


@router.post("/api/push/subscriptions", status_code=201, summary="Send this browser notifications")
async def subscribe(body: SubscriptionIn, request: Request) -> dict[str, object]:
    push = _push(request)
    check_endpoint(body.endpoint, push.settings.endpoint_origins)
    check_keys(body.keys.p256dh, body.keys.auth)
    signin_id: str | None = getattr(request.state, "signin_id", None)
    device_id: str | None = getattr(request.state, "device_id", None)
    row = await asyncio.to_thread(
        push.subscriptions.add,
        body.endpoint,
        body.keys.p256dh,
        body.keys.auth,
        signin_id,
        device_id,
    )
    push.notifier.warm()
    return {"id": row.id, "signed_in": signin_id is not None}


@router.delete(
    "/api/push/subscriptions", status_code=204, summary="Stop notifications to an endpoint"
)
async def unsubscribe(body: SubscriptionGone, request: Request) -> Response:
    await asyncio.to_thread(_push(request).subscriptions.remove, body.endpoint)
    return Response(status_code=204)


@router.get("/sw.js", include_in_schema=False)
def service_worker() -> FileResponse:
    # At the root, so its scope is every page of the app.
    return FileResponse(static_dir() / "sw.js", media_type="text/javascript")


@router.get("/manifest.webmanifest", include_in_schema=False)
def manifest() -> FileResponse:
    return FileResponse(
        static_dir() / "manifest.webmanifest", media_type="application/manifest+json"
    )


def install(app: FastAPI, state: AppState) -> PushNotifier:
    """Add the routes and the notifier (started with the app: ``PushNotifier.start``)."""
    settings = PushSettings()
    key = load_or_create(state.settings.data_dir)
    subscriptions = PushSubscriptions(state.engine)
    sender = PushSender(subscriptions, key, settings, state.settings.remote_origin or "")
    notifier = PushNotifier(state.engine, state.events, sender, settings, state.manager.is_live)
    app.state.push = PushState(settings, key, subscriptions, notifier)
    app.include_router(router)
    return notifier
