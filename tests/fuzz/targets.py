"""The fuzz targets: one function of bytes each, silent on every input except when an invariant
breaks (a :class:`Finding`) or something other than the documented error escapes (any other
exception is a finding too: libFuzzer reports it with the input).

- ``avro_decoders``: one decompressed Avro block under a real writer schema (pypaimon's and
  Java's manifests and manifest lists, the self-test schemas), decoded by the native decoder, the
  generated Python decoder and fastavro's reader through the projection the readers judge with:
  whenever a fast decoder accepts, fastavro accepts with the same rows; the two fast decoders give
  the same verdict, except that the native one also refuses what fastavro's primitives wrap
  (docs/robustness.md).
- ``manifest_files``: a whole manifest list, manifest or index manifest (or a writer schema
  spliced into a real one) through every public reader: only FormatError, and the same verdict
  and rows with and without the fast decoders; the names-only reader of orphan cleanup agrees
  with the full reader whenever it serves a block.
- ``metadata_json``: snapshot, tag, schema, consumer and hint files: only FormatError, and what
  parses can be used (every accessor, serialization and a re-parse).
- ``inventory``: S3 Inventory manifests, their CSV/Parquet/ORC data files, plain file lists:
  only InventoryError, and every row is (text, whole number, whole number).
- ``name_scan``: the native byte scan against the regex scan: the same names missing, and no
  name missing that occurs as a key in the block.
- ``cr_specs``: the spec of every CR kind (JSON) through the policy models: only the typed
  validation errors, and the report of a refusal renders.
- ``rest_responses``: a REST catalog server's answer (config, a page of databases or tables, a
  table, a data token) through the client's parsers: only CatalogError, and what parses is plain
  strings and numbers.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Finding", "Target", "TARGETS", "CORPUS", "corpus_of"]

CORPUS = Path(__file__).resolve().parent / "corpus"
_SCHEMAS_FILE = Path(__file__).resolve().parent / "schemas.json"


class Finding(AssertionError):
    """An invariant of a target does not hold for the input."""


@dataclass(frozen=True)
class Target:
    name: str
    one_input: Callable[[bytes], None]
    #: libFuzzer's -max_len for this target
    max_len: int


def corpus_of(name: str) -> Path:
    return CORPUS / name


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise Finding(what)


# -- avro_decoders ---------------------------------------------------------------------------------
@cache
def _schemas() -> list[tuple[Any, Any, tuple[str, ...]]]:
    """(SchemaInfo, {kind: (parsed writer schema, parsed projection)}, decoder kinds) of every
    schema the target decodes (free of logical types, as the readers decode)."""
    import fastavro

    from tablekeeper.core.paimon.manifests import decoding as md
    from tablekeeper.core.paimon.manifests import self_test

    out = []
    stored = json.loads(_SCHEMAS_FILE.read_text()) if _SCHEMAS_FILE.is_file() else {}
    pairs = [(schema, kinds) for schema, _records, kinds in self_test.self_test_files()]
    for label, schema in sorted(stored.items()):
        pairs.append((schema, ("list", "list-names") if "list" in label else ("entry", "ref")))
    for schema, kinds in pairs:
        info = md.SchemaInfo(schema)
        out.append((info, kinds))
    return [(info, {k: (fastavro.parse_schema(info.stripped), fastavro.parse_schema(
        info.reader_schema(k if k != "list-names" else "list"))) for k in kinds}, kinds) for info, kinds in out]


def _verdict(run: Callable[[], list[Any]], bad: tuple[type[BaseException], ...], version: type[BaseException]
             ) -> tuple[str, Any]:
    try:
        return "rows", run()
    except version as e:
        return "version", getattr(e, "version", None)
    except bad:
        return "bad", None


def _by_fastavro(parsed: Any, kind: str, block: bytes, count: int) -> list[Any]:
    import fastavro

    from tablekeeper.core.paimon.manifests import compiled, records
    from tablekeeper.core.paimon.manifests.records import MANIFEST_LIST_VERSION, MANIFEST_VERSION

    stream = io.BytesIO(block)
    out: list[Any] = []
    expected = MANIFEST_LIST_VERSION if kind in ("list", "list-names") else MANIFEST_VERSION
    writer, reader = parsed
    for _ in range(count):
        r = fastavro.schemaless_reader(stream, writer, reader)
        if r["_VERSION"] != expected:
            raise compiled.VersionMismatch(r["_VERSION"])
        if kind == "list":
            out.append(records.list_row(r))
        elif kind == "list-names":
            m = records.list_row(r)
            out.append((m.file_name, m.extra_files))
        else:
            out.append(records.entry_row(r) if kind == "entry" else records.ref_row(r))
    return out


def avro_decoders(data: bytes) -> None:
    from tablekeeper.core.paimon.manifests import compiled
    from tablekeeper.core.paimon.manifests import native as mn

    if len(data) < 3:
        return
    schemas = _schemas()
    info, parsed, kinds = schemas[data[0] % len(schemas)]
    kind = kinds[data[1] % len(kinds)]
    count, block = data[2] % 32, data[3:]
    program = info.native(kind) if mn._NATIVE is not None else None
    decoder = info.decoder(kind)

    def native() -> list[Any]:
        out: list[Any] = []
        mn.decode_block(program, block, count, out)
        return out

    def python() -> list[Any]:
        assert decoder is not None
        out: list[Any] = []
        stream = io.BytesIO(block)
        try:
            decoder(stream, count, out.append)
        except compiled.VersionMismatch:
            raise
        except Exception as e:  # as decode_compiled: the fastavro primitives' errors mean "bad"
            raise compiled.FastDecodeError(str(e)) from e
        if stream.tell() != len(block):
            raise compiled.FastDecodeError("block not consumed exactly")
        return out

    judge = _verdict(lambda: _by_fastavro(parsed[kind], kind, block, count), (Exception,), compiled.VersionMismatch)
    verdicts = {}
    if program is not None:
        verdicts["native"] = _verdict(native, (mn.NativeBad,), mn.NativeVersion)
    if decoder is not None:
        verdicts["python"] = _verdict(python, (compiled.FastDecodeError,), compiled.VersionMismatch)
    for name, (verdict, rows) in verdicts.items():
        if verdict == "rows":
            _check(judge == ("rows", rows), f"{name} decoder accepted {kind} rows that fastavro reads as {judge!r}")
    if len(verdicts) == 2:
        (n, n_rows), (p, p_rows) = verdicts["native"], verdicts["python"]
        # the native decoder may refuse what fastavro's primitives (the Python decoder's) wrap or
        # stretch: varints of more than ten bytes; then fastavro judges, as for any refusal
        # (a version mismatch the Python decoder reports behind bytes the native decoder refused
        # is a FormatError either way)
        _check(n == p or (n == "bad" and p == "rows" and judge == ("rows", p_rows)) or (n, p) == ("bad", "version"),
               f"native {n} but python {p} for {kind}")
        if n == p == "version":
            _check(n_rows == p_rows, f"versions {n_rows!r} != {p_rows!r}")


# -- manifest_files --------------------------------------------------------------------------------
_READERS = ("list", "manifest", "refs", "index", "payload")


@cache
def _scratch() -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="tablekeeper-fuzz-", dir=base)


@cache
def _spliceable() -> list[bytes]:
    """Real files (the corpus seeds of manifest_files) a fuzzed writer schema is spliced into."""
    seeds = sorted(p for p in corpus_of("manifest_files").glob("seed-*") if p.is_file())
    return [p.read_bytes()[1:] for p in seeds if p.read_bytes()[:1] in (b"\x00", b"\x01", b"\x03")][:8]


def _outcome(read: Callable[[], Any]) -> tuple[str, Any]:
    from tablekeeper.core import errors

    try:
        return "rows", read()
    except errors.FormatError as e:
        _check(bool(e.fix) and bool(e.message), f"a FormatError without message or fix: {e!r}")
        return "error", None


def manifest_files(data: bytes) -> None:
    """Byte 0: the reader (low 3 bits) and whether the rest is a writer schema to splice into a
    real file (bit 3) instead of a whole file."""
    from tablekeeper.core.paimon import manifests
    from tablekeeper.core.paimon.manifests import decoding as md
    from tablekeeper.core.storage import FileIO

    if not data:
        return
    reader, body = _READERS[(data[0] & 7) % len(_READERS)], data[1:]
    if data[0] & 8:
        hosts = _spliceable()
        if not hosts:
            return
        from tests.support.avro import with_schema_json

        host = hosts[(data[0] >> 4) % len(hosts)]
        try:
            body = with_schema_json(host, body)
        except AssertionError:
            return
    path = os.path.join(_scratch(), f"manifest-{reader}")
    with open(path, "wb") as f:
        f.write(body)
    io_ = FileIO.for_uri("/")
    read = {"list": manifests.read_manifest_list, "manifest": manifests.read_manifest,
            "refs": manifests.read_manifest_refs, "index": manifests.read_index_manifest,
            "payload": manifests.read_manifest_payload}[reader]
    if len(md._SCHEMAS) > 512:  # (every spliced schema is cached: bounded over a long run)
        md._SCHEMAS.clear()
    fast = _outcome(lambda: read(io_, path))
    if reader == "list":
        _names_only_agree(body, path, fast)
    if reader in ("payload",):
        return
    saved = md._fast_enabled
    md._fast_enabled = False
    try:
        slow = _outcome(lambda: read(io_, path))
    finally:
        md._fast_enabled = saved
    _check(fast == slow, f"{reader}: {fast[0]} with the fast decoders, {slow[0]} with fastavro alone"
                         + ("" if fast[0] != slow[0] else " (different rows)"))


def _names_only_agree(body: bytes, path: str, full: tuple[str, Any]) -> None:
    """Orphan cleanup's names-only reader, block by block: whenever it serves a block (None:
    the full reader judges), its rows are the full reader's."""
    from tablekeeper.core.paimon import manifests
    from tablekeeper.core.paimon.manifests import avro_container

    framed = avro_container.frame(body)
    if framed is None or framed.schema_json is None or framed.codec not in avro_container.CODECS \
            or not framed.blocks:  # (no block: the names-only reader is never asked)
        return
    names: list[Any] = []
    for b in framed.blocks:
        block = avro_container.decompress(framed.codec, body[b.payload:b.end - 16])
        if block is None:
            return
        got = _outcome(lambda block=block, b=b: manifests.read_list_block_names(framed.schema_json or b"", block,
                                                                             b.records, path))
        if got[0] == "error":
            _check(full[0] == "error", "the names-only reader refused a list the full reader read")
            return
        if got[1] is None:
            return
        names.extend(got[1])
    _check(full[0] == "rows", "the names-only reader served every block of a list the full reader refused")
    _check(names == [(m.file_name, m.extra_files) for m in full[1]], "names-only rows differ from the full read")


