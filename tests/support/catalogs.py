"""pytest plugin: the catalog servers of the catalogs tier (markers ``hive``, ``jdbc``, ``rest``),
one per test session, started on loopback on first use and stopped at session end.

- ``hive_metastore``: Apache Hive's standalone metastore 4.0.1 with an embedded Derby database (a
  copy of the schema ``scripts/catalogs/hms.sh`` initialised with the metastore's schematool).
  Paimon's HiveCatalog jars are not on Maven Central's mirror, so Java Paimon and pypaimon write at
  the warehouse path and :func:`register_paimon_table` registers the table as Paimon's
  ``HiveCatalog`` does (table parameters, storage descriptor, partition sync).
  :class:`HiveTableLock` is ``HiveCatalogLock``: the same metastore lock, taken the same way.
- ``postgres_server``: a private PostgreSQL cluster (Debian's server, ``initdb`` + ``postgres``
  in a temporary directory, as the ``postgres`` user when the tests run as root) for Paimon's
  JDBC catalog; SQLite needs no server (:func:`sqlite_catalog_options`).
  :class:`JdbcTableLock` is ``JdbcCatalogLock``: a row of ``paimon_distributed_locks``.
- ``rest_catalog_server``: Apache Paimon's own ``RESTCatalogServer`` (paimon-core's test jar) over
  a local warehouse directory, bearer-token authentication, data tokens on (``data-token.enabled``:
  clients open table files with the credentials the server vends, as with DLF).
- ``catalog_java``: the Java Paimon driver (scripts/javapaimon) with the JDBC drivers on its
  classpath: its requests carry ``catalog=<options>`` to go through a JDBC or REST catalog.

Setup is ``scripts/catalogs/setup`` (scripts/test runs it; a fixture reruns the idempotent Java
pieces). A server that cannot start fails the test under ``CI=true`` and skips it elsewhere with a
one-line reason naming the missing piece (:func:`unavailable`). Every JVM exits when its stdin
closes and PostgreSQL gets SIGINT (fast shutdown) when the test process dies, so nothing outlives the session.
"""

from __future__ import annotations

import getpass
import importlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self
from xml.sax.saxutils import escape as xml_escape

import pytest

from tests.support.javapaimon import JavaPaimon
from tests.support.stores import _stop as stop_process
from tests.support.stores import free_port

__all__ = [
    "HiveMetastore",
    "HiveTableLock",
    "JdbcTableLock",
    "PostgresServer",
    "RestCatalogServer",
    "hms_client",
    "jdbc_lock_id",
    "metastore_partitions",
    "register_paimon_table",
    "sqlite_catalog_options",
    "unavailable",
]

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "scripts" / "catalogs" / "setup"
HIVE_VERSION = os.environ.get("TABLEKEEPER_HIVE_METASTORE_VERSION", "4.0.1")
PAIMON_VERSION = os.environ.get("TABLEKEEPER_CATALOGS_PAIMON_VERSION", "1.4.2")
_START_TIMEOUT_S = 180.0
_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")

# Paimon's HiveCatalog (paimon-hive-catalog, 1.4.2): what it writes into the metastore.
PAIMON_TABLE_TYPE = "PAIMON"
PAIMON_INPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonInputFormat"
PAIMON_OUTPUT_FORMAT = "org.apache.paimon.hive.mapred.PaimonOutputFormat"
PAIMON_SERDE = "org.apache.paimon.hive.PaimonSerDe"
PAIMON_STORAGE_HANDLER = "org.apache.paimon.hive.PaimonStorageHandler"
#: ``CatalogOptions``: lock-acquire-timeout (8 min) and lock-check-max-sleep (8 s).
LOCK_ACQUIRE_TIMEOUT_S = 480.0
LOCK_CHECK_MAX_SLEEP_S = 8.0


