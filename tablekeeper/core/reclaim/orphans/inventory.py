"""A storage inventory as the listing of orphan cleanup (issue 16): an S3 Inventory report or a
plain file list, parsed and validated into a frozen :class:`Listing`.

Listing a big table is where orphan cleanup spends its requests (one LIST page per 1,000 keys,
throttled per prefix). S3 Inventory lists the bucket once a day or week for a flat fee; this
module reads such a report (``manifest.json`` naming gzip CSV, ORC or Parquet data files) or a
plain CSV/Parquet list (key, size, last-modified) so that :mod:`tablekeeper.core.reclaim.orphans` takes
its candidates from it instead of listing the store. Which listed files are candidates stays
the orphan planner's single decision (``decisions.is_candidate_name`` and the bucket-directory
rules); this module only turns bytes into (location, size, mtime) rows and refuses reports that
do not describe the table.

Why an inventory is safe (docs/inventory.md):

- Candidates come from the inventory, *roots never do*: snapshots, tags, branches and
  changelogs are read live from the store after the inventory was taken, exactly as after a
  live listing (Paimon #3075: list first, then build the used set). A file listed in the
  inventory and referenced by a root committed after the inventory is therefore protected.
- A key absent from the inventory (written after it, or outside its prefix filter) is simply
  not a candidate: an old inventory can only make cleanup find fewer orphans, never more.
- The inventory must have been taken before the ``older-than`` threshold
  (:func:`check_listing`): every file it lists then existed before the threshold, even if a row's
  last-modified were wrong, and each row's last-modified must be older than the threshold too.
- A listed file that the store has since rewritten with newer content is not a concern: Paimon
  never rewrites a data, manifest, index or statistics file in place (their names carry a UUID,
  and temp files of crashed commits are never reused), so a listed key names one immutable
  object; if it was deleted since, the delete reports it missing.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal
from urllib.parse import unquote_plus

from tablekeeper.core import errors, pycompat
from tablekeeper.core.storage import FileIO, FileStatus, basename, parent, split_scheme

__all__ = [
    "InventoryError",
    "InventoryMismatchError",
    "InventoryTooRecentError",
    "Listing",
    "Manifest",
    "parse_manifest",
    "parse_inventory_rows",
    "parse_file_list",
    "check_listing",
    "load",
    "load_for_table",
]

Kind = Literal["s3-inventory", "file-list"]

#: S3 Inventory's formats (``fileFormat`` in manifest.json).
FORMATS = ("CSV", "ORC", "Parquet")
#: Spellings of S3 in Paimon warehouses: a report on s3:// is read through an s3a:// table's store.
_S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
#: Fields the inventory configuration must include besides Bucket and Key.
REQUIRED_FIELDS = ("Size", "LastModifiedDate")

_SETUP_FIX = ("configure the S3 Inventory report with the optional fields Size and LastModifiedDate, "
              "format CSV, ORC or Parquet (docs/inventory.md)")


class InventoryError(errors.InvalidInputError):
    """The inventory or file list cannot be read: malformed, unknown format, missing columns.
    Nothing was deleted."""

    reason = "InvalidInventory"


class InventoryMismatchError(InventoryError):
    """The inventory describes another bucket or prefix than the table's."""

    reason = "InventoryMismatch"


class InventoryTooRecentError(InventoryError):
    """The inventory was taken after the ``older-than`` threshold."""

    reason = "InventoryTooRecent"


@dataclass(frozen=True)
class Manifest:
    """The parts of an S3 Inventory ``manifest.json`` orphan cleanup reads."""

    source_bucket: str
    destination_bucket: str
    file_format: str  # one of FORMATS
    #: column names in order (CSV), or the names in the ORC/Parquet schema
    columns: tuple[str, ...]
    #: keys of the data files in the destination bucket
    files: tuple[str, ...]
    creation_ms: int


@dataclass(frozen=True)
class Listing:
    """Files as an inventory saw them: full locations (``s3://bucket/key`` or absolute local
    paths) with size and modification time, only those below ``within`` (the table's roots).

    ``taken_ms`` is when the inventory was taken (S3 Inventory's ``creationTimestamp``; for a
    plain list the list file's own modification time, the latest it can have been taken)."""

    source: str
    kind: Kind
    taken_ms: int
    #: the bucket the inventory lists (S3 Inventory's ``sourceBucket``), None for plain lists
    bucket: str | None
    files: tuple[FileStatus, ...]
    #: rows read in all (also those outside ``within``)
    rows: int


