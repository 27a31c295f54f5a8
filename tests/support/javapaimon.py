"""Java Paimon as the judge (issue 13): a client for ``scripts/javapaimon/PaimonDriver.java``.

One long-lived JVM per Paimon version and test session (``JavaPaimon``), spoken to in JSON lines.
The driver calls Apache Paimon's own Java API (paimon-bundle), the classes Paimon's Spark and
Flink procedures call, so every read, commit, tag, branch, expiration and orphan cleanup here is
Java Paimon's. ``views`` reads every retained snapshot, tag and branch and the system tables in one
round trip, so a test compares the whole readable state before and after an operation.

Setup is ``scripts/javapaimon-setup`` (Maven into ~/.m2, classes into ~/.cache): tests call
``classpath_or_skip``, which fails under ``CI=true`` and skips elsewhere with a one-line reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "scripts" / "javapaimon-setup"
VERSIONS = ("1.4.2", "1.3.1")
SYSTEM_TABLES = ("snapshots", "tags", "branches", "consumers", "options")


class JavaPaimonError(RuntimeError):
    """Java Paimon refused or failed a request (the message is Java's)."""


def setup_classpath(version: str) -> str:
    """Run the setup script for ``version``; the classpath (raises CalledProcessError on failure)."""
    out = subprocess.run(["bash", str(SETUP), version], check=True, capture_output=True, text=True,
                         timeout=1800).stdout
    for line in out.splitlines():
        v, _, path = line.partition(" ")
        if v == version:
            return Path(path).read_text().strip()
    raise RuntimeError(f"javapaimon-setup printed no classpath for {version}: {out!r}")


def classpath_or_skip(version: str) -> str:
    """The classpath, or: CI=true -> test failure, elsewhere -> skip with one line."""
    try:
        return setup_classpath(version)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, RuntimeError) as e:
        detail = getattr(e, "stderr", "") or str(e)
        reason = f"Java Paimon {version} unavailable (scripts/javapaimon-setup failed: {str(detail).strip()[-200:]})"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


class JavaPaimon:
    """One JVM running the driver; ``call`` sends one request and returns Java's result."""

    def __init__(self, classpath: str, version: str) -> None:
        self.version = version
        self.proc = subprocess.Popen(
            ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx1g", "-cp", classpath, "PaimonDriver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        got = self.call("ping")
        if got != version:
            raise JavaPaimonError(f"driver reports Paimon {got}, expected {version}")

    def call(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise JavaPaimonError(f"the Java Paimon driver exited (code {self.proc.poll()})")
        answer = json.loads(line)
        if not answer["ok"]:
            raise JavaPaimonError(answer["error"])
        return answer["result"]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    # ------------------------------------------------------------------ conveniences
    def write(self, warehouse: str, table: str, rows: list[Any], *, overwrite: Mapping[str, str] | None = None,
              branch: str | None = None) -> None:
        args: dict[str, Any] = {"warehouse": warehouse, "table": _ident(table, branch), "rows": rows}
        if overwrite is not None:
            args["overwrite"] = dict(overwrite)
        self.call("write", **args)

    def read(self, warehouse: str, table: str, options: Mapping[str, str] | None = None,
             branch: str | None = None) -> list[list[str | None]]:
        args: dict[str, Any] = {"warehouse": warehouse, "table": _ident(table, branch)}
        if options:
            args["options"] = dict(options)
        rows: list[list[str | None]] = self.call("read", **args)["rows"]
        return rows

    def table_call(self, op: str, warehouse: str, table: str, on_branch: str | None = None, **args: Any) -> Any:
        """A procedure on ``table`` (of branch ``on_branch``); ``args`` are the procedure's."""
        return self.call(op, warehouse=warehouse, table=_ident(table, on_branch), **args)

    def views(self, warehouse: str, table: str) -> dict[str, Any]:
        """Every readable view of ``table`` as Java Paimon reads it: the latest state and every
        snapshot and tag of every branch (``VERSION AS OF``), plus the system tables of main.
        Keys: ``<branch>@latest``, ``<branch>@snapshot-<id>``, ``<branch>@tag-<name>``,
        ``$<system table>``. A view Java cannot read maps to ``{"error": ...}``."""
        keys: list[str] = []
        requests: list[dict[str, Any]] = []
        for branch in ["main", *branches_on_disk(warehouse, table)]:
            ident = _ident(table, None if branch == "main" else branch)
            root = branch_root(warehouse, table, branch)
            keys.append(f"{branch}@latest")
            requests.append({"warehouse": warehouse, "table": ident})
            for sid in ids(root / "snapshot", "snapshot-"):
                keys.append(f"{branch}@snapshot-{sid}")
                requests.append({"warehouse": warehouse, "table": ident, "options": {"scan.snapshot-id": str(sid)}})
            for tag in names(root / "tag", "tag-"):
                keys.append(f"{branch}@tag-{tag}")
                if branch == "main":
                    requests.append({"warehouse": warehouse, "table": ident, "options": {"scan.tag-name": tag}})
                else:  # Java's 'scan.tag-name' on a branch looks the name up in main's tags
                    requests.append({"warehouse": warehouse, "table": ident, "branch_tag": tag})
        for system in SYSTEM_TABLES:
            keys.append(f"${system}")
            requests.append({"warehouse": warehouse, "table": f"{table}${system}"})
        results = self.call("read_many", requests=requests)
        out: dict[str, Any] = {}
        for key, res in zip(keys, results, strict=True):
            out[key] = {"error": res["error"]} if "error" in res else res["rows"]
        return out


def _ident(table: str, branch: str | None) -> str:
    return f"{table}$branch_{branch}" if branch and branch != "main" else table


def table_root(warehouse: str, table: str) -> Path:
    db, name = table.split(".", 1)
    return Path(warehouse) / f"{db}.db" / name


def branch_root(warehouse: str, table: str, branch: str) -> Path:
    root = table_root(warehouse, table)
    return root if branch == "main" else root / "branch" / f"branch-{branch}"


def branches_on_disk(warehouse: str, table: str) -> list[str]:
    return names(table_root(warehouse, table) / "branch", "branch-")


def ids(directory: Path, prefix: str) -> list[int]:
    if not directory.is_dir():
        return []
    return sorted(int(p.name[len(prefix):]) for p in directory.iterdir()
                  if p.name.startswith(prefix) and p.name[len(prefix):].isdigit())


def names(directory: Path, prefix: str) -> list[str]:
    if not directory.is_dir():
        return []
    return sorted(p.name[len(prefix):] for p in directory.iterdir() if p.name.startswith(prefix))


def data_views(views: Mapping[str, Any]) -> dict[str, Any]:
    """The table views without the system tables."""
    return {k: v for k, v in views.items() if not k.startswith("$")}


def system_rows(views: Mapping[str, Any], system: str) -> list[list[str | None]]:
    value = views[f"${system}"]
    assert isinstance(value, dict) and "rows" in value, f"Java could not read ${system}: {value}"
    rows: list[list[str | None]] = value["rows"]
    return rows


def all_files(warehouse: str) -> set[str]:
    return {str(p.relative_to(warehouse)) for p in Path(warehouse).rglob("*") if p.is_file()}


def now_ms() -> int:
    return int(time.time() * 1000)