def unavailable(reason: str) -> None:
    """A catalog tier that cannot run: fail under CI=true, skip elsewhere (one line)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"catalog tier cannot run under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def _setup(piece: str) -> Path:
    """``scripts/catalogs/setup PIECE`` (idempotent; never installs system packages from a test):
    the piece's directory, or :func:`unavailable` naming what is missing."""
    env = {**os.environ, "TABLEKEEPER_NO_APT": "1"}
    try:
        done = subprocess.run(["bash", str(SETUP), piece], capture_output=True, text=True, timeout=1800, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        unavailable(f"scripts/catalogs/setup {piece} did not finish: {e}")
        raise AssertionError("unreachable") from e
    for line in done.stdout.splitlines():
        name, _, path = line.partition(" ")
        if name == piece and done.returncode == 0:
            return Path(path)
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    own = [line for line in lines if line.startswith(f"{piece}:")]  # the piece's own reason
    reason = (own or lines or [f"exit code {done.returncode}"])[-1]
    unavailable(f"catalogs tier: {piece} is not installed ({reason}; run scripts/catalogs/setup)")
    raise AssertionError("unreachable")


def _import(module: str, what: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        unavailable(f"catalogs tier: {what} is not installed (pip install -e '.[test]')")
        raise


def _tail(log: Path) -> str:
    """The end of a server's log, on one line."""
    return " ".join(log.read_text(errors="replace").split())[-300:]


def _wait_until(ready: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path, what: str,
                timeout: float = _START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            unavailable(f"{what} exited with {proc.returncode}: {_tail(log)}")
        if ready():
            return
        time.sleep(0.2)
    unavailable(f"{what} did not answer within {timeout:.0f} s: {_tail(log)}")


def _stop_jvm(proc: subprocess.Popen[bytes]) -> None:
    """Close the launcher's stdin (it exits), then terminate it if it does not."""
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        stop_process(proc)


# -- Hive Metastore ------------------------------------------------------------------------------
@dataclass(frozen=True)
class HiveMetastore:
    host: str
    port: int
    #: Paimon's warehouse directory (the metastore's external root; databases at ``<warehouse>/<db>.db``).
    warehouse: str

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"

    def catalog_options(self, **extra: str) -> dict[str, str]:
        """The options a Paimon user writes for this metastore (``metastore=hive``)."""
        return {"metastore": "hive", "uri": self.uri, "warehouse": self.warehouse, **extra}


def _metastore_site(db: Path, managed: Path, warehouse: Path) -> str:
    """Hive 4 keeps managed tables (``metastore.warehouse.dir``) and external ones apart, and refuses
    an external table inside the managed root: Paimon's warehouse is the external root here (Hive 4
    stores Paimon's tables as external, see :func:`register_paimon_table`)."""
    props = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={db};create=false",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "javax.jdo.option.ConnectionUserName": "APP",
        "javax.jdo.option.ConnectionPassword": "mine",
        "metastore.warehouse.dir": managed.as_uri(),
        "metastore.warehouse.external.dir": warehouse.as_uri(),
        "metastore.thrift.bind.host": "127.0.0.1",
        "metastore.schema.verification": "true",
        "metastore.metrics.enabled": "false",
        "metastore.event.db.notification.api.auth": "false",
    }
    body = "\n".join(f"  <property><name>{k}</name><value>{xml_escape(v)}</value></property>" for k, v in props.items())
    return f"<configuration>\n{body}\n</configuration>\n"


def hms_client(server: HiveMetastore) -> Any:
    """A thrift connection to the metastore, as a context manager yielding pymetastore's ``HMS``
    (its ``.client`` is the generated ``ThriftHiveMetastore.Client``: the whole metastore API).

    pymetastore's own connection object, not a generator-based wrapper: the metastore's thrift
    exceptions are immutable, and ``contextlib`` would fail setting their ``__traceback__``."""
    metastore = _import("pymetastore.metastore", "pymetastore (the Hive Metastore client)")
    return metastore.HMS.create(host=server.host, port=server.port)


def _hms_answers(server: HiveMetastore) -> bool:
    try:
        with hms_client(server) as hms:
            return "default" in hms.client.get_all_databases()
    except Exception:
        return False


@pytest.fixture(scope="session")
def hive_metastore() -> Iterator[HiveMetastore]:
    _import("pymetastore.metastore", "pymetastore (the Hive Metastore client)")
    home = _setup("hms")
    java = shutil.which("java")
    if java is None:
        unavailable("Hive tier: java not found")
    base = Path(tempfile.mkdtemp(prefix="tk-hms-"))
    warehouse, managed = base / "warehouse", base / "hive-managed"
    warehouse.mkdir()
    managed.mkdir()
    shutil.copytree(home / "template" / "metastore_db", base / "metastore_db")
    (base / "conf").mkdir()
    (base / "conf" / "metastore-site.xml").write_text(_metastore_site(base / "metastore_db", managed, warehouse))
    port = free_port()
    server = HiveMetastore("127.0.0.1", port, str(warehouse))
    log = base / "metastore.log"
    classpath = f"{base / 'conf'}:{home / 'classes'}:{(home / 'deps.txt').read_text().strip()}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [java, *_JVM, "-Xmx768m", f"-Dderby.stream.error.file={base / 'derby.log'}", "-cp", classpath,
             "HiveMetastoreLauncher", "-p", str(port)],
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, cwd=base)
    try:
        _wait_until(lambda: _hms_answers(server), proc, log, f"Hive Metastore {HIVE_VERSION}")
        yield server
    finally:
        _stop_jvm(proc)
        shutil.rmtree(base, ignore_errors=True)


