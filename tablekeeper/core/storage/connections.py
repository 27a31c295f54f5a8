"""How Paimon's option names become fsspec arguments, per store: the implementation's keyword
arguments (from the options as Paimon's users write them, then the environment as each SDK reads
it by default), and how a URI maps to the implementation's own path and back. Missing
credentials or endpoints are refused here with the option to set, before any request is made."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tablekeeper.core import errors
from tablekeeper.core.storage.stores import Store, credential_env_names, split_scheme, store_of

__all__ = ["Connection", "s3_kwargs", "connect", "storage_options_from_paimon"]


@dataclass(frozen=True)
class Connection:
    """How to reach one store: the fsspec protocol and arguments, and the path mapping.

    ``to_raw`` turns a URI of this store into the implementation's path; ``to_uri`` turns such a
    path back (for listings). ``endpoint_option`` names the option that sets the endpoint (for the
    "cannot reach" error); ``redact`` masks secrets in messages built from SDK errors."""

    store: Store
    scheme: str
    protocol: str
    kwargs: Mapping[str, Any]
    to_raw: Callable[[str], str]
    to_uri: Callable[[str], str]
    endpoint: str = ""
    endpoint_option: str = ""
    credentials_option: str = ""


# -- option lookup -----------------------------------------------------------------------------
def _lower(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k.lower(): v for k, v in options.items()}


def _first(options: Mapping[str, Any], *names: str) -> str | None:
    """The first of ``names`` present (case-insensitive), with and without Paimon's ``hadoop.``
    prefix (Paimon passes ``hadoop.*`` options into the Hadoop configuration)."""
    low = _lower(options)
    for name in names:
        for key in (name.lower(), f"hadoop.{name.lower()}"):
            value = low.get(key)
            if value not in (None, ""):
                return str(value)
    return None


def _raw_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options without a dot are fsspec keyword arguments passed through (tests, power users)."""
    return {k: v for k, v in options.items() if "." not in k and "-" not in k}


# -- S3 ----------------------------------------------------------------------------------------
_S3_KEYS = {
    "endpoint": "endpoint",
    "access-key": "key",
    "access.key": "key",
    "accesskeyid": "key",
    "secret-key": "secret",
    "secret.key": "secret",
    "accesskeysecret": "secret",
    "session-token": "token",
    "session.token": "token",
    "security-token": "token",
    "security.token": "token",
    "securitytoken": "token",
    "region": "region",
    "path-style-access": "path_style",
    "path.style.access": "path_style",
}


def s3_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    """Translate Paimon/pypaimon S3 option names (``s3.endpoint``, ``fs.s3a.access-key``,
    ``fs.s3.accessKeyId`` ...) into s3fs keyword arguments."""
    found: dict[str, str] = {}
    for key, value in options.items():
        low = key.lower()
        for prefix in ("fs.s3a.", "fs.s3.", "s3a.", "s3."):
            if low.startswith(prefix):
                suffix = low[len(prefix):]
                if suffix in _S3_KEYS:
                    found[_S3_KEYS[suffix]] = value
                break
    return _s3fs_arguments(found)


