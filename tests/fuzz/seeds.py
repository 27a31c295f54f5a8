"""Make the seed corpus of every fuzz target (``python -m tests.fuzz.seeds``): files of tables
pypaimon writes here (a partitioned primary-key table with tags and a consumer, a dynamic-bucket
table with an index manifest) and of the Java-written fixture, cut to what each target reads.
Seeds are named ``seed-<sha1>`` (inputs a fuzz run reports are kept beside them, named by
libFuzzer); the real writer schemas go to ``schemas.json`` for ``avro_decoders``. Small on
purpose: at most :data:`PER_TARGET` seeds of at most :data:`MAX_SEED` bytes each."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import yaml
from pyarrow import parquet

from tests.fuzz.targets import _SCHEMAS_FILE, CORPUS, TARGETS
from tests.support import avro as A
from tests.support import paimon as sp

PER_TARGET = 16
MAX_SEED = 8192
REPO = Path(__file__).resolve().parents[2]


def _tables(work: Path) -> list[Path]:
    from tablekeeper.core.paimon.table import open_table
    from tablekeeper.core.refs import tags

    wh = str(work / "py")
    sp.build_history(wh, "db.orders", commits=3)
    t = open_table(wh, "db.orders")
    tags.create_tag(t, "nightly", snapshot_id=2, time_retained=timedelta(days=7))
    tags.create_tag(t, "plain", snapshot_id=1)
    consumer = Path(wh) / "db.db" / "orders" / "consumer"
    consumer.mkdir(exist_ok=True)
    (consumer / "consumer-reader").write_text('{\n  "nextSnapshot" : 2\n}')
    cat = sp.catalog(wh)
    dyn = sp.create_table(cat, "db.dynamic", sp.ORDERS_SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"],
                          options={"bucket": "-1"})
    sp.write(dyn, sp.orders_rows("2026-01-01", 0, 3))
    java = sp.extract_java_fixture(work / "java")
    return [Path(wh) / "db.db" / "orders", Path(wh) / "db.db" / "dynamic",
            *sorted(p for p in (java / "default.db").iterdir() if p.is_dir())]


def _kind(name: str) -> str | None:
    if name.startswith("manifest-list-"):
        return "list"
    if name.startswith("index-manifest-"):
        return "index"
    if name.startswith("manifest-"):
        return "manifest"
    return None


def _small(items: Iterable[bytes]) -> list[bytes]:
    out = []
    for item in items:
        if len(item) <= MAX_SEED and item not in out:
            out.append(item)
    return out


def _avro_files(tables: list[Path]) -> dict[str, list[tuple[str, bytes]]]:
    """kind -> [(origin, bytes)] of every manifest file, as written."""
    out: dict[str, list[tuple[str, bytes]]] = {"list": [], "manifest": [], "index": []}
    for root in tables:
        origin = "java" if "golden" in root.name else "py"
        for p in sorted((root / "manifest").iterdir()):
            kind = _kind(p.name)
            if kind is not None:
                out[kind].append((origin, p.read_bytes()))
    return out


def _blocks(data: bytes) -> list[tuple[int, bytes]]:
    from tablekeeper.core.paimon.manifests import avro_container

    framed = avro_container.frame(A.uncompressed(data))
    assert framed is not None
    raw = A.uncompressed(data)
    return [(b.records, raw[b.payload:b.end - 16]) for b in framed.blocks]


def make(work: Path) -> dict[str, list[bytes]]:
    from tests.fuzz import targets

    tables = _tables(work)
    files = _avro_files(tables)
    schemas = {f"{origin}-{kind}": A.schema_of(data) for kind, found in files.items() if kind != "index"
               for origin, data in found}
    _SCHEMAS_FILE.write_text(json.dumps(schemas, indent=1, sort_keys=True) + "\n")
    targets._schemas.cache_clear()
    labels = ["self-entry", "self-list", *sorted(schemas)]
    seeds: dict[str, list[bytes]] = {}

    # avro_decoders: [schema][kind][count] + one decompressed block
    decoders = []
    for index, label in enumerate(labels):
        if label.startswith("self"):
            import fastavro

            from tablekeeper.core.paimon.manifests import self_test

            schema, records, _kinds = self_test.self_test_files()[0 if label == "self-entry" else 1]
            blocks = []
            for start in (0, 3):
                buf = io.BytesIO()
                for r in records[start:start + 3]:
                    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), r)
                blocks.append((3, buf.getvalue()))
        else:
            origin, kind = label.split("-", 1)
            blocks = [b for o, data in files[kind] if o == origin for b in _blocks(data)]
        for count, block in blocks[:2]:
            for kind_index in (0, 1):
                decoders.append(bytes([index, kind_index, min(count, 31)]) + block)
    seeds["avro_decoders"] = _small(decoders)

    # manifest_files: [reader] + a whole file (as written, and uncompressed); [8 | reader] + a schema
    whole = []
    for kind, reader in (("list", 0), ("manifest", 1), ("manifest", 2), ("index", 3), ("manifest", 4)):
        for _origin, data in files[kind][:2]:
            whole += [bytes([reader]) + data, bytes([reader]) + A.uncompressed(data)]
    splices = [bytes([8 | (i << 4)]) + json.dumps(A.schema_of(d)).encode() for i, (_o, d) in enumerate(files["list"][:2])]
    seeds["manifest_files"] = _small(whole)[:PER_TARGET - len(splices)] + splices

    # metadata_json: [parser] + a file
    meta = []
    for root in tables:
        for sub, parser in (("snapshot", 0), ("tag", 1), ("schema", 2), ("consumer", 3)):
            d = root / sub
            if d.is_dir():
                meta += [bytes([parser]) + p.read_bytes() for p in sorted(d.iterdir())[:2]
                         if p.is_file() and p.name.startswith(f"{sub}-")]
        hint = root / "snapshot" / "LATEST"
        if hint.is_file():
            meta.append(bytes([4]) + hint.read_bytes())
    seeds["metadata_json"] = _small(meta)

    seeds["inventory"] = _inventory_seeds()

    # name_scan: [listed/prefixes] + names + NUL + a decompressed manifest block
    scans = []
    for _origin, data in files["manifest"][:4]:
        _schema, records, _codec = A.records_of(data)
        names = [r["_FILE"]["_FILE_NAME"] for r in records] + ["data-00000000-0000-0000-0000-000000000000-0.orc"]
        for _count, block in _blocks(data)[:1]:
            scans.append(bytes([len(names)]) + "\n".join(names).encode() + b"\x00" + block)
    tail = b"0123456789abcdef-0123456789abcdef-ab"
    scans += [bytes([0x47]) + b"data-" + tail + b"-12.parquet\nchangelog-" + tail + b"-3.avro\nxyz\x00\x00data-"
              + tail + b"-12.parquet data-data-" + tail + b"-0.orc data-" + tail + b"-x. changelog-" + tail[:-1]
              + b"g-3.avro",
              bytes([0x82]) + b"dat-" + tail + b"-1.orc\nx" + tail + b"-2.orc\x00xx" + tail + b"-2.orc dat" + tail]
    seeds["name_scan"] = _small(scans)

    # cr_specs: [kind] + the spec of every example and test CR
    from tablekeeper.core.policy.kinds import SPEC_MODELS

    kinds = sorted(SPEC_MODELS)
    specs = []
    for path in sorted([*(REPO / "examples").rglob("*.yaml"), *(REPO / "tests" / "operator" / "data").rglob("*.yaml")]):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in kinds and isinstance(doc.get("spec"), dict):
                specs.append(bytes([kinds.index(doc["kind"])]) + json.dumps(doc["spec"]).encode())
    by_kind: dict[int, list[bytes]] = {}
    for s in _small(specs):
        by_kind.setdefault(s[0], []).append(s)
    seeds["cr_specs"] = [s for group in zip(*[v + [b""] * 8 for v in by_kind.values()], strict=False)
                         for s in group if s][:PER_TARGET * 2]
    seeds["rest_responses"] = rest_seeds()
    return {name: found[:PER_TARGET * 2 if name == "cr_specs" else PER_TARGET] for name, found in seeds.items()}


def rest_seeds() -> list[bytes]:
    """Answers in the shapes Paimon's RESTCatalogServer gives (tests/catalogs/test_rest_commands.py
    reads them from the real server), one or more per answer kind."""
    from tests.fuzz.targets import REST_ANSWERS

    def of(answer: str, doc: object) -> bytes:
        return bytes([REST_ANSWERS.index(answer)]) + json.dumps(doc).encode()
    return [
        of("config", {"defaults": {"prefix": "tablekeeper_rest", "data-token.enabled": "true"},
                      "overrides": {"warehouse": "tablekeeper_rest"}}),
        of("config", {"defaults": {}, "overrides": {"header.x": "1", "cache-enabled": False}}),
        of("databases", {"databases": ["default", "sales"], "nextPageToken": None}),
        of("databases", {"databases": ["a"], "nextPageToken": "a"}),
        of("tables", {"tables": ["orders", "events"]}),
        of("table", {"id": "b3f1", "name": "orders", "path": "file:/tmp/wh/sales.db/orders", "isExternal": False,
                     "schemaId": 0, "schema": {"fields": [{"id": 0, "name": "dt", "type": "STRING"}]}}),
        of("table", {"id": 7, "path": "s3://lake/wh/sales.db/orders"}),
        of("token", {"token": {"fs.s3.accessKeyId": "AK", "fs.s3.secretAccessKey": "SK", "fs.s3.sessionToken": "T"},
                     "expiresAtMillis": 1767225600000}),
        of("token", {"token": {}, "expiresAtMillis": None}),
    ]


def _inventory_seeds() -> list[bytes]:
    manifest = {"sourceBucket": "b", "destinationBucket": "arn:aws:s3:::d", "version": "2016-11-30",
                "creationTimestamp": "1700000000000", "fileFormat": "CSV",
                "fileSchema": "Bucket, Key, Size, LastModifiedDate, IsLatest",
                "files": [{"key": "inv/data/x.csv.gz", "size": 10, "MD5checksum": "0"}]}
    rows = [["b", "wh/db.db/t/bucket-0/data-1.orc", "10", "2026-01-01T00:00:00.000Z", "true"],
            ["b", "wh/db.db/t/manifest/manifest-a%2Bb-0", "20", "2026-01-02T00:00:00.000Z", "false"]]
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    plain = "key,size,last_modified\n/wh/db.db/t/bucket-0/data-1.orc,10,1700000000000\n"
    table = pa.table({"bucket": ["b"], "key": ["wh/db.db/t/x"], "size": [3], "last_modified_date": [1700000000000]})
    pq = io.BytesIO()
    parquet.write_table(table, pq)
    return [bytes([0]) + json.dumps(manifest).encode(), bytes([0]) + json.dumps({**manifest, "fileFormat": "Parquet",
                                                                                 "fileSchema": "message s3.inventory { required binary bucket (UTF8); required binary key (UTF8); optional int64 size; optional int64 last_modified_date; }"}).encode(),
            bytes([1]) + gzip.compress(text.getvalue().encode(), mtime=0), bytes([1]) + text.getvalue().encode(),
            bytes([2]) + pq.getvalue(), bytes([4]) + plain.encode(), bytes([4]) + gzip.compress(plain.encode(), mtime=0),
            bytes([4]) + pq.getvalue()]


def write(seeds: dict[str, list[bytes]]) -> dict[str, int]:
    counts = {}
    for name in TARGETS:
        directory = CORPUS / name
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("seed-*"):
            old.unlink()
        for data in seeds.get(name, []):
            (directory / f"seed-{hashlib.sha1(data).hexdigest()}").write_bytes(data)
        counts[name] = len(seeds.get(name, []))
    return counts


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="tablekeeper-seeds-"))
    try:
        counts = write(make(work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    print(", ".join(f"{k}: {v}" for k, v in counts.items()), f"({total} bytes in all)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()