def _hive_type(paimon_type: Any) -> str:
    """Paimon's type (schema JSON) as HiveCatalog names it in the metastore (HiveTypeUtils)."""
    if isinstance(paimon_type, dict):
        kind = paimon_type["type"].split(" ")[0]
        if kind == "ARRAY":
            return f"array<{_hive_type(paimon_type['element'])}>"
        if kind == "MULTISET":
            return f"map<{_hive_type(paimon_type['element'])},int>"
        if kind == "MAP":
            return f"map<{_hive_type(paimon_type['key'])},{_hive_type(paimon_type['value'])}>"
        if kind == "ROW":
            return "struct<" + ",".join(f"{f['name']}:{_hive_type(f['type'])}" for f in paimon_type["fields"]) + ">"
        raise ValueError(f"no Hive type for Paimon type {paimon_type!r}")
    text = str(paimon_type).removesuffix(" NOT NULL")
    base, _, args = text.partition("(")
    length = int(args.rstrip(")").split(",")[0]) if args and base in ("CHAR", "VARCHAR") else 0
    simple = {"BOOLEAN": "boolean", "TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "INTEGER": "int",
              "BIGINT": "bigint", "FLOAT": "float", "DOUBLE": "double", "STRING": "string", "BYTES": "binary",
              "BINARY": "binary", "VARBINARY": "binary", "DATE": "date", "TIME": "string"}
    if base in ("CHAR", "VARCHAR"):
        limit = 255 if base == "CHAR" else 65535
        return f"{base.lower()}({length})" if length <= limit else "string"
    if base == "DECIMAL":
        return "decimal(" + args.rstrip(")").replace(" ", "") + ")"
    if base == "TIMESTAMP" and "WITH LOCAL TIME ZONE" in text or base == "TIMESTAMP_LTZ":
        return "timestamp with local time zone"
    if base == "TIMESTAMP":
        return "timestamp"
    if base in simple:
        return simple[base]
    raise ValueError(f"no Hive type for Paimon type {paimon_type!r}")


def _latest_schema(table_path: Path) -> dict[str, Any]:
    ids = [int(p.name.removeprefix("schema-")) for p in (table_path / "schema").glob("schema-*")
           if p.name.removeprefix("schema-").isdigit()]
    if not ids:
        raise FileNotFoundError(f"no Paimon schema under {table_path}")
    schema: dict[str, Any] = json.loads((table_path / "schema" / f"schema-{max(ids)}").read_text())
    return schema


def _true(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "false")).strip().lower() == "true"


def _escape_path_name(text: str) -> str:
    """``PartitionPathUtils.escapePathName``: control characters and ``"#%'*/:=?\\{}[]^`` as %XX."""
    return "".join(f"%{ord(c):02X}" if ord(c) < 32 or ord(c) == 127 or c in "\"#%'*/:=?\\{}[]^" else c
                   for c in text)


