"""A counting HTTP proxy on loopback in front of an S3 server (moto), with injected latency.

The server side of the request count: every request that reaches the store is classified by
kind (LIST page, GET, HEAD, PUT, bulk DELETE, single DELETE, COPY), whoever sent it (tablekeeper's
s3fs client, pyarrow's S3 client inside pypaimon's commit, Spark executors), so the benchmark's
figure does not depend on tablekeeper's own counting. It also records what a minimal client
needs: the distinct keys read and written and the distinct LIST pages (prefix + continuation).
``latency_s`` is slept before each request is forwarded (the proxy is threaded, so concurrent
requests wait concurrently, as against a real store).
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

if __package__ in (None, ""):  # run as a script, or loaded by file path from a test
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.loopback_proxy import ProxyServer, forward, serving  # noqa: E402

__all__ = ["Counts", "counting_proxy", "classify", "breakdown", "service_ms"]

_KEYS = re.compile(rb"<Key>")


@dataclass
class Counts:
    url: str = ""
    latency_s: float = 0.0
    by_kind: Counter[str] = field(default_factory=Counter)
    read_keys: set[str] = field(default_factory=set)
    written_keys: set[str] = field(default_factory=set)
    list_pages: set[tuple[str, str]] = field(default_factory=set)
    deleted_keys: int = 0
    #: LIST requests that start after a key (``start-after``: a segment of a listing in segments)
    started_after: int = 0
    #: (kind, key) -> requests: every request by key (LIST: prefix and delimiter), for breakdowns
    by_key: Counter[tuple[str, str]] = field(default_factory=Counter)
    #: seconds the upstream (moto) took to answer, summed over requests: its own latency, apart
    #: from the injected ``latency_s``
    upstream_s: float = 0.0
    #: the same by request kind (moto's own service time per kind)
    upstream_by_kind: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.by_kind.clear()
            self.read_keys.clear()
            self.written_keys.clear()
            self.list_pages.clear()
            self.deleted_keys = 0
            self.started_after = 0
            self.by_key.clear()
            self.upstream_s = 0.0
            self.upstream_by_kind.clear()

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            out = {k: v for k, v in sorted(self.by_kind.items()) if v}
        out["total"] = sum(out.values())
        return out


def classify(method: str, path: str, query: str, headers: dict[str, str]) -> str:
    """The request kind of one S3 request (path-style addressing)."""
    has_key = "/" in path.lstrip("/")
    params = parse_qs(query, keep_blank_values=True)
    if method == "GET":
        if not has_key or "list-type" in params:
            return "list"
        return "get"
    if method == "HEAD":
        return "head"
    if method == "PUT":
        if not has_key:
            return "other"
        return "copy" if "x-amz-copy-source" in {k.lower() for k in headers} else "put"
    if method == "POST":
        if "delete" in params:
            return "bulk_delete"
        return "put" if ("uploads" in params or "uploadId" in params) else "other"
    if method == "DELETE":
        return "delete" if has_key and "uploadId" not in params else "other"
    return "other"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        kind = classify(self.command, parts.path, parts.query or "", dict(self.headers.items()))
        key = unquote(parts.path.lstrip("/"))
        counts = self.server.counts
        with counts.lock:
            counts.by_kind[kind] += 1
            if kind == "list":
                q = parse_qs(parts.query or "", keep_blank_values=True)
                counts.by_key[(kind, f"{q.get('prefix', [''])[0]}?delimiter={q.get('delimiter', [''])[0]}")] += 1
            else:
                counts.by_key[(kind, key)] += 1
            if kind == "get":
                counts.read_keys.add(key)
            elif kind == "put":
                counts.written_keys.add(key)
            elif kind == "list":
                params = parse_qs(parts.query or "", keep_blank_values=True)
                page = (f"{key}?prefix={params.get('prefix', [''])[0]}&delimiter={params.get('delimiter', [''])[0]}",
                        params.get("continuation-token", params.get("start-after", params.get("marker", [""])))[0])
                counts.list_pages.add(page)
                if "start-after" in params and "continuation-token" not in params:
                    counts.started_after += 1
            elif kind == "bulk_delete":
                counts.deleted_keys += len(_KEYS.findall(body))
        if counts.latency_s > 0:
            time.sleep(counts.latency_s)
        t0 = time.perf_counter()
        status, headers, payload = forward(self, self.server.upstream, body, timeout=300, head_length=True)
        took = time.perf_counter() - t0
        with counts.lock:
            counts.upstream_s += took
            counts.upstream_by_kind[kind] += took
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if self.command != "HEAD":  # a HEAD's Content-Length is the object's size: passed through
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle


class _Server(ProxyServer):
    def __init__(self, upstream_url: str, counts: Counts) -> None:
        super().__init__(_Handler, upstream_url)
        self.counts = counts


@contextmanager
def counting_proxy(upstream_url: str, latency_s: float = 0.0) -> Iterator[Counts]:
    """A proxy on ``127.0.0.1:<free port>`` forwarding to ``upstream_url``; stopped on exit.
    Change ``counts.latency_s`` at any time."""
    counts = Counts(latency_s=latency_s)
    server = _Server(upstream_url, counts)
    counts.url = server.url
    with serving(server, "count-proxy"):
        yield counts


def _category(key: str) -> str:
    """The kind of file a key names (snapshot, manifest, schema, ...), for a breakdown."""
    parts = key.split("?")[0].rstrip("/").split("/")
    name = parts[-1] if parts else key
    for d in ("snapshot", "changelog", "tag", "schema", "manifest", "index", "statistics", "consumer", "branch",
              ".tablekeeper"):
        if d in parts[:-1] or (d == ".tablekeeper" and ".tablekeeper" in parts):
            if d == "manifest":
                return "manifest-list" if name.startswith("manifest-list") else \
                    ("index-manifest" if name.startswith("index-manifest") else "manifest")
            if d in ("snapshot", "changelog") and name in ("LATEST", "EARLIEST"):
                return f"{d}-hint"
            return d
    return "data" if "bucket-" in key else "other"


def breakdown(counts: Counts) -> list[str]:
    """Requests by kind and file category: total, distinct keys, and the most repeated keys."""
    with counts.lock:
        items = dict(counts.by_key)
    rows: dict[tuple[str, str], list[int]] = {}
    repeated: list[tuple[int, str, str]] = []
    for (kind, key), n in items.items():
        row = rows.setdefault((kind, _category(key)), [0, 0])
        row[0] += n
        row[1] += 1
        if n > 1:
            repeated.append((n, kind, key))
    out = [f"    {kind:<12} {cat:<15} requests {tot:>6}  distinct keys {dist:>6}"
           for (kind, cat), (tot, dist) in sorted(rows.items())]
    for n, kind, key in sorted(repeated, reverse=True)[:12]:
        out.append(f"      x{n} {kind} {key}")
    return out


def service_ms(counts: Counts) -> dict[str, float]:
    """The upstream's (moto's) own time per request, in ms, by request kind."""
    with counts.lock:
        return {kind: 1000 * counts.upstream_by_kind[kind] / n for kind, n in sorted(counts.by_kind.items()) if n}