# -- manifest.json -----------------------------------------------------------------------------------


def _bucket_name(value: str) -> str:
    """``arn:aws:s3:::name`` (destinationBucket) or a plain name."""
    return value.rsplit(":::", 1)[-1] if value.startswith("arn:") else value


def _schema_columns(file_format: str, schema: str, source: str) -> tuple[str, ...]:
    """Column names from ``fileSchema``: a comma list for CSV (``Bucket, Key, Size, ...``), an ORC
    type (``struct<bucket:string,key:string,...>``) or a Parquet message type
    (``message s3.inventory { required binary bucket (UTF8); ... }``)."""
    if file_format == "CSV":
        return tuple(c.strip() for c in schema.split(",") if c.strip())
    if file_format == "ORC":
        inner = schema.strip()
        if not (inner.startswith("struct<") and inner.endswith(">")):
            raise InventoryError(f"{source}: ORC fileSchema is not a struct<...>: {schema[:80]!r}",
                                 fix="give the manifest.json S3 Inventory wrote, unchanged")
        return tuple(f.split(":", 1)[0].strip() for f in inner[len("struct<"):-1].split(",") if ":" in f)
    body = schema[schema.find("{") + 1:schema.rfind("}")] if "{" in schema else ""
    names = []
    for field in body.split(";"):
        words = field.replace("(", " (").split()
        if len(words) >= 3 and words[0] in ("required", "optional", "repeated"):
            names.append(words[2])
    if not names:
        raise InventoryError(f"{source}: Parquet fileSchema has no fields: {schema[:80]!r}",
                             fix="give the manifest.json S3 Inventory wrote, unchanged")
    return tuple(names)


def _norm(column: str) -> str:
    """``LastModifiedDate`` (CSV) and ``last_modified_date`` (ORC/Parquet) compare equal."""
    return column.replace("_", "").replace("-", "").lower()


def parse_manifest(raw: bytes, source: str = "manifest.json") -> Manifest:
    """Parse an S3 Inventory ``manifest.json``.

    Raises:
        InventoryError: not JSON, a field missing, an unknown ``fileFormat``, or the schema
        lacks Bucket, Key, Size or LastModifiedDate.
    """
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise InventoryError(f"{source} is not JSON: {e}",
                             fix="give the path of an S3 Inventory manifest.json, or a CSV/Parquet file list") from e
    if not isinstance(doc, dict):
        raise InventoryError(f"{source} is not an S3 Inventory manifest (not an object)",
                             fix="give the path of an S3 Inventory manifest.json")
    missing = [k for k in ("sourceBucket", "destinationBucket", "fileFormat", "fileSchema", "files",
                           "creationTimestamp") if k not in doc]
    if missing:
        raise InventoryError(f"{source} lacks {', '.join(missing)}: not an S3 Inventory manifest",
                             fix="give the manifest.json S3 Inventory wrote, unchanged")
    wrong = [k for k in ("sourceBucket", "destinationBucket", "fileFormat", "fileSchema") if not isinstance(doc[k], str)]
    if wrong or not isinstance(doc["files"], list):
        raise InventoryError(f"{source}: {', '.join(wrong or ['files'])} is not a {'string' if wrong else 'list'}",
                             fix="give the manifest.json S3 Inventory wrote, unchanged")
    fmt = {f.lower(): f for f in FORMATS}.get(str(doc["fileFormat"]).lower())
    if fmt is None:
        raise InventoryError(f"{source}: unknown fileFormat {doc['fileFormat']!r}",
                             fix=f"S3 Inventory formats are {', '.join(FORMATS)}; " + _SETUP_FIX)
    try:
        stamp = doc["creationTimestamp"]
        if isinstance(stamp, bool) or not isinstance(stamp, (int, str)):
            raise TypeError(f"creationTimestamp {str(stamp)[:40]!r} is not epoch milliseconds")
        creation_ms = int(stamp)
        files = tuple(str(f["key"]) for f in doc["files"])
    except (TypeError, ValueError, KeyError) as e:
        raise InventoryError(f"{source}: bad creationTimestamp or files entry: {e}",
                             fix="give the manifest.json S3 Inventory wrote, unchanged") from e
    columns = _schema_columns(fmt, str(doc["fileSchema"]), source)
    have = {_norm(c) for c in columns}
    lacking = [c for c in ("Bucket", "Key", *REQUIRED_FIELDS) if _norm(c) not in have]
    if lacking:
        raise InventoryError(f"{source}: the inventory has no {', '.join(lacking)} column", fix=_SETUP_FIX)
    return Manifest(str(doc["sourceBucket"]), _bucket_name(str(doc["destinationBucket"])), fmt, columns, files,
                    creation_ms)


