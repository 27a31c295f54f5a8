"""S3 and OSS (OSS through its S3-compatible API), with s3fs.

What the S3 API adds to an object store (:mod:`.object_store`):

- every HTTP request is counted (and paced) at botocore's ``before-send`` event, pages and
  retries included; botocore's and s3fs's own retries are off, tablekeeper's layer owns them;
- create-if-absent is ``PutObject`` with ``If-None-Match: *``; on OSS also OSS's documented
  ``x-oss-forbid-overwrite: true`` (:mod:`..oss_headers`);
- DeleteObjects: 1000 keys a request, retried for the keys that failed only;
- a file's existence is one HEAD and a directory's one LIST of one key (s3fs's ``exists`` asks
  both), a directory is listed by its own prefix only (s3fs lists the parent as well when a
  directory is empty or absent), and a large prefix is listed in segments at once
  (:mod:`..segmented`);
- on a bucket with versioning Enabled (GetBucketVersioning, asked once per bucket) a delete keeps
  the object as a noncurrent version: :meth:`S3IO.keeps_versions`, which the trash uses to record
  version ids instead of copying (OSS answers for itself and is not asked).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tablekeeper.core.storage import layers
from tablekeeper.core.storage.backends import remote_deletes
from tablekeeper.core.storage.backends.object_store import ObjectStoreIO
from tablekeeper.core.storage.connections import Connection
from tablekeeper.core.storage.entries import DeleteOutcome, DeleteResult
from tablekeeper.core.storage.layers import RequestKind, RequestLayer
from tablekeeper.core.storage.stores import Store

if TYPE_CHECKING:
    import fsspec

    from tablekeeper.core.storage.backends import segmented

__all__ = ["S3IO"]


class S3IO(ObjectStoreIO):
    """S3 and OSS (module docstring)."""

    bulk_deletes: ClassVar[bool] = True
    exact_existence: ClassVar[bool] = True

    #: largest object one CopyObject copies (5 GiB)
    COPY_MAX: ClassVar[int] = 5 << 30

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: bucket -> whether its versioning is Enabled (asked once: :meth:`keeps_versions`)
        self._versioned: dict[str, bool] = {}

    @classmethod
    def open_filesystem(cls, connection: Connection, layer: RequestLayer,
                        options: Mapping[str, Any] | None) -> tuple[fsspec.AbstractFileSystem | None, bool]:
        kwargs = dict(connection.kwargs)
        if connection.store is Store.OSS:  # create-if-absent as OSS documents it (oss_headers)
            from tablekeeper.core.storage.backends.oss_headers import oss_session

            kwargs.setdefault("session", oss_session())
        # tablekeeper's retry layer owns retries (one budget, per-key bulk-delete retries)
        config = dict(kwargs.get("config_kwargs") or {})
        config.setdefault("retries", {"max_attempts": 1, "mode": "standard"})
        kwargs["config_kwargs"] = config
        if "session" not in kwargs:
            from aiobotocore.session import AioSession

            kwargs["session"] = AioSession()
        # count (and pace) every HTTP request, pages and retries included (OSS: on its session)
        kwargs["session"].register("before-send.s3", layer.botocore_hook())
        fs: Any = cls._filesystem(connection, kwargs, options)
        fs.retries = 1
        return fs, True

    def _s3(self, operation: str, kind: RequestKind, **kwargs: Any) -> Any:
        """One S3 API request through s3fs's client, retried and counted."""
        fs: Any = self.fs
        return self._call(lambda: fs.call_s3(operation, **kwargs), kind)

    def _bucket_key(self, path: str) -> tuple[str, str]:
        bucket, _, key = self.raw(path).lstrip("/").partition("/")
        return bucket, key

    # -- listing ---------------------------------------------------------------------------
    def _ls(self, raw: str) -> list[dict[str, Any]]:
        """A directory listed by its own prefix only (module docstring): a second LIST per
        absent branch/, changelog/, consumer/ directory otherwise."""
        from fsspec.asyn import sync

        fs: Any = self.fs
        infos: list[dict[str, Any]] = sync(fs.loop, fs._lsdir, raw)
        return infos

    def _find_all(self, raw_root: str, segments_max: int | None, page_keys: int | None) -> dict[str, dict[str, Any]]:
        """Listed by :func:`.segmented.list_prefix`: each page one request, retried and counted;
        up to ``segments_max`` segments at once (default ``SEGMENTS_MAX``), ``page_keys`` keys a
        page (default ``PAGE_KEYS``)."""
        from tablekeeper.core.storage.backends import segmented  # object stores only (start-up)

        bucket, _, key = raw_root.lstrip("/").partition("/")

        def send(request: segmented.PageRequest) -> segmented.ListPage:
            kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": request.prefix, "MaxKeys": request.max_keys}
            if request.token:
                kwargs["ContinuationToken"] = request.token
            elif request.start_after:
                kwargs["StartAfter"] = request.start_after
            if request.delimiter:
                kwargs["Delimiter"] = request.delimiter
            page: segmented.ListPage = self._s3("list_objects_v2", RequestKind.LIST, **kwargs)
            return page

        found: dict[str, dict[str, Any]] = {}
        for item in segmented.list_prefix(
                send, f"{key}/" if key else "",
                page_keys=segmented.PAGE_KEYS if page_keys is None else page_keys,
                segments_max=segmented.SEGMENTS_MAX if segments_max is None else segments_max):
            name = f"{bucket}/{item['Key']}"
            found[name] = {"name": name, "size": item.get("Size", 0), "LastModified": item.get("LastModified"),
                           "type": "file"}
        return found

    def file_exists(self, path: str) -> bool:
        """One HEAD."""
        bucket, key = self._bucket_key(path)
        try:
            self._s3("head_object", RequestKind.HEAD, Bucket=bucket, Key=key)
        except FileNotFoundError:
            return False
        return True

    def dir_exists(self, path: str) -> bool:
        """One LIST of at most one key below ``path/``."""
        bucket, prefix = self._bucket_key(path)
        page = self._s3("list_objects_v2", RequestKind.LIST, Bucket=bucket, Prefix=prefix.rstrip("/") + "/",
                        MaxKeys=1)
        return bool(page.get("Contents") or page.get("CommonPrefixes"))

    def _keys_telling_empty(self, path: str) -> list[str]:
        """One bounded LIST page (2 keys) tells "only the marker", not a full listing."""
        marker = self.raw(path).rstrip("/") + "/"
        bucket, _, prefix = marker.lstrip("/").partition("/")
        page = self._s3("list_objects_v2", RequestKind.LIST, Bucket=bucket, Prefix=prefix, MaxKeys=2)
        return [self.uri(f"{bucket}/{item['Key']}") for item in page.get("Contents", [])]

    # -- versions --------------------------------------------------------------------------
    def keeps_versions(self, path: str) -> bool:
        """Whether the bucket of ``path`` has versioning Enabled: one GetBucketVersioning per
        bucket, remembered. Suspended or never enabled: no (a delete then removes the null
        version). Not asked on OSS. A bucket that refuses the question counts as no: the trash
        then copies, which is right on every bucket."""
        if self.connection.store is not Store.S3:
            return False
        bucket, _ = self._bucket_key(path)
        known = self._versioned.get(bucket)
        if known is None:
            try:
                answer = self._s3("get_bucket_versioning", RequestKind.OTHER, Bucket=bucket)
            except Exception:  # noqa: BLE001 - AccessDenied and the like: copy, as without versions
                answer = {}
            known = self._versioned[bucket] = answer.get("Status") == "Enabled"
        return known

    def version_of(self, path: str) -> tuple[str, int]:
        """One HEAD: the current version id (``null`` for an object written before versioning
        was enabled, which a delete keeps as a noncurrent version too) and the size."""
        bucket, key = self._bucket_key(path)
        head = self._s3("head_object", RequestKind.HEAD, Bucket=bucket, Key=key)
        return str(head.get("VersionId") or "null"), int(head.get("ContentLength") or 0)

    def has_version(self, path: str, version_id: str) -> bool:
        """One HEAD of the version."""
        bucket, key = self._bucket_key(path)
        try:
            self._s3("head_object", RequestKind.HEAD, Bucket=bucket, Key=key, VersionId=version_id)
        except FileNotFoundError:
            return False
        return True

    def read_version(self, path: str, version_id: str) -> bytes:
        fs: Any = self.fs
        raw = self.raw(path)
        data: bytes = self._call_on(path, lambda: fs.cat_file(raw, version_id=version_id), RequestKind.GET)
        return data

    def copy_file(self, src: str, dst: str) -> None:
        """One CopyObject: no HEAD of the source first (s3fs's ``cp_file`` asks its size to pick a
        plain or a multipart copy). A source over :data:`COPY_MAX`, which S3 refuses to copy in one
        request, goes through s3fs's multipart copy."""
        bucket, key = self._bucket_key(src)
        dst_bucket, dst_key = self._bucket_key(dst)
        try:
            self._s3("copy_object", RequestKind.COPY, Bucket=dst_bucket, Key=dst_key,
                     CopySource={"Bucket": bucket, "Key": key})
        except FileNotFoundError:
            raise FileNotFoundError(src) from None
        except OSError as e:
            if "copy source is larger than the maximum" not in str(e):
                raise
            super().copy_file(src, dst)
        finally:
            self.invalidate(self.raw(dst))

    def copy_version(self, src: str, dst: str, version_id: str) -> None:
        """One CopyObject from the version (server-side, up to :data:`COPY_MAX` bytes)."""
        bucket, key = self._bucket_key(src)
        dst_bucket, dst_key = self._bucket_key(dst)
        try:
            self._s3("copy_object", RequestKind.COPY, Bucket=dst_bucket, Key=dst_key,
                     CopySource={"Bucket": bucket, "Key": key, "VersionId": version_id})
        finally:
            self.invalidate(self.raw(dst))

    def delete_versions(self, versions: list[tuple[str, str]]) -> list[DeleteResult]:
        """DeleteObjects with version ids, retried per key as :meth:`delete_batch`; a key listed
        with two versions goes in two requests (a request names each key once)."""
        out: dict[tuple[str, str], DeleteResult] = {}
        pending = list(dict.fromkeys(versions))
        while pending:
            batch: dict[str, dict[str, tuple[str, str]]] = defaultdict(dict)
            later: list[tuple[str, str]] = []
            for pair in pending:
                bucket, key = self._bucket_key(pair[0])
                if key in batch[bucket] or sum(len(b) for b in batch.values()) >= 1000:
                    later.append(pair)
                    continue
                batch[bucket][key] = pair
            for bucket, keys in batch.items():
                if not keys:
                    continue
                results = self._delete_objects(bucket, {k: p for k, (p, _v) in keys.items()},
                                               {k: v for k, (_p, v) in keys.items()})
                for (_k, pair), result in zip(keys.items(), results, strict=True):
                    out[pair] = result
            pending = later
        return [out[pair] for pair in versions]

    # -- deleting --------------------------------------------------------------------------
    def delete_files(self, paths: list[str], tell_missing: bool) -> list[DeleteResult]:
        """``tell_missing=False`` (plan execution) skips the parent listings: a key already gone
        is then reported deleted (DeleteObjects answers so). A DeleteObjects of ``a/b`` never
        removes the objects below ``a/b/``, so no directory can be deleted as a file either way."""
        return remote_deletes.delete_files(self, paths, tell_missing)

    def delete_batch(self, batch: list[str]) -> list[DeleteResult]:
        """DeleteObjects, one request per bucket of the batch."""
        by_bucket: dict[str, dict[str, str]] = defaultdict(dict)
        for p in batch:
            bucket, key = self._bucket_key(p)
            by_bucket[bucket][key] = p
        results: list[DeleteResult] = []
        for bucket, keys in by_bucket.items():
            results.extend(self._delete_objects(bucket, keys))
        return results

    def _delete_objects(self, bucket: str, keys: Mapping[str, str],
                        versions: Mapping[str, str] | None = None) -> list[DeleteResult]:
        """DeleteObjects for ``keys`` (key -> path; ``versions``: key -> the version to delete for
        good, else the current one is deleted as usual), retrying only keys that failed
        transiently (a failed request: all of them; ``SlowDown``/``InternalError`` per key: those
        keys). When the budget is spent the keys still pending are reported failed; keys the
        store confirmed are reported deleted, so the caller's counts are exact."""

        policy = self.calls.retry
        fs: Any = self.fs
        outcome: dict[str, DeleteResult] = {}
        pending = list(keys)
        last_error: dict[str, str] = {}
        attempt = 0
        while pending:
            try:
                self.calls.note(RequestKind.BULK_DELETE)
                response = fs.call_s3(
                    "delete_objects", Bucket=bucket,
                    Delete={"Objects": [{"Key": k, **({"VersionId": versions[k]} if versions else {})}
                                        for k in pending], "Quiet": False},
                )
            except Exception as e:
                message = self.calls.redact(f"{type(e).__name__}: {e}")
                if not layers.is_transient(e):
                    for k in pending:
                        outcome[k] = DeleteResult(keys[k], DeleteOutcome.FAILED, message)
                    pending = []
                    break
                last_error = dict.fromkeys(pending, message)
                retry_keys = pending
            else:
                failed = {err["Key"]: (str(err.get("Code")), f"{err.get('Code')}: {err.get('Message')}")
                          for err in response.get("Errors", [])}
                retry_keys = []
                for k in pending:
                    if k not in failed:
                        outcome[k] = DeleteResult(keys[k], DeleteOutcome.DELETED)
                    elif failed[k][0] in layers.TRANSIENT_CODES:
                        retry_keys.append(k)
                        last_error[k] = failed[k][1]
                    else:
                        outcome[k] = DeleteResult(keys[k], DeleteOutcome.FAILED, failed[k][1])
            finally:
                for k in pending:
                    self.invalidate(f"{bucket}/{k}")
            pending = retry_keys
            attempt += 1
            if pending and attempt >= policy.attempts:
                break
            if pending:
                layers.retries_sleep(policy.delay(attempt))
        for k in pending:
            outcome[k] = DeleteResult(keys[k], DeleteOutcome.FAILED,
                                      f"retry budget exhausted ({policy.attempts} attempts): {last_error.get(k)}")
        return [outcome[k] for k in keys]