def _s3fs_arguments(found: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for name in ("key", "secret", "token"):
        if name in found:
            kwargs[name] = found[name]
    client: dict[str, Any] = {}
    if "endpoint" in found:
        kwargs["endpoint_url"] = found["endpoint"]
    if "region" in found and found["region"] != "us-east-1":
        client["region_name"] = found["region"]
    if client:
        kwargs["client_kwargs"] = client
    if str(found.get("path_style", "")).lower() == "true":
        kwargs["config_kwargs"] = {"s3": {"addressing_style": "path"}}
    return kwargs


def _bucket_paths(scheme: str) -> tuple[Callable[[str], str], Callable[[str], str]]:
    def to_raw(uri: str) -> str:
        return split_scheme(uri)[1]

    def to_uri(raw: str) -> str:
        return f"{scheme}://{raw.lstrip('/')}"

    return to_raw, to_uri


def _s3(scheme: str, options: Mapping[str, Any]) -> Connection:
    kwargs = s3_kwargs(options)
    kwargs.update(_raw_kwargs(options))
    kwargs.setdefault("skip_instance_cache", True)
    kwargs.setdefault("use_listings_cache", False)
    to_raw, to_uri = _bucket_paths(scheme)
    return Connection(Store.S3, scheme, "s3", kwargs, to_raw, to_uri, endpoint=str(kwargs.get("endpoint_url", "")),
                      endpoint_option="s3.endpoint",
                      credentials_option="s3.access-key and s3.secret-key (or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                                         "or pod identity)")


# -- OSS ---------------------------------------------------------------------------------------
def _is_loopback_or_ip(host: str) -> bool:
    return host in ("localhost", "::1") or bool(re.fullmatch(r"[0-9.]+", host))


def _oss(scheme: str, options: Mapping[str, Any]) -> Connection:
    """OSS through its S3-compatible API with s3fs: Paimon's ``fs.oss.*`` options; credentials
    from the options, else ``OSS_ACCESS_KEY_ID``/``OSS_ACCESS_KEY_SECRET`` (Alibaba's SDK
    convention). OSS wants virtual-hosted addressing; an IP or localhost endpoint (a local
    S3-compatible test server) gets path style."""
    endpoint = _first(options, "fs.oss.endpoint", "oss.endpoint")
    if not endpoint:
        raise errors.InvalidInputError(f"{scheme}:// needs the OSS endpoint",
                                       fix="set fs.oss.endpoint, e.g. oss-cn-hangzhou.aliyuncs.com")
    if not endpoint.startswith(("http://", "https://")):
        endpoint = f"https://{endpoint}"
    key = _first(options, "fs.oss.accessKeyId", "fs.oss.access-key-id", "oss.accessKeyId") or os.environ.get(
        "OSS_ACCESS_KEY_ID")
    secret = _first(options, "fs.oss.accessKeySecret", "fs.oss.access-key-secret", "oss.accessKeySecret") or \
        os.environ.get("OSS_ACCESS_KEY_SECRET")
    token = _first(options, "fs.oss.securityToken", "fs.oss.security-token") or os.environ.get("OSS_SESSION_TOKEN")
    if not key or not secret:
        raise errors.InvalidInputError(
            f"{scheme}:// needs OSS credentials",
            fix="set fs.oss.accessKeyId and fs.oss.accessKeySecret (in the catalog's Secret) or the environment "
                "variables OSS_ACCESS_KEY_ID and OSS_ACCESS_KEY_SECRET")
    from urllib.parse import urlsplit  # remote stores only (start-up of local commands)

    host = urlsplit(endpoint).hostname or ""
    found = {"endpoint": endpoint, "key": key, "secret": secret}
    if token:
        found["token"] = token
    region = _first(options, "fs.oss.region")
    match = re.match(r"(?:s3\.)?oss-([a-z0-9-]+?)(?:-internal)?\.aliyuncs\.com$", host)
    if region is None and match:
        region = f"oss-{match.group(1)}"
    if region:
        found["region"] = region
    if _is_loopback_or_ip(host):
        found["path_style"] = "true"
    kwargs = _s3fs_arguments(found)
    if "config_kwargs" not in kwargs:
        kwargs["config_kwargs"] = {"s3": {"addressing_style": "virtual"}}
    kwargs.update(_raw_kwargs(options))
    kwargs.setdefault("skip_instance_cache", True)
    kwargs.setdefault("use_listings_cache", False)
    to_raw, to_uri = _bucket_paths(scheme)
    return Connection(Store.OSS, scheme, "s3", kwargs, to_raw, to_uri, endpoint=endpoint,
                      endpoint_option="fs.oss.endpoint", credentials_option="fs.oss.accessKeyId and fs.oss.accessKeySecret")


# -- HDFS --------------------------------------------------------------------------------------
def _user() -> str:
    import getpass  # HDFS only

    return getpass.getuser()


def _hadoop_site(conf_dir: str) -> dict[str, str]:
    """Properties of ``core-site.xml`` and ``hdfs-site.xml`` in a Hadoop configuration directory."""
    import xml.etree.ElementTree as ElementTree  # HDFS only (start-up of every other command)

    out: dict[str, str] = {}
    for name in ("core-site.xml", "hdfs-site.xml"):
        path = os.path.join(conf_dir, name)
        if not os.path.exists(path):
            continue
        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError) as e:
            raise errors.InvalidInputError(f"cannot read {path}: {e}", fix="fix hadoop-conf-dir / HADOOP_CONF_DIR") from e
        for prop in root.iter("property"):
            key, value = prop.findtext("name"), prop.findtext("value")
            if key and value is not None:
                out[key.strip()] = value.strip()
    return out


