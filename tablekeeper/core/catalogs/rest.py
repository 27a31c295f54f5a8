"""``metastore=rest``: Paimon's REST catalog (the open REST API of Paimon 1.x) as tablekeeper meets it.

- ``GET /v1/config?warehouse=`` gives the prefix and the server's options; databases, tables and
  each table's ``path`` come from the server (the warehouse is a catalog name, not a path).
- Authentication: ``token.provider=bear`` with ``token`` (a bearer token). Other providers (DLF's
  signed requests) are refused naming ``token.provider``.
- Data tokens (``data-token.enabled``): the table's files are opened with the credentials the
  server vends (``GET …/token``), fetched again when they are about to expire.
- The server owns snapshot commits, tags, branches, rollback and consumers: those operations are
  refused here rather than written to storage behind the server (:meth:`RestCatalog.owner`).
  Snapshot and changelog expiration and orphan-file cleanup run on storage, as Java Paimon's
  procedures do on a REST table (the API has no endpoint for them).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from tablekeeper.core import errors
from tablekeeper.core.catalogs import rest_responses
from tablekeeper.core.catalogs.catalog import Catalog, CatalogTable, Operation, Owner, split_identifier
from tablekeeper.core.catalogs.options import CatalogOptions

__all__ = ["RestCatalog", "SERVER_OWNED", "TOKEN_REFRESH_MARGIN_S"]

#: Operations the server carries out (its API commits them): never written to storage by tablekeeper.
SERVER_OWNED = frozenset({
    Operation.TAG_CREATE, Operation.TAG_DELETE, Operation.TAG_RENAME, Operation.TAG_REPLACE,
    Operation.BRANCH_CREATE, Operation.BRANCH_DROP, Operation.BRANCH_FAST_FORWARD, Operation.BRANCH_REPLACE_MAIN,
    Operation.BRANCH_RENAME, Operation.ROLLBACK, Operation.CONSUMER_RESET, Operation.EXPIRE_PARTITIONS,
    Operation.SET_OPTIONS,
})
#: A data token this close to its expiry is fetched again.
TOKEN_REFRESH_MARGIN_S = 60.0
_TIMEOUT_S = 30.0


class RestCatalog(Catalog):
    metastore = "rest"

    def __init__(self, options: CatalogOptions) -> None:
        super().__init__(options)
        self.uri = options.require("uri", "the REST catalog's http(s):// URL").rstrip("/")
        if not self.uri.startswith(("http://", "https://")):
            raise errors.CatalogError(f"metastore=rest: uri {self.uri!r} is not an http(s) URL", option="uri",
                                      fix="set uri=https://catalog-host:port")
        provider = (options.get("token.provider") or "bear").lower()
        if provider != "bear":
            raise errors.CatalogError(f"metastore=rest: token.provider={provider} is not supported by tablekeeper",
                                      option="token.provider", fix="use token.provider=bear with token=<bearer token>")
        self._token = options.require("token", "the bearer token")
        warehouse = options.require("warehouse", "the catalog's warehouse name")
        defaults, overrides = rest_responses.config(
            self._request("GET", "/v1/config?" + urlencode({"warehouse": warehouse})))
        merged = {**defaults, **dict(options.raw), **overrides}
        self.server_options: dict[str, str] = {str(k): str(v) for k, v in merged.items()}
        prefix = self.server_options.get("prefix")
        self._base = "/v1/" + (quote(prefix, safe="") + "/" if prefix else "")
        self.data_token_enabled = self.server_options.get("data-token.enabled", "false").lower() == "true"
        self._tokens: dict[str, tuple[dict[str, str], int]] = {}
        self._tokens_lock = threading.Lock()

    # -- HTTP ---------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.uri + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self._token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as e:
            if e.code in (401, 403):
                raise errors.CatalogError(f"the REST catalog at {self.uri} refused the token (HTTP {e.code})",
                                          option="token", fix="set token to a valid (unexpired) bearer token") from e
            if e.code == 409:
                raise errors.AlreadyExistsError(f"the REST catalog refused {method} {path.split('?')[0]}: it exists "
                                                "already (HTTP 409)", fix="choose another name, or delete it first") from e
            if e.code == 404:
                raise errors.NotFoundError(f"the REST catalog has no {path.split('?')[0]}",
                                           fix="check the database.table name") from e
            raise errors.CatalogError(f"the REST catalog at {self.uri} answered HTTP {e.code} to {method} "
                                      f"{path.split('?')[0]}", option="uri", fix="check the server's log") from e
        except (urllib.error.URLError, OSError) as e:
            raise errors.CatalogError(f"no REST catalog answers at {self.uri} ({getattr(e, 'reason', e)})",
                                      option="uri", fix="check uri and that the catalog server is running") from e
        return rest_responses.decode(raw, f"{method} {path.split('?')[0]}")

    def _table_path(self, identifier: str) -> str:
        db, name = split_identifier(identifier)
        return f"{self._base}databases/{quote(db, safe='')}/tables/{quote(name, safe='')}"

    def _paged(self, path: str, key: str) -> list[str]:
        out: list[str] = []
        token: str | None = None
        seen: set[str] = set()
        for _ in range(rest_responses.MAX_PAGES):
            answer = self._request("GET", path + ("?" + urlencode({"pageToken": token}) if token else ""))
            names, token = rest_responses.page(answer, f"GET {path}", key)
            out.extend(names)
            if token is None:
                return out
            if token in seen:
                raise errors.CatalogError(f"the REST catalog answered GET {path} with page token {token!r} twice: "
                                          "the listing never ends", option="uri", fix="check the server's log")
            seen.add(token)
        raise errors.CatalogError(f"the REST catalog answered GET {path} with more than {rest_responses.MAX_PAGES} "
                                  "pages", option="uri", fix="check the server's log")

    # -- the catalog --------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        return sorted(self._paged(f"{self._base}databases", "databases"))

    def list_tables(self, database: str) -> list[str]:
        try:
            return sorted(self._paged(f"{self._base}databases/{quote(database, safe='')}/tables", "tables"))
        except errors.NotFoundError:
            raise errors.NotFoundError(f"the REST catalog has no database {database!r}",
                                       fix="list databases with the catalog") from None

    def resolve(self, identifier: str, storage_options: Mapping[str, Any]) -> CatalogTable:
        try:
            table = self._request("GET", self._table_path(identifier))
        except errors.NotFoundError:
            raise errors.TableNotFoundError(f"table {identifier} is not in the REST catalog {self.uri}",
                                            fix="check the database.table name") from None
        path, table_id = rest_responses.table_location(table, identifier)
        return CatalogTable(identifier, path, self, {**storage_options, **self.data_token(identifier)},
                            {"id": table_id})

    def data_token(self, identifier: str) -> dict[str, str]:
        """The storage credentials the server vends for the table (``data-token.enabled``), fetched
        again within :data:`TOKEN_REFRESH_MARGIN_S` of their expiry. Only Paimon file-system
        options (``fs.*``, ``s3.*``...) are passed on to storage."""
        if not self.data_token_enabled:
            return {}
        with self._tokens_lock:
            cached = self._tokens.get(identifier)
            if cached is None or cached[1] - TOKEN_REFRESH_MARGIN_S * 1000 <= time.time() * 1000:
                cached = rest_responses.data_token(self._request("GET", self._table_path(identifier) + "/token"),
                                                   identifier)
                self._tokens[identifier] = cached
            return {k: v for k, v in cached[0].items() if k.startswith(("fs.", "s3.", "oss.", "dlf."))}

    def data_token_expires_ms(self, identifier: str) -> int | None:
        """When the data token last fetched for the table expires (epoch ms), or None."""
        cached = self._tokens.get(identifier)
        return None if cached is None else cached[1]

    def forget_data_token(self, identifier: str) -> None:
        """Drop the cached token (the store refused it): the next open fetches a new one."""
        with self._tokens_lock:
            self._tokens.pop(identifier, None)

    def owner(self, operation: Operation) -> Owner:
        return Owner.CATALOG if operation in SERVER_OWNED else Owner.STORAGE

    # -- operations the server carries out (its API) -------------------------------------------
    def create_tag(self, identifier: str, tag: str, snapshot_id: int | None = None,
                   time_retained: str | None = None) -> None:
        """``POST …/tags`` (the server writes the tag file). The API has no rename or replace."""
        body: dict[str, Any] = {"tagName": tag, "snapshotId": snapshot_id}
        if time_retained is not None:
            body["timeRetained"] = time_retained
        self._request("POST", self._table_path(identifier) + "/tags", body)

    def delete_tag(self, identifier: str, tag: str) -> None:
        self._request("DELETE", self._table_path(identifier) + f"/tags/{quote(tag, safe='')}")

    def create_branch(self, identifier: str, branch: str, from_tag: str | None = None) -> None:
        self._request("POST", self._table_path(identifier) + "/branches", {"branch": branch, "fromTag": from_tag})

    def drop_branch(self, identifier: str, branch: str) -> None:
        self._request("DELETE", self._table_path(identifier) + f"/branches/{quote(branch, safe='')}")

    def fast_forward(self, identifier: str, branch: str) -> None:
        self._request("POST", self._table_path(identifier) + f"/branches/{quote(branch, safe='')}/forward", {})

    def rollback(self, identifier: str, *, snapshot_id: int | None = None, tag: str | None = None) -> None:
        """``POST …/rollback`` to a snapshot or a tag (exactly one)."""
        if (snapshot_id is None) == (tag is None):
            raise errors.InvalidInputError("rollback needs a snapshot or a tag", fix="give exactly one")
        instant: dict[str, Any] = {"type": "snapshot", "snapshotId": snapshot_id} if tag is None else \
            {"type": "tag", "tagName": tag}
        self._request("POST", self._table_path(identifier) + "/rollback", {"instant": instant})

    def reset_consumer(self, identifier: str, consumer: str, next_snapshot_id: int | None) -> None:
        """``POST …/consumers/reset``: move the consumer (None deletes it)."""
        self._request("POST", self._table_path(identifier) + "/consumers/reset",
                      {"consumerId": consumer, "nextSnapshotId": next_snapshot_id})
