"""Which store a warehouse URI names, and how Paimon's option names become fsspec arguments.

One place decides, per store: the fsspec implementation, its keyword arguments (from the options
as Paimon's users write them, then the environment as each SDK reads it by default), and how a
URI maps to the implementation's own path and back. Missing credentials or endpoints are refused
here with the option to set, before any request is made.

| Store | Schemes | fsspec implementation |
|---|---|---|
| local | path, ``file:`` | ``file`` |
| S3 | ``s3``, ``s3a``, ``s3n`` | s3fs |
| OSS | ``oss`` | s3fs against OSS's S3-compatible API (see docs/storage.md: why not ossfs) |
| HDFS | ``hdfs``, ``webhdfs`` | fsspec's WebHDFS |
| GCS | ``gs``, ``gcs`` | gcsfs |
| Azure | ``abfs``, ``abfss``, ``wasb``, ``wasbs``, ``az`` | adlfs |
"""

from __future__ import annotations

from collections.abc import Mapping

from tablekeeper.core import errors
from tablekeeper.core.pycompat import StrEnum

__all__ = ["Store", "SCHEMES", "store_of", "split_scheme", "credential_env_names", "executor_credential_env"]


class Store(StrEnum):
    LOCAL = "local"
    S3 = "s3"
    OSS = "oss"
    HDFS = "hdfs"
    GCS = "gcs"
    AZURE = "azure"


SCHEMES: Mapping[str, Store] = {
    "file": Store.LOCAL,
    "s3": Store.S3, "s3a": Store.S3, "s3n": Store.S3,
    "oss": Store.OSS,
    "hdfs": Store.HDFS, "webhdfs": Store.HDFS,
    "gs": Store.GCS, "gcs": Store.GCS,
    "abfs": Store.AZURE, "abfss": Store.AZURE, "wasb": Store.AZURE, "wasbs": Store.AZURE, "az": Store.AZURE,
}

#: Environment variables each store's SDK reads credentials from (handed to Spark executors and
#: documented per store; the values never enter job arguments).
_CREDENTIAL_ENV: Mapping[Store, tuple[str, ...]] = {
    Store.S3: ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    Store.OSS: ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "OSS_SESSION_TOKEN"),
    Store.HDFS: ("HADOOP_USER_NAME",),
    Store.GCS: ("GOOGLE_APPLICATION_CREDENTIALS",),
    Store.AZURE: ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_SAS_TOKEN",
                  "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET"),
}


#: The environment variables a Spark executor pod on Kubernetes gets from the catalog's Secret
#: (``secretKeyRef``: each must exist in the Secret). GCS: workload identity; Azure with a SAS or a
#: connection string: name those keys explicitly (``credentials_keys``).
_EXECUTOR_ENV: Mapping[Store, tuple[str, ...]] = {
    Store.S3: ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    Store.OSS: ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET"),
    Store.AZURE: ("AZURE_STORAGE_ACCOUNT_KEY",),
    Store.HDFS: ("HADOOP_USER_NAME",),
}


def executor_credential_env(warehouse: str) -> tuple[str, ...]:
    """Secret keys handed to Spark executors as environment variables for ``warehouse``'s store."""
    scheme = split_scheme(warehouse)[0]
    store = SCHEMES.get(scheme)
    return _EXECUTOR_ENV.get(store, ()) if store is not None else ()


def credential_env_names(store: Store) -> tuple[str, ...]:
    """Environment variables that carry ``store``'s credentials (empty for local disk)."""
    return _CREDENTIAL_ENV.get(store, ())


def split_scheme(uri: str) -> tuple[str, str]:
    """``(scheme, rest)``; a plain path is ``("file", path)``."""
    if uri.startswith("file://"):
        return "file", uri[len("file://"):]
    if uri.startswith("file:"):
        return "file", uri[len("file:"):]
    if "://" in uri:
        scheme, rest = uri.split("://", 1)
        return scheme.lower(), rest
    return "file", uri


def store_of(uri: str) -> Store:
    """The store behind ``uri``; an unknown scheme is bad input naming the supported ones."""
    scheme, _ = split_scheme(uri)
    store = SCHEMES.get(scheme)
    if store is None:
        hint = " (viewfs: resolve the mount point and give its hdfs:// URI)" if scheme == "viewfs" else ""
        raise errors.InvalidInputError(
            f"unsupported storage scheme {scheme!r} in {uri!r}{hint}",
            fix="use one of " + ", ".join(f"{s}://" for s in sorted(SCHEMES) if s != "file") + " or a local path")
    return store


