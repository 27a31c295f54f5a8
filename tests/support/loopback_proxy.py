"""What the loopback HTTP proxies in front of moto share (the benchmark's counting proxy,
``bench/_s3count.py``, and the tests' fault-injecting one, ``tests/support/faults.py``): a threaded
server on a free port of 127.0.0.1, the forwarding of one request upstream, and a context that
serves until it exits. Each proxy keeps only its own policy (what it counts, which faults)."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["HOP_HEADERS", "ProxyServer", "forward", "serving"]

#: hop-by-hop headers: never forwarded in either direction
HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                         "upgrade"})


class ProxyServer(ThreadingHTTPServer):
    """A threaded server on ``127.0.0.1:<free port>`` whose handlers forward to ``upstream``
    (``http://host:port``): concurrent requests are served concurrently, as a store serves them."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, handler: type[BaseHTTPRequestHandler], upstream_url: str) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        parts = urlsplit(upstream_url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 80)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def forward(handler: BaseHTTPRequestHandler, upstream: tuple[str, int], body: bytes, *, timeout: float,
            drop_request_headers: tuple[str, ...] = (), head_length: bool = False) -> tuple[int, dict[str, str], bytes]:
    """Send ``handler``'s request with ``body`` upstream; (status, headers, payload) of the answer.

    ``drop_request_headers``: lower-case prefixes of request headers not forwarded (a proxy that
    rewrites the body drops its checksums). Content-Length is recomputed for the request; the
    answer's is dropped (the proxy sends its own), except on a HEAD with ``head_length``, where it
    is the object's size and must pass through."""
    conn = http.client.HTTPConnection(*upstream, timeout=timeout)
    headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_HEADERS
               and k.lower() != "content-length" and not k.lower().startswith(drop_request_headers or ("\0",))}
    headers["Content-Length"] = str(len(body))
    try:
        conn.request(handler.command, handler.path,
                     body=body if body or handler.command in ("PUT", "POST") else None, headers=headers)
        response = conn.getresponse()
        payload = response.read()
        keep_length = head_length and handler.command == "HEAD"
        out = {k: v for k, v in response.getheaders() if k.lower() not in HOP_HEADERS
               and (k.lower() != "content-length" or keep_length)}
        return response.status, out, payload
    finally:
        conn.close()


@contextmanager
def serving(server: ProxyServer, name: str) -> Iterator[ProxyServer]:
    """Serve ``server`` in a daemon thread until the block exits, then stop it."""
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
