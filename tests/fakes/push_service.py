"""A push service on loopback, as a browser's push endpoint sees the app (RFC 8030).

It checks what a real one checks, and more: the VAPID JWT (RFC 8292: ES256 signed by the
key in ``k=``, ``aud`` its own origin, ``exp`` within 24 hours, a ``sub`` a real service
would accept), and decrypts the body (RFC 8291, ``aes128gcm``) with the keys a test made
as the "browser". Each POST is recorded with its TTL, Urgency and Topic; the answers are
201 unless the test queued others (410, 429 with a Retry-After, ...).
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

DAY_S = 24 * 3600
REFUSED_SUBJECT_HOSTS = ("localhost", ".local", ".invalid")


def b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class Browser:
    """A browser's subscription keys: the test holds the private half."""

    key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    auth: bytes = field(default_factory=lambda: os.urandom(16))

    @property
    def p256dh(self) -> str:
        return b64e(
            self.key.public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
            )
        )

    def subscription(self, endpoint: str) -> dict[str, Any]:
        return {"endpoint": endpoint, "keys": {"p256dh": self.p256dh, "auth": b64e(self.auth)}}


@dataclass
class Push:
    """One POST, checked and decrypted (``problems`` lists what a real service refuses)."""

    path: str
    at: float
    headers: dict[str, str]
    claims: dict[str, Any]
    server_key: str
    message: dict[str, Any] | None
    plaintext_size: int
    problems: list[str]

    @property
    def ttl(self) -> int:
        return int(self.headers.get("ttl", "0"))


def verify_jwt(authorization: str, origin: str) -> tuple[dict[str, Any], str, list[str]]:
    """The claims and server key of a ``vapid t=…,k=…`` header, and what is wrong with it."""
    problems: list[str] = []
    scheme, _, rest = authorization.partition(" ")
    if scheme.lower() != "vapid":
        return {}, "", [f"scheme {scheme!r}"]
    params = dict(p.strip().split("=", 1) for p in rest.split(","))
    token, key = params.get("t", ""), params.get("k", "")
    header_b64, claims_b64, sig_b64 = token.split(".")
    header = json.loads(b64d(header_b64))
    claims: dict[str, Any] = json.loads(b64d(claims_b64))
    if header.get("alg") != "ES256":
        problems.append(f"alg {header.get('alg')}")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64d(key))
    raw = b64d(sig_b64)
    signature = encode_dss_signature(
        int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    )
    try:
        public.verify(signature, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        problems.append("bad signature")
    if claims.get("aud") != origin:
        problems.append(f"aud {claims.get('aud')!r} is not {origin!r}")
    exp = int(claims.get("exp", 0))
    if not time.time() < exp <= time.time() + DAY_S:
        problems.append(f"exp {exp} not within 24 h")
    sub = str(claims.get("sub", ""))
    host = sub.partition("@")[2] if sub.startswith("mailto:") else urlsplit(sub).hostname or ""
    if not sub.startswith(("mailto:", "https://")) or host.endswith(REFUSED_SUBJECT_HOSTS):
        problems.append(f"sub {sub!r}")
    return claims, key, problems


class FakePushService:
    """``start()`` it; ``endpoint(name)`` is a subscription's URL; ``pushes`` what came."""

    def __init__(self) -> None:
        self.browsers: dict[str, Browser] = {}
        self.pushes: list[Push] = []
        # Answers for the next POSTs, in order: (status, extra headers); then 201.
        self.answers: list[tuple[int, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                status, extra = fake._take(self.path, dict(self.headers.items()), body)
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @classmethod
    def serving(cls) -> Iterator[FakePushService]:
        """One started for a fixture to yield, stopped after the test."""
        service = cls().start()
        try:
            yield service
        finally:
            service.stop()

    def start(self) -> FakePushService:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def endpoint(self, name: str) -> tuple[str, Browser]:
        """A new browser's subscription URL here, and the browser (its keys)."""
        browser = Browser()
        self.browsers[f"/push/{name}"] = browser
        return f"{self.origin}/push/{name}", browser

    def _take(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str]]:
        lowered = {k.lower(): v for k, v in headers.items()}
        claims, key, problems = verify_jwt(lowered.get("authorization", ""), self.origin)
        if lowered.get("content-encoding") != "aes128gcm":
            problems.append(f"content-encoding {lowered.get('content-encoding')!r}")
        message: dict[str, Any] | None = None
        size = 0
        browser = self.browsers.get(path)
        if browser is None:
            problems.append("unknown endpoint")
        else:
            plain = http_ece.decrypt(
                body, private_key=browser.key, auth_secret=browser.auth, version="aes128gcm"
            )
            size = len(plain)
            message = json.loads(plain)
        push = Push(path, time.time(), lowered, claims, key, message, size, problems)
        with self._arrived:
            self.pushes.append(push)
            answer = self.answers.pop(0) if self.answers else (201, {})
            self._arrived.notify_all()
        return answer

    def wait_for(self, n: int, timeout: float = 15.0) -> list[Push]:
        """Block until ``n`` pushes came (fail with what came if not)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.pushes) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{len(self.pushes)} push(es) came, not {n}")
                self._arrived.wait(left)
            return list(self.pushes)
