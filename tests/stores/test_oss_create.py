"""OSS create-if-absent sends OSS's own ``x-oss-forbid-overwrite: true`` (the documented way OSS
refuses an overwrite, 409 FileAlreadyExists) together with ``If-None-Match: *``; overwrites send
neither. moto (OSS's S3-compatible path; no OSS emulator exists) honours If-None-Match only, so
what is checked here is the request tablekeeper sends, and that a 409 FileAlreadyExists answer
is a ``FileExistsError``."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tablekeeper.core.storage import FileIO
from tablekeeper.core.storage.backends import object_store
from tablekeeper.core.storage.backends.oss_headers import FORBID_OVERWRITE
from tests.support import stores as storesupport

pytestmark = [pytest.mark.oss, pytest.mark.storage]


def test_conditional_uploads_carry_ossforbid_overwrite(s3_bucket: str, s3_endpoint: str) -> None:
    io = FileIO.for_uri(f"oss://{s3_bucket}", storesupport.oss_options(s3_endpoint))
    sent: list[dict[str, str]] = []
    io.fs.connect()
    io.fs.s3.meta.events.register("before-send.s3.PutObject",
                                  lambda request, **_: sent.append(dict(request.headers)))
    base = f"oss://{s3_bucket}/{uuid.uuid4().hex[:8]}"
    io.write_new(f"{base}/tag-a", "1")
    io.overwrite(f"{base}/hint", "2")
    with pytest.raises(FileExistsError):
        io.write_new(f"{base}/tag-a", "other")  # refused before any upload (existence check)
    assert len(sent) == 2
    created, overwritten = sent
    assert created.get(FORBID_OVERWRITE) == b"true" and created.get("If-None-Match") == b"*"
    assert FORBID_OVERWRITE not in overwritten and "If-None-Match" not in overwritten
    assert io.read_text(f"{base}/tag-a") == "1"


def test_oss_file_already_exists_answer_is_an_existing_file() -> None:
    error: Any = OSError("An error occurred (FileAlreadyExists) when calling the PutObject operation: "
                         "The object you specified already exists and can not be overwritten.")
    assert object_store.is_precondition_failure(error)
