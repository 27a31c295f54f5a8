"""Names of runs, Spark applications, Jobs and executor pods: unique, short (<=
``safety.SPARK_NAME_MAX``) DNS-1123 labels (spark-operator issues #2509, #1566)."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from collections.abc import Mapping

from tablekeeper.core import errors, values
from tablekeeper.spark.job_request import OPERATIONS

__all__ = ["run_name", "check_name"]

_ACTION_CODES: Mapping[str, str] = {"expire": "exp", "expire-changelog": "ecl", "clean-orphans": "orp"}
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_ALPHABET = string.ascii_lowercase + string.digits


def run_name(table_identity: str, operation: str, *, suffix: str | None = None) -> str:
    """``tk-<table-hash8>-<action3>-<rand4>``, e.g. ``tk-3f9a1c2e-orp-x7k2`` (20 characters).

    Unique per call (never reuse a name: delete + re-create races with a terminating driver,
    spark-operator #1566) and far below ``SPARK_NAME_MAX`` (names over 63 characters break
    labels and services; Spark derives longer pod and service names from it)."""
    if operation not in _ACTION_CODES:
        raise errors.InvalidInputError(f"unknown operation {operation!r}", fix=f"use one of {', '.join(OPERATIONS)}")
    digest = hashlib.sha256(table_identity.encode("utf-8")).hexdigest()[:8]
    rand = suffix if suffix is not None else "".join(secrets.choice(_ALPHABET) for _ in range(4))
    name = f"tk-{digest}-{_ACTION_CODES[operation]}-{rand}"
    check_name(name)
    return name


def check_name(name: str) -> None:
    if len(name) > values.SPARK_NAME_MAX or not _DNS_LABEL.match(name):
        raise errors.InvalidInputError(
            f"{name!r} is not a DNS-1123 label of at most {values.SPARK_NAME_MAX} characters",
            fix="use run_name() to generate one")