def paimon_partitions(warehouse: str, identifier: str) -> list[dict[str, str]]:
    """The partitions of the table's latest snapshot, as Paimon names them in a metastore
    (``InternalRowPartitionComputer``: a null or blank value is ``partition.default-name``).
    Read with pypaimon; partition columns of STRING, CHAR, VARCHAR, BOOLEAN and integer types."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier)
    keys = list(table.table_schema.partition_keys)
    default = table.table_schema.options.get("partition.default-name", "__DEFAULT_PARTITION__")
    specs: dict[tuple[str, ...], dict[str, str]] = {}
    read_builder = table.new_read_builder()
    for split in read_builder.new_scan().plan().splits():
        values: list[str] = []
        for value in split.partition.values:
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (int, str)):
                text = str(value)
            elif value is None:
                text = ""
            else:
                raise NotImplementedError(f"partition value {value!r} of {identifier}: extend paimon_partitions")
            values.append(default if not text.strip() else text)
        specs[tuple(values)] = dict(zip(keys, values, strict=True))
    return [specs[k] for k in sorted(specs)]


def register_paimon_table(client: Any, warehouse: str, identifier: str, *, external: bool = False,
                          sync_all_properties: bool = True,
                          partitions: Sequence[Mapping[str, str]] | None = None) -> Any:
    """Register the Paimon table at ``<warehouse>/<db>.db/<table>`` in the metastore as Paimon's
    ``HiveCatalog`` (1.4.2) does when it creates the table, and return the metastore's table.

    - database: created if missing, location ``<warehouse>/<db>.db``;
    - table: ``MANAGED_TABLE`` (or ``EXTERNAL_TABLE`` + ``EXTERNAL=TRUE``), parameters
      ``table_type=PAIMON`` and ``storage_handler`` = PaimonStorageHandler, plus every table option
      with ``primary-key`` / ``partition`` / ``bucket-key`` (``sync-all-properties``, default true)
      or else the ``hive.``-prefixed options without prefix, ``partition.expiration-time`` and
      ``data-file.path-directory``; ``comment``; Paimon's input/output formats and serde; location;
    - with ``metastore.partitioned-table=true``: the partition keys as partition columns (the other
      columns in the storage descriptor) and every partition of the latest snapshot added
      (``add_partitions``, if not exists) at ``<location>/k=v/``, as ``AddPartitionCommitCallback``
      does on commit; ``partitions`` overrides that list.

    Hive Metastore 4 translates a non-transactional ``MANAGED_TABLE`` into an ``EXTERNAL_TABLE``
    with ``external.table.purge=TRUE`` (``TRANSLATED_TO_EXTERNAL``), as it does for HiveCatalog."""
    ttypes = _import("pymetastore.hive_metastore.ttypes", "pymetastore (the Hive Metastore client)")
    db, name = identifier.split(".", 1)
    db_location = f"{warehouse.rstrip('/')}/{db}.db"
    table_path = Path(db_location) / name
    schema = _latest_schema(table_path)
    options: dict[str, str] = dict(schema.get("options") or {})
    partition_keys: list[str] = list(schema.get("partitionKeys") or [])
    primary_keys: list[str] = list(schema.get("primaryKeys") or [])
    fields = [(f["name"], _hive_type(f["type"]), f.get("description")) for f in schema["fields"]]
    if db not in client.get_all_databases():
        client.create_database(ttypes.Database(name=db, locationUri=db_location, parameters={}))
    if sync_all_properties:
        params = dict(options)
        if primary_keys:
            params["primary-key"] = ",".join(primary_keys)
        if partition_keys:
            params["partition"] = ",".join(partition_keys)
        bucket_keys = [k for k in options.get("bucket-key", "").split(",") if k.strip()] or \
            [k for k in primary_keys if k not in partition_keys]
        if bucket_keys:
            params["bucket-key"] = ",".join(bucket_keys)
    else:
        params = {k.removeprefix("hive."): v for k, v in options.items() if k.startswith("hive.")}
        for key in ("partition.expiration-time", "data-file.path-directory"):
            if key in options:
                params[key] = options[key]
    params["table_type"] = PAIMON_TABLE_TYPE
    params["storage_handler"] = PAIMON_STORAGE_HANDLER
    if external:
        params["EXTERNAL"] = "TRUE"
    if schema.get("comment") is not None:
        params["comment"] = schema["comment"]
    in_metastore = bool(partition_keys) and _true(options, "metastore.partitioned-table")
    columns = [ttypes.FieldSchema(n, t, c) for n, t, c in fields if not (in_metastore and n in partition_keys)]
    by_name = {n: ttypes.FieldSchema(n, t, c) for n, t, c in fields}
    sd = ttypes.StorageDescriptor(
        cols=columns, location=str(table_path), inputFormat=PAIMON_INPUT_FORMAT, outputFormat=PAIMON_OUTPUT_FORMAT,
        serdeInfo=ttypes.SerDeInfo(serializationLib=PAIMON_SERDE, parameters={}))
    now = int(time.time())
    client.create_table(ttypes.Table(
        tableName=name, dbName=db, owner=getpass.getuser(), createTime=now, lastAccessTime=now,
        retention=2**31 - 1, sd=sd, partitionKeys=[by_name[k] for k in partition_keys] if in_metastore else [],
        parameters=params, tableType="EXTERNAL_TABLE" if external else "MANAGED_TABLE"))
    hive_table = client.get_table_req(ttypes.GetTableRequest(dbName=db, tblName=name)).table
    if in_metastore:
        specs = list(partitions) if partitions is not None else paimon_partitions(warehouse, identifier)
        add_metastore_partitions(client, hive_table, partition_keys, specs)
    return hive_table


def add_metastore_partitions(client: Any, hive_table: Any, partition_keys: Sequence[str],
                             specs: Sequence[Mapping[str, str]]) -> None:
    """``HiveCatalog.createPartitions``: one partition per spec (values in partition-key order),
    the table's storage descriptor with location ``<data path>/k=v/`` (``data-file.path-directory``
    appended to the table location when set), added if not exists."""
    ttypes = _import("pymetastore.hive_metastore.ttypes", "pymetastore (the Hive Metastore client)")
    if not specs:
        return
    data_path = hive_table.sd.location.rstrip("/")
    directory = (hive_table.parameters or {}).get("data-file.path-directory")
    if directory:
        data_path = f"{data_path}/{directory}"
    now = int(time.time())
    parts = []
    for spec in specs:
        relative = "/".join(f"{_escape_path_name(k)}={_escape_path_name(spec[k])}" for k in partition_keys) + "/"
        sd = ttypes.StorageDescriptor(**{**vars(hive_table.sd), "location": f"{data_path}/{relative}"})
        parts.append(ttypes.Partition(values=[spec[k] for k in partition_keys], dbName=hive_table.dbName,
                                      tableName=hive_table.tableName, createTime=now, lastAccessTime=now, sd=sd))
    client.add_partitions_req(ttypes.AddPartitionsRequest(
        dbName=hive_table.dbName, tblName=hive_table.tableName, parts=parts, ifNotExists=True, needResult=False))


def metastore_partitions(client: Any, database: str, table: str) -> list[dict[str, str]]:
    """The metastore's partitions of ``database.table`` as specs, sorted by their values."""
    ttypes = _import("pymetastore.hive_metastore.ttypes", "pymetastore (the Hive Metastore client)")
    hive_table = client.get_table_req(ttypes.GetTableRequest(dbName=database, tblName=table)).table
    keys = [k.name for k in hive_table.partitionKeys]
    parts = client.get_partitions(database, table, -1)
    return [dict(zip(keys, p.values, strict=True)) for p in sorted(parts, key=lambda p: list(p.values))]