# -- metadata_json ---------------------------------------------------------------------------------
def metadata_json(data: bytes) -> None:
    """Byte 0 selects the parser: snapshot, tag, schema, consumer, hint."""
    from tablekeeper.core import errors
    from tablekeeper.core.paimon.metadata import hints
    from tablekeeper.core.paimon.metadata.consumer import Consumer
    from tablekeeper.core.paimon.metadata.schema import TableSchema
    from tablekeeper.core.paimon.metadata.snapshot import Snapshot
    from tablekeeper.core.paimon.metadata.tag import Tag

    if not data:
        return
    kind, body = data[0] % 5, data[1:]
    what = "/warehouse/db.db/t/x/fuzzed"
    try:
        if kind == 0:
            s = Snapshot.from_json(body, what=what)
            _use_snapshot(s)
            _check(Snapshot.from_json(s.to_json()).to_json() == s.to_json(), "snapshot JSON does not round-trip")
        elif kind == 1:
            t = Tag.from_json("fuzzed", body, what=what)
            _use_snapshot(t.snapshot)
            t.expires_at()
            again = Tag.from_json("fuzzed", t.to_json())
            _check(again.to_json() == t.to_json(), "tag JSON does not round-trip")
        elif kind == 2:
            schema = TableSchema.from_json(body, what=what)
            _check(all(isinstance(v, str) for v in schema.options.values()), "option values not text")
            _check(all(isinstance(k, str) for k in (*schema.partition_keys, *schema.primary_keys)), "keys not text")
            for f in schema.fields:
                f.get("name")
            (int(schema.id), schema.time_millis)
        elif kind == 3:
            c = Consumer.from_json("fuzzed", body, what=what)
            _check(Consumer.from_json("fuzzed", c.to_json()).next_snapshot == c.next_snapshot, "consumer round trip")
        else:
            value = hints.decode_hint(body)
            _check(value is None or isinstance(value, int), "a hint that is not a number")
    except errors.FormatError as e:
        _check(bool(e.fix) and what in e.message, f"a FormatError not naming the file or without a fix: {e!r}")


