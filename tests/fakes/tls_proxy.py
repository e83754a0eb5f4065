"""An HTTPS reverse proxy in front of Angelia, standing in for ``tailscale serve``.

It terminates TLS with a self-signed certificate for a ``*.ts.net``-like name and
forwards each request to the app on loopback as ``tailscale serve`` does: the ``Host``
header is kept, ``X-Forwarded-For/Host/Proto`` are set, any forwarding or ``Tailscale-*``
header the client sent is dropped, and ``Tailscale-User-Login`` is added when the proxy
is given a login. Responses are passed through as they arrive, so event streams flow.

One request per connection (``Connection: close`` both ways) keeps the framing simple;
it runs on its own event loop in a thread, so synchronous and async tests can use it.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

TEST_HOST = "angelia-test.tailnet-test.ts.net"
BAD_GATEWAY = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_DROPPED = ("x-forwarded-", "forwarded", "tailscale-", "connection", "proxy-connection")


def make_certificate(folder: Path, name: str = TEST_HOST) -> tuple[Path, Path]:
    """A self-signed certificate and key for ``name`` (PEM files in ``folder``)."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "proxy-cert.pem", folder / "proxy-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@dataclass
class TlsProxy:
    """``https://127.0.0.1:<port>`` → ``http://<upstream_host>:<upstream_port>``."""

    folder: Path
    upstream_host: str
    upstream_port: int
    user_login: str | None = None
    name: str = TEST_HOST
    port: int = 0
    cert_path: Path = field(init=False)
    # What the app was sent, one header list per request (for tests of the proxy itself).
    forwarded: list[list[tuple[str, str]]] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _server: asyncio.Server | None = None
    _thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        return f"https://{self.name}:{self.port}"

    @property
    def host_header(self) -> str:
        return f"{self.name}:{self.port}"

    def start(self) -> TlsProxy:
        self.cert_path, key_path = make_certificate(self.folder, self.name)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert_path, key_path)
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        async def serve() -> None:
            self._server = await asyncio.start_server(
                self._handle, "127.0.0.1", self.port, ssl=context
            )
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()

        def run() -> None:
            assert self._loop is not None
            self._loop.run_until_complete(serve())
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="tls-proxy", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the TLS proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is None or self._server is None:
            return
        loop, server = self._loop, self._server

        async def close() -> None:
            server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        request_line, *lines = head.decode("latin-1").split("\r\n")
        headers = [tuple(p.strip() for p in line.split(":", 1)) for line in lines if ":" in line]
        length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
        body = await reader.readexactly(length) if length else b""
        peer = writer.get_extra_info("peername")[0]
        host = next((v for k, v in headers if k.lower() == "host"), "")
        kept = [(k, v) for k, v in headers if not k.lower().startswith(_DROPPED)]
        kept += [
            ("X-Forwarded-For", peer),
            ("X-Forwarded-Host", host),
            ("X-Forwarded-Proto", "https"),
            ("Connection", "close"),
        ]
        if self.user_login is not None:
            kept.append(("Tailscale-User-Login", self.user_login))
        self.forwarded.append(kept)
        try:
            up_reader, up_writer = await asyncio.open_connection(
                self.upstream_host, self.upstream_port
            )
        except OSError:
            writer.write(
                b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            await writer.drain()
            writer.close()
            return
        out = request_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in kept) + "\r\n"
        up_writer.write(out.encode("latin-1") + body)
        await up_writer.drain()
        try:
            while chunk := await up_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            up_writer.close()
            writer.close()