class _TableLock:
    """A catalog's lock on one table: ``with lock:`` acquires it and releases it afterwards."""

    def acquire(self) -> object:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class HiveTableLock(_TableLock):
    """Paimon's ``HiveCatalogLock`` for one table: an EXCLUSIVE table-level metastore lock
    (``LockRequest`` of the user name and host name, no transaction), ``check_lock`` polled with a
    sleep doubling from 100 ms up to ``lock-check-max-sleep`` until ``lock-acquire-timeout``; a lock
    not acquired is unlocked and the acquisition fails. Use as a context manager, or
    :meth:`acquire` / :meth:`release`."""

    def __init__(self, client: Any, database: str, table: str, *, acquire_timeout_s: float = LOCK_ACQUIRE_TIMEOUT_S,
                 check_max_sleep_s: float = LOCK_CHECK_MAX_SLEEP_S) -> None:
        self.client = client
        self.database = database
        self.table = table
        self.acquire_timeout_s = acquire_timeout_s
        self.check_max_sleep_s = check_max_sleep_s
        self.lock_id: int | None = None

    def request(self) -> Any:
        """One ``lock`` call (the metastore queues it): its ``LockResponse`` (ACQUIRED or WAITING)."""
        ttypes = _import("pymetastore.hive_metastore.ttypes", "pymetastore (the Hive Metastore client)")
        component = ttypes.LockComponent(type=ttypes.LockType.EXCLUSIVE, level=ttypes.LockLevel.TABLE,
                                         dbname=self.database, tablename=self.table, operationType=None)
        return self.client.lock(ttypes.LockRequest(component=[component], user=getpass.getuser(),
                                                   hostname=socket.gethostname()))

    def acquire(self) -> int:
        ttypes = _import("pymetastore.hive_metastore.ttypes", "pymetastore (the Hive Metastore client)")
        start = time.monotonic()
        response = self.request()
        lock_id = int(response.lockid)
        sleep = 0.05
        try:
            while response.state == ttypes.LockState.WAITING:
                if time.monotonic() - start >= self.acquire_timeout_s:
                    break
                sleep = min(sleep * 2, self.check_max_sleep_s)
                time.sleep(sleep)
                response = self.client.check_lock(ttypes.CheckLockRequest(lockid=lock_id))
        finally:
            if response.state != ttypes.LockState.ACQUIRED:
                self._unlock(lock_id)
        if response.state != ttypes.LockState.ACQUIRED:
            state = ttypes.LockState._VALUES_TO_NAMES.get(response.state, response.state)
            raise TimeoutError(f"Acquire lock failed for table {self.database}.{self.table} (lockId={lock_id}) "
                               f"after {time.monotonic() - start:.1f} s. Final lock state: {state}")
        self.lock_id = lock_id
        return lock_id

    def _unlock(self, lock_id: int) -> None:
        ttypes = _import("pymetastore.hive_metastore.ttypes", "pymetastore (the Hive Metastore client)")
        if lock_id > 0:
            self.client.unlock(ttypes.UnlockRequest(lockid=lock_id))

    def release(self) -> None:
        if self.lock_id is not None:
            self._unlock(self.lock_id)
            self.lock_id = None


