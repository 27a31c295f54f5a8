"""A fault-injecting HTTP proxy on loopback in front of an S3 server (moto).

It fails a fraction of requests *before* forwarding them, as a throttled or sick store does:
``503 SlowDown``, ``500 InternalError``, ``429``, or a connection reset (the socket closed with no
answer). A DeleteObjects request may also fail *partly*: a random subset of its keys is taken out
before forwarding and answered as per-key ``SlowDown`` errors, so the server never deletes them.
Every key the server was actually asked to delete is recorded (``deleted_keys``): a key that
appears twice was deleted twice.

Faults are drawn from a seeded generator: a run is reproducible.
"""

from __future__ import annotations

import random
import re
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit
from xml.sax.saxutils import escape, unescape

from tests.support.loopback_proxy import ProxyServer, forward, serving

__all__ = ["FaultPlan", "FaultProxy", "fault_proxy"]

_OBJECT = re.compile(r"<Object>\s*<Key>(.*?)</Key>.*?</Object>", re.DOTALL)


@dataclass
class FaultPlan:
    """Probabilities per forwarded request (``rate``) and per DeleteObjects key (``key_rate``)."""

    rate: float = 0.0
    key_rate: float = 0.0
    kinds: tuple[str, ...] = ("slowdown", "internal", "throttle", "reset")
    seed: int = 7


@dataclass
class FaultProxy:
    url: str
    plan: FaultPlan
    deleted_keys: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(default_factory=Counter)
    requests: int = 0


def _error_xml(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>fault</RequestId></Error>").encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _fault(self) -> str | None:
        state = self.server.state
        with self.server.lock:
            state.requests += 1
            if self.server.rng.random() >= state.plan.rate:
                return None
            kind = self.server.rng.choice(state.plan.kinds)
            state.injected[kind] += 1
            return kind

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        body = self._body()
        kind = self._fault()
        if kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.close_connection = True
            self.connection.close()
            return
        if kind == "slowdown":
            self._reply(503, _error_xml("SlowDown", "Please reduce your request rate."), {"Content-Type": "application/xml"})
            return
        if kind == "internal":
            self._reply(500, _error_xml("InternalError", "We encountered an internal error. Please try again."),
                        {"Content-Type": "application/xml"})
            return
        if kind == "throttle":
            self._reply(429, _error_xml("TooManyRequests", "Too many requests."), {"Content-Type": "application/xml"})
            return
        parts = urlsplit(self.path)
        bucket = unquote(parts.path.lstrip("/").split("/", 1)[0])
        held_back: list[str] = []
        is_bulk_delete = self.command == "POST" and re.search(r"(^|&)delete(=|&|$)", parts.query or "") is not None
        if is_bulk_delete:
            body, held_back = self._thin_delete(body, bucket)
        elif self.command == "DELETE" and "/" in parts.path.lstrip("/"):
            with self.server.lock:
                self.server.state.deleted_keys[unquote(parts.path.lstrip("/"))] += 1
        status, headers, payload = forward(self, self.server.upstream, body, timeout=60,
                                           drop_request_headers=("x-amz-checksum", "content-md5"))
        if is_bulk_delete and held_back and status == 200:
            payload = self._add_key_errors(payload, held_back)
        self._reply(status, payload, headers)

    def _thin_delete(self, body: bytes, bucket: str) -> tuple[bytes, list[str]]:
        """Take a random subset of keys out of a DeleteObjects body; record the rest."""
        text = body.decode()
        held: list[str] = []

        def keep_or_hold(match: re.Match[str]) -> str:
            key = unescape(match.group(1))
            if self.server.rng.random() < self.server.state.plan.key_rate:
                held.append(key)
                self.server.state.injected["key-slowdown"] += 1
                return ""
            self.server.state.deleted_keys[f"{bucket}/{key}"] += 1
            return match.group(0)

        with self.server.lock:
            text = _OBJECT.sub(keep_or_hold, text)
        return text.encode(), held

    @staticmethod
    def _add_key_errors(payload: bytes, keys: list[str]) -> bytes:
        errors = "".join(f"<Error><Key>{escape(k)}</Key><Code>SlowDown</Code><Message>Please reduce your request rate."
                         f"</Message></Error>" for k in keys)
        text = payload.decode()
        return text.replace("</DeleteResult>", errors + "</DeleteResult>").encode()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


class _Server(ProxyServer):
    def __init__(self, upstream_url: str, state: FaultProxy) -> None:
        super().__init__(_Handler, upstream_url)
        self.state = state
        self.lock = threading.Lock()
        self.rng = random.Random(state.plan.seed)


@contextmanager
def fault_proxy(upstream_url: str, plan: FaultPlan) -> Iterator[FaultProxy]:
    """A proxy on ``127.0.0.1:<free port>`` forwarding to ``upstream_url``; stopped on exit.
    Change ``proxy.plan`` (rates) at any time; the generator keeps its sequence."""
    state = FaultProxy(url="", plan=plan)
    server = _Server(upstream_url, state)
    state.url = server.url
    with serving(server, "fault-proxy"):
        yield state
