"""Malformed answers of a REST catalog server: Paimon's own ``RESTCatalogServer`` answers every
request, except the one a case damages (a proxy in front of it swaps that one body), and every
damaged answer is one error naming the request and what is wrong (exit 2, no traceback), and
nothing in the warehouse is written or deleted. The case count is kept in docs/robustness.md."""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pypaimon import CatalogFactory

from tablekeeper.cli.main import main
from tests.support import catalogs as C
from tests.support import paimon as P

pytestmark = [pytest.mark.catalogs, pytest.mark.rest]

_CONFIG = r"/v1/config"
_TABLE = r"/v1/[^/]+/databases/[^/]+/tables/[^/]+"
_TOKEN = _TABLE + r"/token"
_DATABASES = r"/v1/[^/]+/databases"
_TABLES = r"/v1/[^/]+/databases/[^/]+/tables"

#: (id, the request whose answer is damaged, the damaged body, a word the error names)
CASES: list[tuple[str, str, bytes, str]] = [
    ("config-not-json", _CONFIG, b"not json", "not JSON"),
    ("config-html-page", _CONFIG, b"<html><body>502 Bad Gateway</body></html>", "not JSON"),
    ("config-truncated", _CONFIG, b'{"defaults": {"prefix": "a', "not JSON"),
    ("config-array", _CONFIG, b"[]", "list"),
    ("config-string", _CONFIG, b'"ok"', "str"),
    ("config-number", _CONFIG, b"42", "int"),
    ("config-null", _CONFIG, b"null", "NoneType"),
    ("config-not-utf8", _CONFIG, b"\xff\xfe{}", "UTF-8"),
    ("config-deep", _CONFIG, b"[" * 200_000, "deeply"),
    ("config-defaults-list", _CONFIG, b'{"defaults": ["prefix"]}', "defaults"),
    ("config-defaults-string", _CONFIG, b'{"defaults": "prefix=x"}', "defaults"),
    ("config-option-object", _CONFIG, b'{"defaults": {"prefix": {"a": 1}}}', "prefix"),
    ("config-option-list", _CONFIG, b'{"overrides": {"prefix": [1]}}', "prefix"),
    ("config-overrides-number", _CONFIG, b'{"overrides": 7}', "overrides"),
    ("table-not-json", _TABLE, b"{oops", "not JSON"),
    ("table-array", _TABLE, b'[{"path": "/x"}]', "list"),
    ("table-null", _TABLE, b"null", "NoneType"),
    ("table-no-path", _TABLE, b'{"id": "1"}', "no path"),
    ("table-empty-path", _TABLE, b'{"path": ""}', "no path"),
    ("table-path-number", _TABLE, b'{"path": 5}', "path"),
    ("table-path-object", _TABLE, b'{"path": {"uri": "/x"}}', "path"),
    ("table-path-nul", _TABLE, b'{"path": "/tmp/a\\u0000b"}', "NUL"),
    ("table-id-list", _TABLE, b'{"path": "/tmp/x", "id": [1]}', "id"),
    ("token-not-json", _TOKEN, b"\x00\x01", "not JSON"),
    ("token-array", _TOKEN, b"[]", "list"),
    ("token-token-list", _TOKEN, b'{"token": ["fs.a"], "expiresAtMillis": 1}', "token"),
    ("token-value-object", _TOKEN, b'{"token": {"fs.a": {"b": 1}}}', "fs.a"),
    ("token-expiry-text", _TOKEN, b'{"token": {}, "expiresAtMillis": "soon"}', "expiresAtMillis"),
    ("token-expiry-negative", _TOKEN, b'{"token": {}, "expiresAtMillis": -5}', "expiresAtMillis"),
    ("token-expiry-bool", _TOKEN, b'{"token": {}, "expiresAtMillis": true}', "expiresAtMillis"),
    ("token-expiry-float", _TOKEN, b'{"token": {}, "expiresAtMillis": 1.5}', "expiresAtMillis"),
    ("databases-string", _DATABASES, b'{"databases": "db"}', "databases"),
    ("databases-numbers", _DATABASES, b'{"databases": [1, 2]}', "databases"),
    ("databases-empty-name", _DATABASES, b'{"databases": [""]}', "databases"),
    ("databases-token-number", _DATABASES, b'{"databases": ["a"], "nextPageToken": 5}', "nextPageToken"),
    ("databases-pages-forever", _DATABASES, b'{"databases": ["a"], "nextPageToken": "again"}', "twice"),
    ("tables-null-name", _TABLES, b'{"tables": [null]}', "tables"),
    ("tables-object", _TABLES, b'{"tables": {"t": 1}}', "tables"),
    ("tables-not-json", _TABLES, b"tables: [t]", "not JSON"),
]