# -- JDBC: PostgreSQL and SQLite -----------------------------------------------------------------
@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def jdbc_uri(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def connect(self, database: str | None = None) -> Any:
        """A psycopg connection (autocommit off, as a DB-API connection starts)."""
        psycopg = _import("psycopg", "psycopg (the PostgreSQL client)")
        return psycopg.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               dbname=database or self.database)

    def create_database(self, name: str) -> str:
        """A fresh database on this server (one JDBC catalog store per test, say): its JDBC URI."""
        with self.connect() as conn:
            conn.autocommit = True
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"jdbc:postgresql://{self.host}:{self.port}/{name}"

    def catalog_options(self, warehouse: str, *, uri: str | None = None, **extra: str) -> dict[str, str]:
        """The options a Paimon user writes for a JDBC catalog on this server (``metastore=jdbc``)."""
        return {"metastore": "jdbc", "uri": uri or self.jdbc_uri, "jdbc.user": self.user,
                "jdbc.password": self.password, "warehouse": warehouse, **extra}


def sqlite_catalog_options(database_file: str, warehouse: str, **extra: str) -> dict[str, str]:
    """The options of a JDBC catalog kept in the SQLite file ``database_file``."""
    return {"metastore": "jdbc", "uri": f"jdbc:sqlite:{database_file}", "warehouse": warehouse, **extra}