# -- rows --------------------------------------------------------------------------------------------


def _parse_time(value: Any, where: str) -> int:
    """Epoch ms from an ISO-8601 string (S3 Inventory CSV: ``2016-11-06T21:32:00.000Z``), epoch ms
    as a number or string, or a datetime (ORC/Parquet timestamps)."""
    if isinstance(value, datetime):
        return int((value if value.tzinfo else value.replace(tzinfo=timezone.utc)).timestamp() * 1000)
    text = str(value).strip()
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
        if text.isdigit():
            return int(text)
        parsed = pycompat.fromisoformat(text)
        return int((parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp() * 1000)
    except (ValueError, OverflowError) as e:  # (NaN, an infinity, a year out of range too)
        raise InventoryError(f"{where}: last-modified {text[:40]!r} is not a time",
                             fix="last-modified must be ISO-8601 (2026-01-31T12:00:00Z) or epoch milliseconds") from e


def _parse_size(value: Any, where: str) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError("a boolean")
        size = int(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise InventoryError(f"{where}: size {str(value)[:40]!r} is not a number",
                             fix="size must be the object's size in bytes") from e
    return size


def _is_true(value: Any) -> bool:
    return value is True or str(value).strip().lower() == "true"


def _current(row: Mapping[str, Any]) -> bool:
    """Rows of older object versions and delete markers (an inventory of all versions) do not
    name a current object."""
    latest = row.get("islatest")
    return (latest is None or latest == "" or _is_true(latest)) and not _is_true(row.get("isdeletemarker"))


def _columnar(file_format: str, raw: bytes, where: str) -> list[dict[str, Any]]:
    """Rows of an ORC or Parquet file, keyed by normalized column name."""
    try:
        if file_format == "ORC":
            from pyarrow import orc

            table = orc.ORCFile(io.BytesIO(raw)).read()
        else:
            from pyarrow import parquet

            table = parquet.read_table(io.BytesIO(raw))
        names = [_norm(n) for n in table.column_names]
        columns = [table.column(i).to_pylist() for i in range(len(names))]
    except ImportError as e:
        raise InventoryError(f"{where}: reading {file_format} needs pyarrow with {file_format} support: {e}",
                             fix="use a CSV or Parquet inventory") from e
    except Exception as e:  # pyarrow raises ArrowInvalid/OSError on damaged files, ValueError on odd values
        raise InventoryError(f"{where} is not a readable {file_format} file: {e}",
                             fix="give the data files S3 Inventory wrote, unchanged") from e
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def _csv_rows(raw: bytes, where: str, columns: Sequence[str] | None) -> Iterator[dict[str, Any]]:
    """Rows of a CSV file (gzip detected by its magic bytes); ``columns`` None: the first row is
    the header."""
    try:
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as e:
        raise InventoryError(f"{where} is not a (gzip) UTF-8 CSV file: {e}",
                             fix="give the data files S3 Inventory wrote, unchanged") from e
    reader = csv.reader(io.StringIO(text))
    try:
        names = [_norm(c) for c in (columns if columns is not None else next(reader, []))]
        for n, values in enumerate(reader, start=1 if columns is None else 0):
            if not values:
                continue
            if len(values) != len(names):
                raise InventoryError(f"{where}, row {n + 1}: {len(values)} field(s), the schema has {len(names)}",
                                     fix="give the files the inventory wrote, unchanged (the schema must match)")
            yield dict(zip(names, values, strict=True))
    except csv.Error as e:
        raise InventoryError(f"{where} is not valid CSV: {e}", fix="give the files the inventory wrote, unchanged") \
            from e


def parse_inventory_rows(manifest: Manifest, raw: bytes, where: str) -> Iterator[tuple[str, int, int]]:
    """``(key, size, mtime_ms)`` of the current objects in one inventory data file; CSV keys are
    URL-encoded by S3 Inventory and decoded here.

    Raises:
        InventoryError: a damaged file, a row that does not fit the schema, a bad size or time.
    """
    if manifest.file_format == "CSV":
        rows: Iterable[dict[str, Any]] = _csv_rows(raw, where, manifest.columns)
    else:
        rows = _columnar(manifest.file_format, raw, where)
    for row in rows:
        if not _current(row):
            continue
        key = row.get("key")
        if key is None:
            raise InventoryError(f"{where}: a row without key", fix=_SETUP_FIX)
        if row.get("bucket") not in (None, manifest.source_bucket):
            raise InventoryMismatchError(
                f"{where}: a row of bucket {row.get('bucket')!r}, the manifest's sourceBucket is "
                f"{manifest.source_bucket!r}", fix="give the data files of this manifest, unchanged")
        if row.get("size") is None or row.get("lastmodifieddate") is None:
            raise InventoryError(f"{where}: key {str(key)[:80]!r} has no size or last-modified", fix=_SETUP_FIX)
        decoded = unquote_plus(str(key)) if manifest.file_format == "CSV" else str(key)
        yield decoded, _parse_size(row["size"], where), _parse_time(row["lastmodifieddate"], where)


#: Accepted column names of a plain file list (normalized as :func:`_norm` does).
_LOCATION_COLUMNS = ("key", "location", "path")
_MTIME_COLUMNS = ("lastmodified", "lastmodifieddate", "modificationtime", "mtime")


def parse_file_list(raw: bytes, where: str) -> Iterator[tuple[str | None, str, int, int]]:
    """``(bucket, key, size, mtime_ms)`` rows of a plain file list: CSV with a header row (gzip
    allowed) or Parquet, columns ``key`` (or ``location``/``path``), ``size`` and
    ``last_modified`` (ISO-8601 or epoch ms), optionally ``bucket``. Without a bucket column a
    key is a full location (``s3://bucket/key`` or an absolute path).

    Raises:
        InventoryError: malformed, or a required column missing.
    """
    rows: Iterable[dict[str, Any]]
    rows = _columnar("Parquet", raw, where) if raw[:4] == b"PAR1" else _csv_rows(raw, where, None)
    fields: tuple[str, str, str] | None = None
    for row in rows:
        if fields is None:
            loc = next((c for c in _LOCATION_COLUMNS if c in row), None)
            mtime = next((c for c in _MTIME_COLUMNS if c in row), None)
            if loc is None or "size" not in row or mtime is None:
                raise InventoryError(f"{where}: a file list needs the columns key, size and last_modified; it has "
                                     f"{', '.join(sorted(row)) or 'none'}",
                                     fix="write a header row: key,size,last_modified (and bucket if keys are "
                                         "bucket-relative)")
            fields = (loc, "size", mtime)
        loc, size, mtime = fields
        if not row.get(loc):
            raise InventoryError(f"{where}: a row without {loc}", fix="every row needs a key")
        bucket = row.get("bucket") or None
        yield (str(bucket) if bucket else None, str(row[loc]), _parse_size(row[size], where),
               _parse_time(row[mtime], where))


# -- validation ----------------------------------------------------------------------------------------


def _bucket_of(location: str) -> str | None:
    scheme, rest = split_scheme(location)
    return rest.split("/", 1)[0] if scheme != "file" else None


def _under(location: str, roots: Sequence[str]) -> bool:
    return any(location.startswith(root.rstrip("/") + "/") for root in roots)


def check_listing(listing: Listing, table_root: str, older_than_ms: int) -> None:
    """Refuse an inventory that does not describe the table at ``table_root`` or was taken too
    late for the threshold. Nothing has been deleted when this raises.

    Raises:
        InventoryMismatchError: another bucket, or no file under the table's location (the
        inventory's prefix filter does not cover the table).
        InventoryTooRecentError: taken at or after ``older_than_ms``.
    """
    table_bucket = _bucket_of(table_root)
    if listing.kind == "s3-inventory" and listing.bucket != table_bucket:
        raise InventoryMismatchError(
            f"the inventory {listing.source} lists bucket {listing.bucket!r}, the table {table_root} is in "
            f"{table_bucket!r}" if table_bucket else
            f"the inventory {listing.source} lists bucket {listing.bucket!r}, the table {table_root} is not on S3",
            fix="give the inventory report of the table's bucket")
    if not any(_under(f.path, (table_root,)) for f in listing.files):
        raise InventoryMismatchError(
            f"the listing {listing.source} names no file under the table's location {table_root} "
            f"({listing.rows} row(s) read)",
            fix="give an inventory whose bucket and prefix filter cover the table (the warehouse prefix)")
    if listing.taken_ms >= older_than_ms:
        taken = datetime.fromtimestamp(listing.taken_ms / 1000, timezone.utc).isoformat(timespec="seconds")
        limit = datetime.fromtimestamp(older_than_ms / 1000, timezone.utc).isoformat(timespec="seconds")
        raise InventoryTooRecentError(
            f"the listing {listing.source} was taken at {taken}, not before the older-than threshold {limit}",
            fix="use an older inventory report, or an older --older-than (the inventory must predate the "
                "threshold, so every file it lists is older than it)")


# -- loading (I/O) -----------------------------------------------------------------------------------


def _read(file_io: FileIO, path: str) -> bytes:
    try:
        return file_io.read_bytes(path)
    except FileNotFoundError as e:
        raise InventoryError(f"listing file not found: {path}",
                             fix="check the --listing path (the manifest.json or the file list)") from e
    except IsADirectoryError as e:
        raise InventoryError(f"{path} is a directory", fix="give the manifest.json itself, or a file list") from e


def _data_file_location(file_io: FileIO, manifest_path: str, manifest: Manifest, key: str) -> str:
    """Where an inventory data file is read: in the destination bucket when the manifest is on
    an object store; next to a downloaded manifest (``aws s3 sync`` keeps the key layout, so the
    key is looked up below the manifest's ancestors, then beside it) when it is local."""
    scheme, _rest = split_scheme(manifest_path)
    if scheme != "file":
        return f"{scheme}://{manifest.destination_bucket}/{key}"
    directory = parent(file_io.normalize(manifest_path))
    probe = directory
    while probe and probe != "/":
        candidate = f"{probe}/{key}"
        if file_io.exists(candidate):
            return candidate
        probe = parent(probe)
    return f"{directory}/{basename(key)}"


def _location(scheme: str, bucket: str | None, key: str, file_io: FileIO, where: str) -> str:
    if bucket is not None:
        return f"{scheme}://{bucket}/{key.lstrip('/')}"
    if key.startswith(("/", "file:")) or "://" in key:
        return file_io.normalize(key)
    raise InventoryError(f"{where}: key {key[:80]!r} is neither a full location nor has a bucket column",
                         fix="write full locations (s3://bucket/key, /abs/path) or add a bucket column")


def load(path: str, file_io: FileIO, table_root: str, within: Sequence[str]) -> Listing:
    """Read the listing at ``path`` (an S3 Inventory ``manifest.json`` or a plain file list, local
    or on a store ``file_io`` reaches), keeping the files under ``within`` (the table's roots).

    Raises:
        InventoryError: unreadable or malformed (see the parsers).
    """
    scheme = split_scheme(table_root)[0]
    raw = _read(file_io, path)
    files: list[FileStatus] = []
    rows = 0

    def keep(location: str, size: int, mtime_ms: int) -> None:
        nonlocal rows
        rows += 1
        if _under(location, within):
            files.append(FileStatus(location, size, mtime_ms))

    if basename(path).endswith(".json") or raw.lstrip()[:1] == b"{":
        manifest = parse_manifest(raw, path)
        if not manifest.files:
            raise InventoryError(f"{path} names no data file", fix="give a complete S3 Inventory report")
        for key in manifest.files:
            where = _data_file_location(file_io, path, manifest, key)
            for k, size, mtime in parse_inventory_rows(manifest, _read(file_io, where), where):
                keep(f"{scheme}://{manifest.source_bucket}/{k}", size, mtime)
        return Listing(path, "s3-inventory", manifest.creation_ms, manifest.source_bucket, tuple(files), rows)
    for bucket, key, size, mtime in parse_file_list(raw, path):
        keep(_location(scheme, bucket, key, file_io, path), size, mtime)
    listed_at = file_io.stat(path).mtime_ms
    return Listing(path, "file-list", listed_at, None, tuple(files), rows)


def load_for_table(path: str, table_io: FileIO, table_root: str, within: Sequence[str],
                   options: Mapping[str, Any] | None = None) -> Listing:
    """:func:`load` through the table's store when ``path`` is on it (the same scheme, or
    ``s3``/``s3a``/``s3n`` for one another: the inventory's destination bucket is reached with the
    table's endpoint and credentials), else through a FileIO for ``path`` built from ``options``."""
    scheme, rest = split_scheme(path)
    table_scheme = split_scheme(table_root)[0]
    if scheme != table_scheme and {scheme, table_scheme} <= _S3_SCHEMES:  # one store, three spellings
        path, scheme = f"{table_scheme}://{rest}", table_scheme
    return load(path, table_io if scheme == table_scheme else FileIO.for_uri(path, options), table_root, within)