def _use_snapshot(s: Any) -> None:
    for name in ("id", "version", "schema_id", "commit_kind", "time_millis", "total_record_count",
                 "delta_record_count", "watermark", "uuid", "manifest_lists", "base_manifest_list",
                 "delta_manifest_list", "changelog_manifest_list", "index_manifest", "statistics"):
        getattr(s, name)
    s.identity()
    for key in ("baseManifestListSize", "deltaManifestListSize", "changelogManifestListSize"):
        value = s.fields.get(key)
        _check(value is None or isinstance(value, int), f"{key} is not a number")


# -- inventory -------------------------------------------------------------------------------------
_CSV_MANIFEST = {"sourceBucket": "b", "destinationBucket": "arn:aws:s3:::d", "fileFormat": "CSV",
                 "fileSchema": "Bucket, Key, Size, LastModifiedDate, IsLatest", "files": [{"key": "x.csv.gz"}],
                 "creationTimestamp": "1700000000000"}


def inventory(data: bytes) -> None:
    """Byte 0: manifest.json, a CSV data file of a fixed manifest, a Parquet or ORC data file,
    or a plain file list."""
    from tablekeeper.core.reclaim.orphans import inventory as inv

    if not data:
        return
    kind, body = data[0] % 5, data[1:]
    try:
        if kind == 0:
            m = inv.parse_manifest(body, "manifest.json")
            _check(all(isinstance(f, str) for f in m.files) and isinstance(m.creation_ms, int), "manifest fields")
            return
        if kind in (1, 2, 3):
            fmt = {1: "CSV", 2: "Parquet", 3: "ORC"}[kind]
            manifest = inv.parse_manifest(json.dumps({**_CSV_MANIFEST, "fileFormat": fmt}).encode(), "manifest.json")
            for key, size, mtime in inv.parse_inventory_rows(manifest, body, "data-file"):
                _check(isinstance(key, str) and type(size) is int and type(mtime) is int, "row types")
            return
        for bucket, key, size, mtime in inv.parse_file_list(body, "list.csv"):
            _check((bucket is None or isinstance(bucket, str)) and isinstance(key, str) and type(size) is int
                   and type(mtime) is int, "file list row types")
    except inv.InventoryError as e:
        _check(bool(e.fix), f"an InventoryError without a fix: {e!r}")