def _hdfs(scheme: str, uri: str, options: Mapping[str, Any]) -> Connection:
    """HDFS through WebHDFS (fsspec). The NameNode comes from the URI's authority, else
    ``fs.defaultFS``; its HTTP port from ``dfs.namenode.http-address`` (options, ``hadoop.``
    prefixed options, or ``hadoop-conf-dir``/``HADOOP_CONF_DIR``), default 9870. ``webhdfs://host:port``
    names the HTTP address directly. Kerberos is not supported (docs/storage.md): a delegation
    token may be given instead."""
    conf: dict[str, str] = {}
    conf_dir = _first(options, "hadoop-conf-dir", "hadoop.conf.dir") or os.environ.get("HADOOP_CONF_DIR")
    if conf_dir:
        conf.update(_hadoop_site(conf_dir))
    conf.update({k: str(v) for k, v in options.items()})

    def get(*names: str) -> str | None:
        return _first(conf, *names)

    if (get("hadoop.security.authentication") or "simple").lower() == "kerberos" and not get(
            "dfs.webhdfs.delegation-token", "hdfs.delegation-token"):
        raise errors.InvalidInputError(
            "HDFS with Kerberos is not supported by tablekeeper's WebHDFS client",
            fix="set dfs.webhdfs.delegation-token to a delegation token (hdfs fetchdt), or use simple authentication")
    rest = split_scheme(uri)[1]
    authority, _, _ = rest.partition("/")
    if not authority:
        default_fs = get("fs.defaultFS", "fs.default.name")
        if not default_fs:
            raise errors.InvalidInputError(f"{uri!r} names no NameNode", fix="write hdfs://namenode:8020/path or set fs.defaultFS")
        from urllib.parse import urlsplit  # remote stores only (start-up of local commands)

        authority = urlsplit(default_fs).netloc
    host, _, port_text = authority.partition(":")
    use_https = (get("dfs.http.policy") or "").upper() == "HTTPS_ONLY"
    if scheme == "webhdfs":
        http_port = int(port_text or 9870)
        endpoint_option = "the port of webhdfs://host:port"
    else:
        address = get(f"dfs.namenode.{'https' if use_https else 'http'}-address.{host}",
                      f"dfs.namenode.{'https' if use_https else 'http'}-address")
        http_host, _, http_port_text = (address or "").partition(":")
        if http_host and http_host not in ("0.0.0.0", "::"):
            host = http_host
        http_port = int(http_port_text or (9871 if use_https else 9870))
        endpoint_option = "dfs.namenode.http-address"
    kwargs: dict[str, Any] = {"host": host, "port": http_port, "use_https": use_https}
    token = get("dfs.webhdfs.delegation-token", "hdfs.delegation-token")
    if token:
        kwargs["token"] = token
    else:
        kwargs["user"] = get("hadoop.user.name", "hadoop.job.ugi") or os.environ.get("HADOOP_USER_NAME") or \
            _user()
    kwargs.update(_raw_kwargs(options))
    kwargs.setdefault("skip_instance_cache", True)

    def to_raw(path: str) -> str:
        return "/" + split_scheme(path)[1].partition("/")[2].lstrip("/")

    def to_uri(raw: str) -> str:
        return f"{scheme}://{authority}/{raw.lstrip('/')}"

    return Connection(Store.HDFS, scheme, "webhdfs", kwargs, to_raw, to_uri,
                      endpoint=f"{'https' if use_https else 'http'}://{host}:{http_port}", endpoint_option=endpoint_option,
                      credentials_option="hadoop.user.name (or HADOOP_USER_NAME) or dfs.webhdfs.delegation-token")


