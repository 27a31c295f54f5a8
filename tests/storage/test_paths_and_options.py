"""Pure helpers of the storage module: path arithmetic and Paimon option translation."""

from __future__ import annotations

import pytest

from tablekeeper.core.storage import FileIO, basename, join, parent
from tablekeeper.core.storage.connections import storage_options_from_paimon


def test_join_parent_basename() -> None:
    assert join("s3://b/wh", "db.db", "t") == "s3://b/wh/db.db/t"
    assert join("s3://b/wh/", "/snapshot/", "snapshot-1") == "s3://b/wh/snapshot/snapshot-1"
    assert join("/tmp/x", "", "y") == "/tmp/x/y"
    assert parent("s3://b/wh/t/snapshot/snapshot-1") == "s3://b/wh/t/snapshot"
    assert parent("/tmp/x/y/") == "/tmp/x"
    assert basename("s3://b/wh/t/tag/tag-x") == "tag-x"
    assert basename("/tmp/x/y/") == "y"


@pytest.mark.parametrize("options", [
    {"s3.endpoint": "http://h:1", "s3.access-key": "AK", "s3.secret-key": "SK", "s3.path.style.access": "true"},
    {"fs.s3.endpoint": "http://h:1", "fs.s3.accessKeyId": "AK", "fs.s3.accessKeySecret": "SK",
     "fs.s3.path-style-access": "TRUE"},
    {"fs.s3a.endpoint": "http://h:1", "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK",
     "fs.s3a.path.style.access": "true"},
    {"s3a.endpoint": "http://h:1", "s3a.access-key": "AK", "s3a.secret-key": "SK", "s3a.path-style-access": "true"},
])
def test_paimon_s3_option_spellings(options: dict[str, str]) -> None:
    assert storage_options_from_paimon(options) == {
        "key": "AK", "secret": "SK", "endpoint_url": "http://h:1",
        "config_kwargs": {"s3": {"addressing_style": "path"}},
    }


def test_session_token_region_and_unrelated_options() -> None:
    kwargs = storage_options_from_paimon({
        "warehouse": "s3://b/wh", "s3.session-token": "TOK", "s3.region": "eu-central-1",
        "fs.s3.securityToken": "TOK", "s3.path.style.access": "false", "bucket": "4",
    })
    assert kwargs == {"token": "TOK", "client_kwargs": {"region_name": "eu-central-1"}}


def test_us_east_1_is_left_to_the_environment() -> None:
    # s3fs would send it as a LocationConstraint when creating buckets, which S3 rejects.
    assert storage_options_from_paimon({"s3.region": "us-east-1"}) == {}


def test_for_uri_picks_the_filesystem_by_scheme() -> None:
    assert FileIO.for_uri("/tmp/x").is_local
    assert FileIO.for_uri("file:///tmp/x").scheme == "file"
    s3 = FileIO.for_uri("s3://b/wh", {"s3.endpoint": "http://127.0.0.1:9", "s3.access-key": "a",
                                      "s3.secret-key": "b"})
    assert s3.scheme == "s3" and not s3.is_local
    assert s3.normalize("s3://b/wh/t") == "s3://b/wh/t"
    assert s3.fs.endpoint_url == "http://127.0.0.1:9"