# -- name_scan -------------------------------------------------------------------------------------
_PREFIXES = ("data-", "changelog-", "x", "dat")


def name_scan(data: bytes) -> None:
    """Byte 0: how many of the names (lines of the part before the first NUL) are listed and the
    prefix set; the rest after the NUL is one manifest block."""
    from tablekeeper.core.reclaim.orphans import name_scan as ns

    if len(data) < 2:
        return
    head, _, block = data[1:].partition(b"\x00")
    names = [n.decode("utf-8", "replace") for n in head.split(b"\n") if n][: 1 + data[0] % 64]
    prefixes = _PREFIXES[: 1 + (data[0] >> 6)]
    native = ns._NATIVE
    try:
        with_native = ns.NameScanner(names, prefixes)
        with_native.feed(block)
        ns._NATIVE = None
        regex = ns.NameScanner(names, prefixes)
        regex.feed(block)
    finally:
        ns._NATIVE = native
    if not (with_native.usable and regex.usable):
        _check(with_native.usable == regex.usable, "usable differs")
        return
    _check(with_native.missing() == regex.missing(), "the native and the regex scan miss different names")
    for name in with_native.missing():
        _check(name.encode("utf-8") not in block, f"{name!r} occurs in the block but is reported missing")


# -- cr_specs --------------------------------------------------------------------------------------
def cr_specs(data: bytes) -> None:
    """Byte 0 selects the kind; the rest is its spec as JSON."""
    from pydantic import ValidationError

    from tablekeeper.core import errors
    from tablekeeper.core.policy import parse_spec
    from tablekeeper.core.policy.kinds import SPEC_MODELS
    from tablekeeper.core.policy.specs import PaimonBranchSpec, PaimonTagSpec

    if not data:
        return
    kinds = sorted(SPEC_MODELS)
    kind = kinds[data[0] % len(kinds)]
    try:
        spec = json.loads(data[1:])
    except (ValueError, RecursionError):
        return
    try:
        parsed = parse_spec(kind, spec, source=f"{kind}/fuzzed")
        if isinstance(parsed, PaimonTagSpec):
            parsed.resolved_tag_name("fuzzed")
        if isinstance(parsed, PaimonBranchSpec):
            parsed.resolved_branch_name("fuzzed")
    except errors.TablekeeperError as e:
        _check(bool(str(e)), "an empty error")
    except ValidationError as e:  # parse_spec wraps these: one escaping is a finding
        raise Finding(f"an untyped ValidationError escaped: {e}") from e


