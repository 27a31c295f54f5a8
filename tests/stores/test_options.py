"""Schemes and options as Paimon's users write them, mapped to each fsspec implementation; bad
input (unknown scheme, missing credentials or endpoint) refused with the option to set, exit 2 from
the CLI, nothing changed; secrets never printed. No server needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tablekeeper.cli.main import main as cli_main
from tablekeeper.core.errors import InvalidInputError
from tablekeeper.core.policy.specs.catalog import PaimonCatalogSpec
from tablekeeper.core.storage import FileIO
from tablekeeper.core.storage.connections import connect
from tablekeeper.core.storage.secrets import is_secret_option, redact_options, redact_text
from tablekeeper.core.storage.stores import Store, store_of

AZ_HOST = "acct.dfs.core.windows.net"


@pytest.mark.parametrize(("uri", "store"), [
    ("/data/wh", Store.LOCAL), ("file:///data/wh", Store.LOCAL), ("s3a://b/wh", Store.S3), ("oss://b/wh", Store.OSS),
    ("hdfs://nn:8020/wh", Store.HDFS), ("gs://b/wh", Store.GCS), ("abfss://c@acct.dfs.core.windows.net/wh", Store.AZURE),
    ("wasbs://c@acct.blob.core.windows.net/wh", Store.AZURE),
])
def test_every_paimon_scheme_names_its_store(uri: str, store: Store) -> None:
    assert store_of(uri) is store


def test_oss_maps_paimon_options_to_s3fs() -> None:
    c = connect("oss://bucket/wh", {"fs.oss.endpoint": "oss-cn-hangzhou.aliyuncs.com", "fs.oss.accessKeyId": "AK",
                                    "fs.oss.accessKeySecret": "SK"})
    assert c.protocol == "s3" and c.kwargs["endpoint_url"] == "https://oss-cn-hangzhou.aliyuncs.com"
    assert c.kwargs["key"] == "AK" and c.kwargs["secret"] == "SK"
    assert c.kwargs["config_kwargs"] == {"s3": {"addressing_style": "virtual"}}
    assert c.kwargs["client_kwargs"] == {"region_name": "oss-cn-hangzhou"}
    assert c.to_raw("oss://bucket/wh/x") == "bucket/wh/x" and c.to_uri("bucket/wh/x") == "oss://bucket/wh/x"


def test_oss_credentials_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OSS_ACCESS_KEY_ID", "envak")
    monkeypatch.setenv("OSS_ACCESS_KEY_SECRET", "envsk")
    c = connect("oss://bucket/wh", {"fs.oss.endpoint": "http://127.0.0.1:9000"})
    assert c.kwargs["key"] == "envak" and c.kwargs["config_kwargs"] == {"s3": {"addressing_style": "path"}}


def test_hdfs_namenode_http_address_from_options_and_conf_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = connect("hdfs://nn.example:8020/wh", {"dfs.namenode.http-address": "0.0.0.0:50070", "hadoop.user.name": "etl"})
    assert c.protocol == "webhdfs" and c.kwargs["host"] == "nn.example" and c.kwargs["port"] == 50070
    assert c.kwargs["user"] == "etl"
    assert c.to_raw("hdfs://nn.example:8020/wh/t") == "/wh/t"
    assert c.to_uri("/wh/t") == "hdfs://nn.example:8020/wh/t"
    (tmp_path / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn2:8020</value></property></configuration>")
    (tmp_path / "hdfs-site.xml").write_text(
        "<configuration><property><name>dfs.namenode.http-address</name><value>nn2:9871</value></property>"
        "</configuration>")
    monkeypatch.setenv("HADOOP_USER_NAME", "svc")
    c = connect("hdfs:///wh", {"hadoop-conf-dir": str(tmp_path)})
    assert (c.kwargs["host"], c.kwargs["port"], c.kwargs["user"]) == ("nn2", 9871, "svc")
    assert c.to_uri("/wh/x") == "hdfs://nn2:8020/wh/x"


def test_gcs_service_account_from_secret_keys() -> None:
    c = connect("gs://b/wh", {"fs.gs.auth.service.account.email": "sa@p.iam.gserviceaccount.com",
                              "fs.gs.auth.service.account.private.key": "-----BEGIN-----\\nabc",
                              "fs.gs.project.id": "p"})
    token = c.kwargs["token"]
    assert token["client_email"] == "sa@p.iam.gserviceaccount.com" and token["private_key"] == "-----BEGIN-----\nabc"
    assert c.kwargs["project"] == "p"


def test_azure_hadoop_account_key_and_sas() -> None:
    uri = f"abfss://lake@{AZ_HOST}/wh"
    c = connect(uri, {f"fs.azure.account.key.{AZ_HOST}": "KEY=="})
    assert c.protocol == "abfs" and c.kwargs["account_name"] == "acct" and c.kwargs["account_key"] == "KEY=="
    assert c.to_raw(f"abfss://lake@{AZ_HOST}/wh/t") == "lake/wh/t"
    assert c.to_uri("lake/wh/t") == f"abfss://lake@{AZ_HOST}/wh/t"
    c = connect(uri, {f"fs.azure.sas.fixed.token.{AZ_HOST}": "sv=2024&sig=abc"})
    assert c.kwargs["sas_token"] == "sv=2024&sig=abc"


@pytest.mark.parametrize(("uri", "options", "named"), [
    ("ftp://host/wh", {}, "s3://"),
    ("viewfs://cluster/wh", {}, "viewfs"),
    ("oss://bucket/wh", {"fs.oss.accessKeyId": "a", "fs.oss.accessKeySecret": "b"}, "fs.oss.endpoint"),
    ("oss://bucket/wh", {"fs.oss.endpoint": "oss-cn-hangzhou.aliyuncs.com"}, "fs.oss.accessKeyId"),
    ("hdfs:///wh", {}, "fs.defaultFS"),
    ("hdfs://nn:8020/wh", {"hadoop.security.authentication": "kerberos"}, "dfs.webhdfs.delegation-token"),
    ("gs://b/wh", {"fs.gs.auth.service.account.json.keyfile": "/nope/key.json"}, "fs.gs.auth.service.account.json"),
    ("gs://b/wh", {"fs.gs.auth.service.account.private.key": "k"}, "fs.gs.auth.service.account.email"),
    ("abfs://container/wh", {}, "fs.azure.account.name"),
])
def test_bad_input_names_the_option(uri: str, options: dict[str, str], named: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OSS_ACCESS_KEY_ID", "OSS_ACCESS_KEY_SECRET", "AZURE_STORAGE_ACCOUNT_NAME", "HADOOP_CONF_DIR"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(InvalidInputError) as caught:
        FileIO.for_uri(uri, options)
    assert named in str(caught.value)


def test_cli_bad_storage_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSS_ACCESS_KEY_ID", raising=False)
    before = sorted(os.listdir(tmp_path))
    for argv, named in ((["show", "db.t", "-w", "oss://bucket/wh", "--option", "fs.oss.accessKeyId=AKID",
                          "--option", "fs.oss.accessKeySecret=topsecret"], "fs.oss.endpoint"),
                        (["show", "db.t", "-w", "ftp://x/wh"], "s3://"),
                        (["clean-orphans", "db.t", "-w", "s3://lake/wh", "--option", "s3.endpoint=http://127.0.0.1:9",
                          "--option", "s3.access-key=a", "--option", "s3.secret-key=topsecret"], "s3.endpoint")):
        capsys.readouterr()
        assert cli_main(argv) == 2
        out, err = capsys.readouterr()
        assert named in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2
        assert "topsecret" not in out + err
    assert sorted(os.listdir(tmp_path)) == before


def test_secret_options_of_every_store() -> None:
    for key in ("s3.secret-key", "fs.s3a.access-key", "fs.oss.accessKeySecret", "fs.oss.accessKeyId",
                "fs.oss.securityToken", f"fs.azure.account.key.{AZ_HOST}", f"fs.azure.sas.fixed.token.{AZ_HOST}",
                "fs.azure.sas.lake.acct.blob.core.windows.net", "fs.azure.connection-string",
                "fs.azure.account.oauth2.client.secret", "fs.gs.auth.service.account.private.key",
                "dfs.webhdfs.delegation-token"):
        assert is_secret_option(key), key
    for key in ("s3.endpoint", "fs.oss.endpoint", "fs.gs.auth.service.account.json.keyfile",
                "fs.gs.auth.service.account.private.key.id", "dfs.namenode.http-address", "fs.azure.account.auth.type"):
        assert not is_secret_option(key), key
    options = {f"fs.azure.account.key.{AZ_HOST}": "S3CR3TKEY==", "s3.endpoint": "http://e"}
    assert redact_options(options) == {f"fs.azure.account.key.{AZ_HOST}": "***", "s3.endpoint": "http://e"}
    assert "S3CR3TKEY" not in redact_text("bad key S3CR3TKEY== for AccountKey=abc;", options)


def test_catalog_spec_refuses_azure_and_oss_secrets_inline() -> None:
    for key in (f"fs.azure.account.key.{AZ_HOST}", "fs.oss.accessKeySecret", "fs.azure.connection-string"):
        with pytest.raises(ValueError, match="looks like a secret"):
            PaimonCatalogSpec(warehouse="oss://b/wh", options={key: "v"})
    spec = PaimonCatalogSpec(warehouse=f"abfss://lake@{AZ_HOST}/wh", options={"fs.oss.endpoint": "e"})
    assert spec.normalized_warehouse == f"abfss://lake@{AZ_HOST}/wh"