# -- GCS ---------------------------------------------------------------------------------------
def _gcs(scheme: str, options: Mapping[str, Any]) -> Connection:
    """GCS with gcsfs and the GCS connector's ``fs.gs.*`` options: a service-account key file, or
    its email/private key id/private key (so a Kubernetes Secret can hold them), or
    ``fs.gs.auth.type=UNAUTHENTICATED``; otherwise Google's default credentials
    (``GOOGLE_APPLICATION_CREDENTIALS``, workload identity). ``fs.gs.storage.root.url`` points at
    another endpoint (an emulator)."""
    kwargs: dict[str, Any] = {}
    project = _first(options, "fs.gs.project.id", "gcs.project")
    if project:
        kwargs["project"] = project
    endpoint = _first(options, "fs.gs.storage.root.url", "gcs.endpoint")
    if endpoint:
        kwargs["endpoint_url"] = endpoint.rstrip("/")
    auth_type = (_first(options, "fs.gs.auth.type") or "").upper()
    keyfile = _first(options, "fs.gs.auth.service.account.json.keyfile")
    email = _first(options, "fs.gs.auth.service.account.email", "fs.gs.client.email")
    private_key = _first(options, "fs.gs.auth.service.account.private.key")
    private_key_id = _first(options, "fs.gs.auth.service.account.private.key.id")
    if auth_type in ("UNAUTHENTICATED", "NONE"):
        kwargs["token"] = "anon"
    elif private_key:
        if not email:
            raise errors.InvalidInputError("fs.gs.auth.service.account.private.key is set without its account",
                                           fix="set fs.gs.auth.service.account.email")
        kwargs["token"] = {
            "type": "service_account", "client_email": email, "private_key": private_key.replace("\\n", "\n"),
            "private_key_id": private_key_id or "", "token_uri": "https://oauth2.googleapis.com/token",
            "project_id": project or "",
        }
    elif keyfile:
        if not os.path.exists(keyfile):
            raise errors.InvalidInputError(f"service account key file {keyfile} does not exist",
                                           fix="fix fs.gs.auth.service.account.json.keyfile")
        kwargs["token"] = keyfile
    else:
        kwargs["token"] = "google_default"
    kwargs.update(_raw_kwargs(options))
    kwargs.setdefault("skip_instance_cache", True)
    kwargs.setdefault("use_listings_cache", False)
    to_raw, to_uri = _bucket_paths(scheme)
    return Connection(Store.GCS, scheme, "gcs", kwargs, to_raw, to_uri, endpoint=endpoint or "https://storage.googleapis.com",
                      endpoint_option="fs.gs.storage.root.url",
                      credentials_option="fs.gs.auth.service.account.json.keyfile or "
                                         "fs.gs.auth.service.account.email/.private.key (or GOOGLE_APPLICATION_CREDENTIALS)")