class _DamagingProxy:
    """Forwards every request to the real server, except that the answer to the first request
    matching ``pattern`` (every one, for a listing) is replaced by ``body``."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.pattern: re.Pattern[str] | None = None
        self.body = b""
        self.damaged = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def _forward(self) -> None:
                path = self.path.split("?", 1)[0]
                if proxy.pattern is not None and proxy.pattern.fullmatch(path):
                    proxy.damaged += 1
                    self._answer(200, proxy.body)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                request = urllib.request.Request(proxy.upstream + self.path, data=data, method=self.command,
                                                 headers={k: v for k, v in self.headers.items()
                                                          if k.lower() not in ("host", "content-length")})
                try:
                    with urllib.request.urlopen(request, timeout=30) as response:
                        self._answer(response.status, response.read())
                except urllib.error.HTTPError as e:
                    self._answer(e.code, e.read())

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def damage(self, pattern: str, body: bytes) -> None:
        self.pattern, self.body, self.damaged = re.compile(pattern), body, 0


@pytest.fixture(scope="module")
def proxy(rest_catalog_server: C.RestCatalogServer) -> Iterator[_DamagingProxy]:
    p = _DamagingProxy(rest_catalog_server.url)
    yield p
    p.server.shutdown()


@pytest.fixture(scope="module")
def table(rest_catalog_server: C.RestCatalogServer) -> str:
    ident = f"bad_{uuid.uuid4().hex[:8]}.orders"
    t = P.create_table(CatalogFactory.create(rest_catalog_server.catalog_options()), ident, P.ORDERS_SCHEMA,
                       partition_keys=["dt"], options={"bucket": "-1"})
    for n in range(3):
        P.write(t, P.rows("2024-01-01", n * 10, 1))
    return ident


@pytest.mark.parametrize(("pattern", "body", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_damaged_answer_is_one_error_and_nothing_changes(
        rest_catalog_server: C.RestCatalogServer, proxy: _DamagingProxy, table: str,
        capsys: pytest.CaptureFixture[str], pattern: str, body: bytes, named: str) -> None:
    options = {**rest_catalog_server.catalog_options(), "uri": proxy.url}
    flags = [x for key, value in options.items() for x in ("--catalog-option", f"{key}={value}")]
    listing = P.dir_listing(rest_catalog_server.data_path)
    proxy.damage(pattern, body)
    if pattern == _DATABASES:
        args = ["catalog", "databases", *flags]
    elif pattern == _TABLES:
        args = ["catalog", "tables", table.split(".")[0], *flags]
    else:  # a real expiration would delete snapshots 1 and 2
        args = ["expire", *flags, table, "--retain-min", "1", "--retain-max", "1", "--time-retained", "1 ms"]
    code = main(args)
    out, err = capsys.readouterr()
    assert proxy.damaged >= 1, "the damaged request was not made"
    lines = err.strip().splitlines()
    assert code == 2 and lines[0].startswith("error: the REST catalog") and named in lines[0], err
    assert "Traceback" not in err and len(lines) <= 2, err
    assert P.dir_listing(rest_catalog_server.data_path) == listing  # nothing written or deleted
