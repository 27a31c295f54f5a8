"""The API server emulator the controller tests and ``bench/operator.py`` use: the shared
``ApiServerEmulator`` (tests/support/k8s.py) plus two fixes the real operator needs."""

from __future__ import annotations

import re

import aiohttp.web
import attrs
import kmock

from tests.support.k8s import NAMESPACES, ApiServerEmulator, CRDValidator

__all__ = ["OperatorEmulator"]

_NAMESPACE_PATH = re.compile(r"^/api/v1/namespaces/([^/]+)/?$")


@attrs.define(kw_only=True)
class OperatorEmulator(ApiServerEmulator):
    """The emulator, plus reading one Namespace (kmock parses that path as a namespaced list),
    and a ``resourceVersion`` bump on merge-patches of ``/status`` (``ApiServerEmulator`` computes
    the new version on a metadata dict it shares with the old object, so the merge diff loses it and
    the object keeps its version: Kopf's finalizer patches then fail their version test)."""

    def _prepare(self, request: kmock.Request) -> None:
        super()._prepare(request)
        if request.action == kmock.action.UPDATE and request.subresource == "status" \
                and isinstance(request.data, dict) and isinstance(self.validators.get(request.resource), CRDValidator):
            key = (request.resource, request.namespace, request.name)
            if key in self.objects and not self.objects[key].deleted:
                meta = request.data.get("metadata")
                if not isinstance(meta, dict):
                    meta = request.data["metadata"] = {}
                meta["resourceVersion"] = self._next_version()

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        match = _NAMESPACE_PATH.match(raw_request.path)
        if match and raw_request.method == "GET":  # kmock cannot parse this path (500)
            await raw_request.read()
            self.api_calls.append((raw_request.headers.get("User-Agent", ""), None, "", "namespaces", "get"))
            key = (NAMESPACES, None, match.group(1))
            if key in self.objects and not self.objects[key].deleted:
                return aiohttp.web.json_response(dict(self.objects[key].raw))
            return aiohttp.web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                              "reason": "NotFound", "code": 404,
                                              "message": f'namespaces "{match.group(1)}" not found'}, status=404)
        return await super().__call__(raw_request)