# -- Azure -------------------------------------------------------------------------------------
def _azure(scheme: str, uri: str, options: Mapping[str, Any]) -> Connection:
    """Azure Blob / ADLS Gen2 with adlfs. ``abfs[s]://container@account.dfs.core.windows.net/path``
    (and ``wasb[s]://container@account.blob.core.windows.net/path``) as Hadoop writes them;
    credentials from hadoop-azure's ``fs.azure.*`` options (account key, fixed SAS token,
    OAuth client credentials), a connection string (``fs.azure.connection-string``), else the
    environment as adlfs and Azure's SDK read it (``AZURE_STORAGE_*``, ``AZURE_CLIENT_*``)."""
    rest = split_scheme(uri)[1]
    authority = rest.partition("/")[0]
    container, at, host = authority.partition("@")
    account = host.split(".", 1)[0] if at else (_first(options, "fs.azure.account.name") or
                                                os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") or "")
    suffixes = (host,) if at else ()
    kwargs: dict[str, Any] = {}
    connection_string = _first(options, "fs.azure.connection-string", "fs.azure.connection.string",
                               "azure.connection-string")
    account_key = _first(options, *(f"fs.azure.account.key.{s}" for s in suffixes), "fs.azure.account.key")
    sas = _first(options, *(f"fs.azure.sas.fixed.token.{s}" for s in suffixes),
                 *(f"fs.azure.sas.{container}.{s}" for s in suffixes), "fs.azure.sas.fixed.token", "fs.azure.sas.token")
    client_id = _first(options, *(f"fs.azure.account.oauth2.client.id.{s}" for s in suffixes),
                       "fs.azure.account.oauth2.client.id")
    client_secret = _first(options, *(f"fs.azure.account.oauth2.client.secret.{s}" for s in suffixes),
                           "fs.azure.account.oauth2.client.secret")
    tenant_endpoint = _first(options, *(f"fs.azure.account.oauth2.client.endpoint.{s}" for s in suffixes),
                             "fs.azure.account.oauth2.client.endpoint")
    if connection_string:
        kwargs["connection_string"] = connection_string
    else:
        if not account:
            raise errors.InvalidInputError(
                f"{uri!r} names no storage account",
                fix=f"write {scheme}://container@account.dfs.core.windows.net/path or set fs.azure.account.name")
        kwargs["account_name"] = account
        if host and not host.endswith((".dfs.core.windows.net", ".blob.core.windows.net")):
            kwargs["account_host"] = host
        if account_key:
            kwargs["account_key"] = account_key
        elif sas:
            kwargs["sas_token"] = sas
        elif client_id and client_secret and tenant_endpoint:
            match = re.search(r"login\.microsoftonline\.com/([^/]+)/", tenant_endpoint)
            kwargs.update(client_id=client_id, client_secret=client_secret,
                          tenant_id=match.group(1) if match else tenant_endpoint)
        elif not any(os.environ.get(n) for n in credential_env_names(Store.AZURE)):
            kwargs["anon"] = False  # DefaultAzureCredential: managed / workload identity
    kwargs.update(_raw_kwargs(options))
    kwargs.setdefault("skip_instance_cache", True)

    def to_raw(path: str) -> str:
        rest_of = split_scheme(path)[1]
        auth, _, key = rest_of.partition("/")
        return f"{auth.partition('@')[0]}/{key}".rstrip("/") if key else auth.partition("@")[0]

    def to_uri(raw: str) -> str:
        cont, _, key = raw.lstrip("/").partition("/")
        auth = f"{cont}@{host}" if at else cont
        return f"{scheme}://{auth}/{key}" if key else f"{scheme}://{auth}"

    return Connection(Store.AZURE, scheme, "abfs", kwargs, to_raw, to_uri, endpoint=host or account,
                      endpoint_option="the account host of the URI (container@account.dfs.core.windows.net)",
                      credentials_option=f"fs.azure.account.key.{host or '<account host>'} or a SAS "
                                         f"(fs.azure.sas.fixed.token.{host or '<account host>'}) or "
                                         "fs.azure.connection-string")


# -- entry point -------------------------------------------------------------------------------
def connect(uri: str, options: Mapping[str, Any] | None = None) -> Connection:
    """The connection for ``uri`` with Paimon-style ``options`` (or raw fsspec keyword arguments,
    keys without dots). Raises ``InvalidInputError`` naming the option to set."""
    options = dict(options or {})
    scheme = split_scheme(uri)[0]
    store = store_of(uri)
    if store is Store.LOCAL:
        def to_raw(path: str) -> str:
            return split_scheme(path)[1]

        return Connection(Store.LOCAL, "file", "file", {}, to_raw, lambda raw: raw)
    if store is Store.S3:
        return _s3(scheme, options)
    if store is Store.OSS:
        return _oss(scheme, options)
    if store is Store.HDFS:
        return _hdfs(scheme, uri, options)
    if store is Store.GCS:
        return _gcs(scheme, options)
    return _azure(scheme, uri, options)


def storage_options_from_paimon(options: Mapping[str, str]) -> dict[str, Any]:
    """Translate Paimon/pypaimon S3 option names (``s3.endpoint``, ``fs.s3a.access-key``,
    ``fs.s3.accessKeyId`` ...) into s3fs keyword arguments."""
    return s3_kwargs(options)