def _postgres_answers(host: str, port: int, user: str, password: str) -> bool:
    psycopg = _import("psycopg", "psycopg (the PostgreSQL client)")
    try:
        with psycopg.connect(host=host, port=port, user=user, password=password, dbname="postgres", connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    psycopg = _import("psycopg", "psycopg (the PostgreSQL client)")
    bindir = _setup("postgres")
    base = Path(tempfile.mkdtemp(prefix="tk-pg-"))
    user, password, database = "tablekeeper", secrets.token_hex(12), "paimon_catalog"
    (base / "pwfile").write_text(password + "\n")
    # As root the server runs as Debian's 'postgres' user (postgres refuses root); setpriv also sets
    # the server's parent-death signal, so it stops when the test process dies.
    as_user: list[str] = ["setpriv", "--pdeathsig", "INT"]
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
        shutil.chown(base / "pwfile", "postgres", "postgres")
        as_user = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--pdeathsig", "INT"]
    if shutil.which("setpriv") is None:
        unavailable("JDBC tier: setpriv (util-linux) not found")
    data = base / "data"
    init = subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", user, f"--pwfile={base / 'pwfile'}",
                           "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                          capture_output=True, text=True)
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        unavailable(f"JDBC tier: initdb failed: {' '.join((init.stderr or init.stdout).split())[-300:]}")
    port = free_port()
    log = base / "postgres.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*as_user, str(bindir / "postgres"), "-D", str(data), "-p", str(port), "-k", str(base),
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_until(lambda: _postgres_answers("127.0.0.1", port, user, password), proc, log, "PostgreSQL")
        with psycopg.connect(host="127.0.0.1", port=port, user=user, password=password, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        yield PostgresServer("127.0.0.1", port, user, password, database)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # fast shutdown: clients still connected are cut off
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                stop_process(proc)
        shutil.rmtree(base, ignore_errors=True)


def jdbc_lock_id(catalog_key: str, database: str, table: str) -> str:
    """``JdbcCatalogLock``'s lock row: ``<catalog-key>.<database>.<table>``."""
    return f"{catalog_key}.{database}.{table}"


class JdbcTableLock(_TableLock):
    """Paimon's ``JdbcCatalogLock`` for one table: a row ``<catalog-key>.<db>.<table>`` inserted into
    ``paimon_distributed_locks`` (primary key: a second insert fails), after deleting that row if it
    is older than its ``expire_time_seconds`` (``lock-acquire-timeout``), retried with a sleep
    doubling from 100 ms up to ``lock-check-max-sleep`` until ``lock-acquire-timeout``; released by
    deleting the row. The SQL of Paimon's dialects (``PostgresqlDistributedLockDialect``,
    ``SqlLiteDistributedLockDialect``), on a DB-API connection (psycopg or sqlite3)."""

    TABLE = "paimon_distributed_locks"
    _EXPIRED = {
        "postgresql": f"DELETE FROM {TABLE} WHERE EXTRACT(EPOCH FROM AGE(NOW(), acquired_at)) >expire_time_seconds"
                      " and lock_id = %s",
        "sqlite": f"DELETE FROM {TABLE} WHERE  strftime('%s', 'now') - strftime('%s', acquired_at) > expire_time_seconds"
                  " and lock_id = ?",
    }

    def __init__(self, connection: Any, dialect: str, catalog_key: str, database: str, table: str, *,
                 acquire_timeout_s: float = LOCK_ACQUIRE_TIMEOUT_S, check_max_sleep_s: float = LOCK_CHECK_MAX_SLEEP_S,
                 lock_key_max_length: int = 255) -> None:
        if dialect not in self._EXPIRED:
            raise ValueError(f"dialect {dialect!r}: postgresql or sqlite")
        self.connection = connection
        self.dialect = dialect
        self.lock_id = jdbc_lock_id(catalog_key, database, table)
        self.acquire_timeout_s = acquire_timeout_s
        self.check_max_sleep_s = check_max_sleep_s
        self._mark = "%s" if dialect == "postgresql" else "?"
        self._create_table(lock_key_max_length)

    def _create_table(self, key_length: int) -> None:
        """``AbstractDistributedLockDialect.createTable``: the table, unless it exists (JdbcCatalog
        creates it at start when ``lock.enabled``)."""
        if self.dialect == "postgresql":
            exists = "SELECT 1 FROM information_schema.tables WHERE table_name = %s"
        else:
            exists = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        cur = self.connection.cursor()
        cur.execute(exists, (self.TABLE,))
        if cur.fetchone() is None:
            cur.execute(f"CREATE TABLE {self.TABLE}(lock_id VARCHAR({key_length}) NOT NULL,"
                        "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,"
                        "expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY (lock_id))")
        self.connection.commit()

    def try_acquire(self) -> bool:
        """``JdbcUtils.acquire``: clear this lock if timed out, then one INSERT; False if taken."""
        cur = self.connection.cursor()
        cur.execute(self._EXPIRED[self.dialect], (self.lock_id,))
        self.connection.commit()
        try:
            cur.execute(f"INSERT INTO {self.TABLE} (lock_id,expire_time_seconds) VALUES ({self._mark},{self._mark})",
                        (self.lock_id, int(self.acquire_timeout_s * 1000) // 1000))
            self.connection.commit()
            return True
        except Exception:
            self.connection.rollback()
            return False

    def acquire(self) -> None:
        start = time.monotonic()
        locked = self.try_acquire()
        sleep = 0.05
        while not locked:
            sleep = min(sleep * 2, self.check_max_sleep_s)
            time.sleep(sleep)
            locked = self.try_acquire()
            if time.monotonic() - start > self.acquire_timeout_s:
                break
        if not locked:
            raise TimeoutError(f"Acquire lock failed with time: {time.monotonic() - start:.1f} s ({self.lock_id})")

    def release(self) -> None:
        cur = self.connection.cursor()
        cur.execute(f"DELETE FROM {self.TABLE} WHERE lock_id = {self._mark}", (self.lock_id,))
        self.connection.commit()


# -- REST ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RestCatalogServer:
    url: str
    #: The catalog's warehouse *name* (what clients pass as ``warehouse``; not a path).
    warehouse: str
    token: str
    #: Where the server keeps the table files (``<data_path>/<db>.db/<table>``).
    data_path: str

    def catalog_options(self, **extra: str) -> dict[str, str]:
        """The options a Paimon user writes for this server (``metastore=rest``, bearer token)."""
        return {"metastore": "rest", "uri": self.url, "warehouse": self.warehouse, "token.provider": "bear",
                "token": self.token, **extra}


@pytest.fixture(scope="session")
def rest_catalog_server() -> Iterator[RestCatalogServer]:
    home = _setup("java")
    java = shutil.which("java")
    if java is None:
        unavailable("REST tier: java not found")
    base = Path(tempfile.mkdtemp(prefix="tk-rest-"))
    data = base / "warehouse"
    warehouse, token = "tablekeeper_rest", secrets.token_hex(16)
    log = base / "rest.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [java, *_JVM, "-Xmx512m", "-cp", (home / "rest" / "classpath").read_text().strip(),
             "RestCatalogServerLauncher", str(data), warehouse, token, "true"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()  # blocks until the server listens (or the JVM dies)
        if not line.strip():
            unavailable(f"REST tier: RESTCatalogServer did not start: {_tail(log)}")
        info = json.loads(line)
        yield RestCatalogServer(info["url"].rstrip("/"), info["warehouse"], info["token"], str(data))
    finally:
        _stop_jvm(proc)
        shutil.rmtree(base, ignore_errors=True)


# -- Java Paimon through catalogs ------------------------------------------------------------------
@pytest.fixture(scope="session")
def catalog_java() -> Iterator[JavaPaimon]:
    """Java Paimon (the scripts/javapaimon driver, Paimon 1.4.2) with the PostgreSQL and SQLite
    JDBC drivers: ``catalog_java.call(op, catalog=<options>, table=...)`` goes through the catalog."""
    home = _setup("java")
    if shutil.which("java") is None:
        unavailable("catalogs tier: java not found")
    driver = JavaPaimon((home / "driver" / "classpath").read_text().strip(), PAIMON_VERSION)
    try:
        yield driver
    finally:
        driver.close()