# -- rest_responses --------------------------------------------------------------------------------
#: Byte 0 of a rest_responses input selects the answer it is.
REST_ANSWERS = ("config", "databases", "tables", "table", "token")


def rest_responses(data: bytes) -> None:
    """Byte 0 selects the answer (:data:`REST_ANSWERS`); the rest is its body."""
    from tablekeeper.core import errors
    from tablekeeper.core.catalogs import rest_responses as R

    if not data:
        return
    answer = REST_ANSWERS[data[0] % len(REST_ANSWERS)]
    try:
        doc = R.decode(data[1:], f"fuzzed {answer}")
        if answer == "config":
            for options in R.config(doc):
                _check(all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()), "options")
        elif answer in ("databases", "tables"):
            names, token = R.page(doc, f"fuzzed {answer}", answer)
            _check(all(isinstance(n, str) and n for n in names), "names")
            _check(token is None or (isinstance(token, str) and bool(token)), "page token")
        elif answer == "table":
            path, table_id = R.table_location(doc, "db.t")
            _check(isinstance(path, str) and bool(path) and "\x00" not in path, "path")
            _check(table_id is None or isinstance(table_id, (str, int)), "id")
        else:
            token_options, expires = R.data_token(doc, "db.t")
            _check(all(isinstance(k, str) and isinstance(v, str) for k, v in token_options.items()), "token")
            _check(isinstance(expires, int) and not isinstance(expires, bool) and expires >= 0, "expiry")
    except errors.CatalogError as e:
        _check(bool(e.message) and bool(e.fix), "an error without a message or fix")


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("avro_decoders", avro_decoders, 8192),
    Target("manifest_files", manifest_files, 65536),
    Target("metadata_json", metadata_json, 8192),
    Target("inventory", inventory, 16384),
    Target("name_scan", name_scan, 8192),
    Target("cr_specs", cr_specs, 4096),
    Target("rest_responses", rest_responses, 4096),
)}
