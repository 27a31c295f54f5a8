"""One maintenance run as data: ``JobRequest`` (operation, table, retention, dry run...) and its
command-line form (``to_args`` / ``parse_args``, shared by ``python -m tablekeeper.spark``).
Imported by the operator and the CLI: no pyspark here."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tablekeeper.core import errors, paimon, storage, values
from tablekeeper.core.reclaim.expire import Retention

__all__ = ["Operation", "OPERATIONS", "JobRequest", "is_secret_option", "env_option_values", "argument_parser", "parse_args"]

Operation = Literal["expire", "expire-changelog", "clean-orphans"]
OPERATIONS: tuple[Operation, ...] = ("expire", "expire-changelog", "clean-orphans")


@dataclass(frozen=True)
class JobRequest:
    """One maintenance run. ``options`` are storage options in Paimon syntax (``s3.endpoint``...);
    on Kubernetes, credentials come from the pod environment, never from here."""

    operation: Operation
    warehouse: str
    table: str
    branch: str = paimon.MAIN
    options: Mapping[str, str] = field(default_factory=dict)
    dry_run: bool = False
    older_than: str | None = None
    force: bool = False
    now_ms: int | None = None
    #: ``expire`` / ``expire-changelog``: the resolved retention to expire with (the operator's
    #: from the table's effective policy, the CLI's from the table's options and its flags);
    #: None = the table's own options (``retention_settings.from_options``), read when the job runs.
    retention: Retention | None = None
    parallelism: int | None = None
    #: keys per bulk delete; None: the store's default (``execution.delete_batch_size``: 1000 on
    #: S3/OSS, whose DeleteObjects takes 1000 keys, else 250)
    batch_size: int | None = None
    run_name: str | None = None
    result: str | None = None
    #: ``expire`` only: afterwards also expire the decoupled (long-lived) changelog in the same
    #: job, as the operator's ``ExpireSnapshots`` runs do in process (ExpireSnapshots +
    #: ExpireChangelog); the artifact sums both steps (``details["changelog"]`` has the second's).
    with_changelog: bool = False
    #: ``expire`` / ``expire-changelog``: run up to this many batches (``retention.expire_limit``
    #: snapshots or changelogs each) while the previous one expired something, as the operator's
    #: in-process runs do (``core.expire_batches``), for the snapshots and then the changelog; a
    #: dry run plans one.
    batches: int = 1
    #: Names of storage options whose values come from the environment variable of the same name
    #: (on Kubernetes: the catalog Secret's keys, mounted into the driver and every executor), so a
    #: credential reaches the executors without ever being in the job's arguments or manifest.
    #: Only the names travel; :meth:`storage_options` reads the values where the job runs.
    env_options: tuple[str, ...] = ()
    #: ``clean-orphans`` only: take the candidates from this storage inventory (an S3 Inventory
    #: ``manifest.json`` or a CSV/Parquet file list, docs/inventory.md) instead of listing the
    #: store; the driver reads and validates it, roots are still read live.
    listing: str | None = None
    #: the trash run (core/safety/trash ``TrashRun.spec()``) every delete of the job moves its files into
    #: instead of deleting them (``--keep-deleted``); None: files are deleted
    trash_run: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise errors.InvalidInputError(f"unknown operation {self.operation!r}",
                                           fix=f"use one of {', '.join(OPERATIONS)}")
        if self.batch_size is not None and not 1 <= self.batch_size <= values.DELETE_BATCH_MAX:
            raise errors.InvalidInputError(f"batch size {self.batch_size} is outside 1..{values.DELETE_BATCH_MAX}",
                                           fix=f"e.g. {values.DELETE_BATCH_DEFAULT}")
        if self.parallelism is not None and self.parallelism < 1:
            raise errors.InvalidInputError("parallelism must be >= 1", fix="omit it for Spark's default")
        if self.batches < 1:
            raise errors.InvalidInputError(f"batches must be >= 1, got {self.batches}", fix="omit it for one batch")
        if self.operation == "clean-orphans" and self.branch != paimon.MAIN:
            raise errors.InvalidInputError("orphan cleanup always covers the whole table (every branch)",
                                           fix="drop --branch")
        if self.with_changelog and self.operation != "expire":
            raise errors.InvalidInputError("--with-changelog goes with --operation expire",
                                           fix="use --operation expire-changelog for the changelog alone")
        if self.listing is not None and self.operation != "clean-orphans":
            raise errors.InvalidInputError("--listing is for clean-orphans", fix="drop --listing")
        if self.operation == "clean-orphans" and self.retention is not None:
            raise errors.InvalidInputError("retention is for expire and expire-changelog",
                                           fix="drop --retention")

    def to_args(self) -> list[str]:
        """The command line of ``python -m tablekeeper.spark`` for this request."""
        args = ["--operation", self.operation, "--warehouse", self.warehouse, "--table", self.table]
        if self.branch != paimon.MAIN:
            args += ["--branch", self.branch]
        for key, value in sorted(self.options.items()):
            args += ["--option", f"{key}={value}"]
        if self.dry_run:
            args.append("--dry-run")
        if self.older_than is not None:
            args += ["--older-than", self.older_than]
        if self.force:
            args.append("--force")
        if self.with_changelog:
            args.append("--with-changelog")
        valued: tuple[tuple[str, object], ...] = (
            ("--now", self.now_ms), ("--parallelism", self.parallelism), ("--run-name", self.run_name),
            ("--result", self.result), ("--listing", self.listing),
            ("--retention", None if self.retention is None
             else json.dumps(self.retention.to_dict(), sort_keys=True, separators=(",", ":"))))
        for flag, val in valued:
            if val is not None:
                args += [flag, str(val)]
        if self.batch_size is not None:
            args += ["--batch-size", str(self.batch_size)]
        if self.batches != 1:
            args += ["--batches", str(self.batches)]
        for key in self.env_options:
            args += ["--env-option", key]
        if self.trash_run is not None:
            args += ["--trash-run", json.dumps(dict(self.trash_run), sort_keys=True)]
        return args

    def storage_options(self) -> dict[str, str]:
        """The options to open storage with: ``options`` plus each ``env_options`` value found in
        this process's environment (the driver's; executors call :func:`env_option_values`)."""
        return {**self.options, **env_option_values(self.env_options)}

    def redacted_options(self) -> dict[str, str]:
        """Options safe to record (artifact, logs): secret values masked."""
        return {k: ("***" if is_secret_option(k) else v) for k, v in self.options.items()}


def env_option_values(keys: Sequence[str]) -> dict[str, str]:
    """``{key: value}`` for each option name in ``keys`` set in the environment (a Secret key
    mounted as an environment variable of the same name); absent ones are left to the store's
    default credential chain."""
    return {key: os.environ[key] for key in keys if key in os.environ}


_SECRET_WORDS = ("secret", "password", "token", "access-key", "access.key", "accesskey", "credential")


def is_secret_option(key: str) -> bool:
    """Whether an option carries a credential (never put into manifests or artifacts)."""
    low = key.lower()
    return any(word in low for word in _SECRET_WORDS) or storage.is_secret_option(key)


def argument_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tablekeeper.spark",
        description="Run tablekeeper maintenance distributed on Spark and write a JSON result artifact.")
    p.add_argument("--operation", required=True, choices=OPERATIONS)
    p.add_argument("--warehouse", required=True, metavar="URI", help="Warehouse URI (local path or s3://...).")
    p.add_argument("--table", required=True, metavar="DB.TABLE")
    p.add_argument("--branch", default=paimon.MAIN, help="Branch to expire (expire, expire-changelog).")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="Storage option, e.g. s3.endpoint=http://127.0.0.1:9000 (repeatable).")
    p.add_argument("--env-option", action="append", default=[], metavar="KEY",
                   help="Storage option read from the environment variable KEY (a mounted Secret key; repeatable).")
    p.add_argument("--dry-run", action="store_true", help="Plan and report only; delete nothing.")
    p.add_argument("--older-than", help="clean-orphans: an age ('2 d') or a time (ISO/epoch ms); default 1 day.")
    p.add_argument("--force", action="store_true", help="clean-orphans: allow thresholds under 1 hour ago.")
    p.add_argument("--listing", metavar="PATH",
                   help="clean-orphans: candidates from a storage inventory (S3 Inventory manifest.json or a "
                        "CSV/Parquet file list) instead of listing the store (docs/inventory.md).")
    p.add_argument("--now", type=int, help=argparse.SUPPRESS)
    p.add_argument("--trash-run", metavar="JSON",
                   help="Move what the job removes into this trash run of the table (as the CLI's "
                        "--keep-deleted opens it) instead of deleting it.")
    p.add_argument("--retention", metavar="JSON",
                   help="expire/expire-changelog: the retention to expire with, as Retention.to_dict() writes it "
                        "(default: the table's options).")
    p.add_argument("--with-changelog", action="store_true",
                   help="expire: then expire the decoupled changelog too (one artifact for both).")
    p.add_argument("--batches", type=int, default=1,
                   help="expire/expire-changelog: up to N batches while the previous one expired something.")
    p.add_argument("--parallelism", type=int, help="Partitions of every I/O stage (default: Spark's parallelism).")
    p.add_argument("--batch-size", type=int,
                   help=f"Keys per bulk delete (<= {values.DELETE_BATCH_MAX}; default: {values.DELETE_BATCH_MAX} on "
                        f"S3/OSS, {values.DELETE_BATCH_DEFAULT} elsewhere).")
    p.add_argument("--run-name", help="Name of the run (recorded in the artifact).")
    p.add_argument("--result", metavar="PATH", help="Where to write the JSON result (local path or s3://...).")
    p.add_argument("--master", help="Spark master when not started by spark-submit (default local[*]).")
    p.add_argument("--remote", metavar="sc://HOST:PORT",
                   help="Run on this Spark Connect server (default: $SPARK_REMOTE, else classic Spark); the "
                        "package is added to the session, the server's Python needs only the dependencies.")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="Extra Spark configuration.")
    return p


def _pairs(values: Sequence[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in values:
        if "=" not in pair:
            raise errors.InvalidInputError(f"{what} {pair!r} is not KEY=VALUE", fix="write e.g. s3.region=eu-west-1")
        key, value = pair.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def _retention(text: str | None) -> Retention | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise errors.InvalidInputError(f"--retention is not JSON: {e}", fix="pass Retention.to_dict() as JSON") from e
    if not isinstance(data, dict):
        raise errors.InvalidInputError("--retention is not a JSON object", fix="pass Retention.to_dict() as JSON")
    return Retention.from_dict(data)


def parse_args(argv: Sequence[str]) -> tuple[JobRequest, dict[str, Any]]:
    """(request, launcher settings {"master", "remote", "conf"}) from a command line."""
    ns = argument_parser().parse_args(list(argv))
    if ns.master and ns.remote:
        raise errors.InvalidInputError(f"--master {ns.master} and --remote {ns.remote} exclude each other",
                                       fix="give the master to the Connect server, or drop --remote")
    request = JobRequest(
        operation=ns.operation, warehouse=ns.warehouse, table=ns.table, branch=ns.branch,
        options=_pairs(ns.option, "--option"), dry_run=ns.dry_run, older_than=ns.older_than, force=ns.force,
        now_ms=ns.now, retention=_retention(ns.retention), parallelism=ns.parallelism, batch_size=ns.batch_size,
        run_name=ns.run_name, result=ns.result, with_changelog=ns.with_changelog, batches=ns.batches,
        env_options=tuple(ns.env_option), listing=ns.listing,
        trash_run=None if ns.trash_run is None else json.loads(ns.trash_run))
    return request, {"master": ns.master, "remote": ns.remote, "conf": _pairs(ns.conf, "--conf")}
