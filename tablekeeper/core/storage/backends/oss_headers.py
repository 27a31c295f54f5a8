"""OSS create-if-absent: ``x-oss-forbid-overwrite: true`` on every conditional upload.

OSS documents one way to refuse overwriting an object: the ``x-oss-forbid-overwrite: true``
request header on PutObject/CopyObject/multipart upload, answered with ``409 FileAlreadyExists``
when the key exists (Alibaba Cloud, "Prevent objects from being overwritten by objects with the
same names"; error 0026-00000002). Its documentation of the S3-compatible API does not say that
``If-None-Match: *`` is honoured. So on ``oss://`` tablekeeper sends both on a create-if-absent
upload: s3fs's ``If-None-Match: *`` (S3 semantics, 412) and OSS's own header (409); either
refusal is a ``FileExistsError``. Unconditional uploads (overwrites) get neither.

The header is added by a botocore ``before-sign`` hook on the session s3fs builds its client
from, so it is signed with the request.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORBID_OVERWRITE", "oss_session"]

FORBID_OVERWRITE = "x-oss-forbid-overwrite"


def _forbid_overwrite(request: Any, **_: Any) -> None:
    """A PutObject carrying ``If-None-Match`` (create-if-absent) also carries OSS's header."""
    if request.headers.get("If-None-Match") is not None:
        request.headers[FORBID_OVERWRITE] = "true"


def oss_session() -> Any:
    """An aiobotocore session whose S3 clients add OSS's forbid-overwrite header to conditional
    uploads (s3fs's ``session=`` argument)."""
    from aiobotocore.session import AioSession

    session = AioSession()
    session.register("before-sign.s3.PutObject", _forbid_overwrite, unique_id="tablekeeper-oss-forbid-overwrite")
    return session
