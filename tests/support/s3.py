"""pytest plugin: S3 on a moto server in this process (test-recipes.md, Recipes 2 and 2b).

Registered from ``tests/conftest.py`` (``pytest_plugins``), so there is exactly one server per
test session however many modules use it.

Fixtures
- ``s3_endpoint`` (session): ``http://127.0.0.1:<random port>`` of a ``ThreadedMotoServer``;
  fake AWS credentials and config in the environment for the whole session, so no test can
  reach real AWS with real credentials.
- ``s3``: an ``s3fs.S3FileSystem`` on that server, after resetting moto (every test starts with
  an empty S3). No listings cache: writes by pypaimon (pyarrow's S3 client) and moto's backend
  are visible at once. The client object is shared by the session (tests that patch it use
  ``monkeypatch``, which undoes the patch).
- ``s3_bucket``: the name of a freshly created bucket (``lake``).
- ``s3_options``: Paimon-style options (``s3.endpoint`` ...) that pypaimon's catalog and
  ``FileIO.for_uri("s3://...", options)`` both accept.
- ``s3_warehouse``: ``s3://lake/wh``.

Helpers (moto's in-process backend; only valid because the server thread runs here)
- ``set_mtime(bucket, key, when)`` / ``backdate(bucket, key, age)``: change an object's
  ``LastModified`` as HEAD and LIST report it.
- ``put_objects(bucket, {key: bytes})``: create many objects without HTTP (1000 objects in
  milliseconds instead of seconds).
- ``put_marker(s3fs, bucket, key)``: a directory-marker object ``key/`` as pyarrow writes them.

Every test using the ``s3`` fixture is marked ``s3`` automatically (``-m "not s3"`` works);
tests should still say ``@pytest.mark.s3`` explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
import s3fs
from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.s3.models import s3_backends
from moto.server import ThreadedMotoServer

__all__ = [
    "FAKE_AWS_ENV",
    "BUCKET",
    "ACCESS_KEY",
    "SECRET_KEY",
    "REGION",
    "paimon_s3_options",
    "set_mtime",
    "backdate",
    "get_mtime",
    "put_objects",
    "put_marker",
    "snapshot_bucket",
    "bucket_snapshot_once",
]

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"
BUCKET = "lake"

#: Never real credentials: fake keys, and no config or credentials file is read.
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_CONFIG_FILE": "/dev/null",
    "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    "AWS_EC2_METADATA_DISABLED": "true",
}
_UNSET = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
          "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")


def paimon_s3_options(endpoint: str) -> dict[str, str]:
    """Options for pypaimon's ``CatalogFactory.create`` (merge with ``warehouse``) and for
    ``FileIO.for_uri``. The endpoint must carry ``http://``: without a scheme pyarrow tries
    HTTPS and retries for about 90 s before failing."""
    if not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"S3 endpoint {endpoint!r} needs a scheme (http://)")
    return {
        "s3.endpoint": endpoint,
        "s3.access-key": ACCESS_KEY,
        "s3.secret-key": SECRET_KEY,
        "s3.region": REGION,
        "s3.path.style.access": "true",
    }


# -- moto's in-process backend ---------------------------------------------------------------
def _backend() -> Any:
    return s3_backends[DEFAULT_ACCOUNT_ID]["aws"]


def _key(bucket: str, key: str) -> Any:
    obj = _backend().get_object(bucket, key.lstrip("/"))
    if obj is None:
        raise FileNotFoundError(f"s3://{bucket}/{key}")
    return obj


def set_mtime(bucket: str, key: str, when: datetime) -> None:
    """Set ``LastModified`` of an existing object (moto stores naive UTC)."""
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    _key(bucket, key).last_modified = when


def backdate(bucket: str, key: str, age: timedelta) -> datetime:
    """Make an object ``age`` old; returns the new (aware, UTC, whole-second) mtime."""
    when = (datetime.now(UTC) - age).replace(microsecond=0)
    set_mtime(bucket, key, when)
    return when


def get_mtime(bucket: str, key: str) -> datetime:
    value: datetime = _key(bucket, key).last_modified
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def put_objects(bucket: str, objects: Mapping[str, bytes]) -> None:
    """Create objects straight in moto's backend (no HTTP round trips)."""
    backend = _backend()
    for key, value in objects.items():
        backend.put_object(bucket, key.lstrip("/"), value)


def snapshot_bucket(bucket: str) -> dict[str, bytes]:
    """Every object of ``bucket`` (directory markers included) as ``{key: bytes}``; restore it
    into a fresh bucket with :func:`put_objects`."""
    return {key: bytes(obj.value) for key, obj in _backend().buckets[bucket].keys.items()}


def bucket_snapshot_once(endpoint: str, build: Any) -> dict[str, bytes]:
    """Run ``build()`` (writes through the S3 API, e.g. pypaimon) once into an empty ``BUCKET``
    and return its objects, then empty moto again. For module-scoped fixtures: a table built once
    on S3 and restored per test with ``put_objects`` is the same bytes as building it per test
    (with new mtimes), in milliseconds instead of the build's many S3 round trips."""
    requests.post(f"{endpoint}/moto-api/reset", timeout=10).raise_for_status()  # as the ``s3`` fixture
    _backend().create_bucket(BUCKET, REGION)
    try:
        build()
        return snapshot_bucket(BUCKET)
    finally:
        requests.post(f"{endpoint}/moto-api/reset", timeout=10).raise_for_status()


def put_marker(fs: s3fs.S3FileSystem, bucket: str, key: str) -> None:
    """An empty ``key/`` object, the directory marker pyarrow's ``create_dir`` writes."""
    fs.call_s3("put_object", Bucket=bucket, Key=key.strip("/") + "/", Body=b"")


# -- fixtures --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        for name in _UNSET:
            mp.delenv(name, raising=False)
        for name, value in FAKE_AWS_ENV.items():
            mp.setenv(name, value)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            yield f"http://{host}:{port}"
        finally:
            server.stop()


@pytest.fixture(scope="session")
def _s3fs_session(s3_endpoint: str) -> s3fs.S3FileSystem:
    # One client for the session: creating an s3fs/aiobotocore client costs 0.1-0.2 s.
    return s3fs.S3FileSystem(key=ACCESS_KEY, secret=SECRET_KEY, endpoint_url=s3_endpoint,
                             skip_instance_cache=True, use_listings_cache=False)


@pytest.fixture
def s3(s3_endpoint: str, _s3fs_session: s3fs.S3FileSystem) -> s3fs.S3FileSystem:
    requests.post(f"{s3_endpoint}/moto-api/reset", timeout=10).raise_for_status()
    _s3fs_session.invalidate_cache()
    return _s3fs_session


@pytest.fixture
def s3_bucket(s3: s3fs.S3FileSystem) -> str:
    s3.mkdir(BUCKET)  # no region in client_kwargs: us-east-1 must not be sent as LocationConstraint
    return BUCKET


@pytest.fixture
def s3_options(s3_endpoint: str) -> dict[str, str]:
    return paimon_s3_options(s3_endpoint)


@pytest.fixture
def s3_warehouse(s3_bucket: str) -> str:
    return f"s3://{s3_bucket}/wh"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "s3" in getattr(item, "fixturenames", ()) and item.get_closest_marker("s3") is None:
            item.add_marker(pytest.mark.s3)
