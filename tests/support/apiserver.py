"""A real kube-apiserver + etcd for the ``apiserver`` test tier (``scripts/k8s-testenv``).

Why a real server next to the emulator (tests/support/k8s.py): the emulator is fast and lets the
tests look inside, but only a real API server enforces RBAC, runs the real CEL and OpenAPI
validation, namespaces, the status subresource and ``generation``. The binaries are built once from
Go modules into ``~/.cache/tablekeeper/k8s-testenv`` (no container images can be pulled here).

- :func:`ensure_built` builds (or reuses) the binaries; it raises :class:`TestenvUnavailable` when
  Go is missing, which the fixtures turn into a skip, or a failure under ``CI=true``.
- :class:`Testenv` is one running server (started by :func:`start`, stopped by :meth:`Testenv.stop`)
  with a small synchronous REST client (:class:`Rest`) for the admin and for any bearer token.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
import requests
import yaml

from tests.support.k8s import REPO_ROOT

__all__ = ["SCRIPT", "Rest", "Testenv", "TestenvUnavailable", "ensure_built", "metric_counts", "start"]

SCRIPT = REPO_ROOT / "scripts" / "k8s-testenv"
_MISSING_GO = 3  # the script's exit code when Go is missing


class TestenvUnavailable(RuntimeError):
    """The toolchain to build the control plane is missing (a skip outside CI)."""

    __test__ = False


def _script(*args: str, env: Mapping[str, str] | None = None, timeout: float = 3600) -> str:
    result = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})}, check=False)
    if result.returncode == _MISSING_GO:
        raise TestenvUnavailable(result.stderr.strip().splitlines()[-1])
    if result.returncode != 0:
        raise RuntimeError(f"scripts/k8s-testenv {' '.join(args)} failed ({result.returncode}):\n"
                           f"{result.stderr[-4000:]}")
    return result.stdout


def ensure_built() -> Path:
    """The directory of the cached binaries, built first if needed (cold: see docs/verification.md)."""
    return Path(_script("build").strip().splitlines()[-1])


class Rest:
    """A synchronous JSON client for one identity (admin client certificate or a bearer token).

    Plain ``requests`` keeps what is sent explicit: merge patches are merge patches, a rejection is
    the API server's ``Status`` as it is.
    """

    def __init__(self, server: str, ca: Path, *, cert: tuple[str, str] | None = None, token: str | None = None,
                 impersonate: str | None = None) -> None:
        self.server = server
        self.session = requests.Session()
        self.session.trust_env = False  # REQUESTS_CA_BUNDLE would override verify
        self.session.verify = str(ca)
        if cert:
            self.session.cert = cert
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        if impersonate:
            self.session.headers["Impersonate-User"] = impersonate

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                params: Mapping[str, str] | None = None) -> requests.Response:
        data = None if body is None else (body if isinstance(body, str) else json.dumps(body))
        for _ in range(20):  # 429: the server is busy (a loaded machine); it says when to retry
            resp = self.session.request(method, self.server + path, data=data, params=params, timeout=30,
                                        headers={"Content-Type": content_type} if data is not None else None)
            if resp.status_code != 429:
                break
            time.sleep(float(resp.headers.get("Retry-After") or 1))
        return resp

    def get(self, path: str, **params: str) -> dict[str, Any] | None:
        resp = self.request("GET", path, params=params or None)
        if resp.status_code == 404:
            return None
        resp.raise_for_status()
        return dict(resp.json())

    def create(self, path: str, body: Mapping[str, Any]) -> requests.Response:
        return self.request("POST", path, body)

    def merge_patch(self, path: str, body: Mapping[str, Any]) -> requests.Response:
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def apply(self, path: str, body: Mapping[str, Any], manager: str = "tablekeeper-tests") -> requests.Response:
        """Server-side apply (``PATCH`` with ``application/apply-patch+yaml``, forced)."""
        return self.request("PATCH", path, yaml.safe_dump(dict(body)), content_type="application/apply-patch+yaml",
                            params={"fieldManager": manager, "force": "true"})

    def delete(self, path: str) -> requests.Response:
        return self.request("DELETE", path)


def object_path(obj: Mapping[str, Any], *, plural: str, collection: bool = False) -> str:
    """The API path of ``obj`` (core group for ``v1``), its collection when ``collection``."""
    api_version = obj["apiVersion"]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    namespace = (obj.get("metadata") or {}).get("namespace")
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{base}{scope}/{plural}" + ("" if collection else f"/{obj['metadata']['name']}")


@dataclass
class Testenv:
    """A running etcd + kube-apiserver (state in ``directory``)."""

    __test__ = False  # not a pytest test class

    directory: Path
    server: str
    ca: Path
    cert: Path
    key: Path
    kubeconfig: Path
    _tokens: dict[tuple[str, str], str] = field(default_factory=dict)

    @property
    def admin(self) -> Rest:
        return Rest(self.server, self.ca, cert=(str(self.cert), str(self.key)))

    def as_token(self, token: str) -> Rest:
        return Rest(self.server, self.ca, token=token)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``kubectl`` with the admin kubeconfig (exactly what a user types, plus ``--kubeconfig``)."""
        kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
        result = subprocess.run([kubectl, "--kubeconfig", str(self.kubeconfig), *args], input=input,
                                capture_output=True, text=True, timeout=timeout, check=False, cwd=REPO_ROOT)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}{result.stdout}")
        return result

    def ensure_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
        resp = self.admin.apply(f"/api/v1/namespaces/{name}", body)
        assert resp.status_code in (200, 201), resp.text

    def service_account_token(self, namespace: str, name: str, *, seconds: int = 7200) -> str:
        """A TokenRequest token of ``namespace/name`` (created if missing)."""
        key = (namespace, name)
        if key not in self._tokens:
            self.ensure_namespace(namespace)
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
            self.admin.apply(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}", sa).raise_for_status()
            resp = self.admin.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                                     {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                      "spec": {"expirationSeconds": seconds}})
            assert resp.status_code == 201, resp.text
            self._tokens[key] = resp.json()["status"]["token"]
        return self._tokens[key]

    def connection(self, token: str | None = None) -> kopf.ConnectionInfo:
        """Kopf's credentials: a bearer token (a ServiceAccount) or the admin certificate."""
        if token:
            return kopf.ConnectionInfo(server=self.server, ca_path=str(self.ca), token=token, scheme="Bearer",
                                       default_namespace="default")
        return kopf.ConnectionInfo(server=self.server, ca_path=str(self.ca), certificate_path=str(self.cert),
                                   private_key_path=str(self.key), default_namespace="default")

    def metrics(self) -> str:
        resp = self.admin.request("GET", "/metrics")
        resp.raise_for_status()
        return resp.text

    def stop(self) -> None:
        _script("stop", env={"K8S_TESTENV_DIR": str(self.directory)}, timeout=60)


_SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} ([0-9.e+]+)$")
_LABEL = re.compile(r'(\w+)="((?:\\.|[^"\\])*)"')


def metric_counts(text: str, name: str = "apiserver_request_total") -> Iterator[tuple[dict[str, str], float]]:
    """``(labels, value)`` of every sample of counter ``name`` in Prometheus text."""
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) == name:
            yield dict(_LABEL.findall(match.group(2))), float(match.group(3))


def start(directory: Path, *, audit_policy: Path | None = None) -> Testenv:
    """Start etcd + kube-apiserver on free 127.0.0.1 ports, state in ``directory`` (with
    ``audit_policy``, the server's audit log goes to ``directory/audit.log``)."""
    env = {"K8S_TESTENV_DIR": str(directory)}
    if audit_policy is not None:
        env["K8S_TESTENV_AUDIT_POLICY"] = str(audit_policy)
    try:
        _script("start", env=env, timeout=300)
        return _connect(directory)
    except BaseException:
        _script("stop", env={"K8S_TESTENV_DIR": str(directory)}, timeout=60)  # never leave servers behind
        raise


def _connect(directory: Path) -> Testenv:
    kubeconfig = directory / "kubeconfig"
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    pki = directory / "pki"
    env = Testenv(directory=directory, server=config["clusters"][0]["cluster"]["server"], ca=pki / "ca.crt",
                  cert=pki / "admin.crt", key=pki / "admin.key", kubeconfig=kubeconfig)
    deadline = time.monotonic() + 60
    while env.admin.get("/api/v1/namespaces/default/serviceaccounts") is None:  # pragma: no cover - timing
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return env
