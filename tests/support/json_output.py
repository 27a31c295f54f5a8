"""``--output json`` checked against the files themselves: a run's deleted files and bytes per
kind are those of the files that went, sizes measured before the run."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import pytest

from tablekeeper.cli.main import main as cli_main

__all__ = ["cli_json", "listing", "kind_of", "bytes_match"]


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """The JSON document a CLI command prints with ``-o json`` (the command must succeed)."""
    capsys.readouterr()
    code = cli_main([*args, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    payload: dict[str, Any] = json.loads(out)
    return payload


def listing(wh: str) -> dict[str, int]:
    """Every file of the warehouse with its size (what a run's bytes are checked against)."""
    out: dict[str, int] = {}
    for dirpath, _dirs, files in os.walk(wh):
        for name in files:
            path = os.path.join(dirpath, name)
            out[path] = os.path.getsize(path)
    return out


_KIND_BY_DIR = {"manifest": "manifest", "index": "index", "statistics": "statistics", "snapshot": "snapshot",
                "changelog": "changelog-meta", "tag": "tag", "schema": "schema", "consumer": "consumer"}


def kind_of(path: str) -> str:
    """A deleted file's kind as tablekeeper reports it: by its directory, and in a bucket
    directory by its name (changelog files, index files kept beside data, data files)."""
    parent, name = path.rsplit("/", 2)[-2:]
    if parent.startswith("bucket-"):
        if name.startswith("changelog-"):
            return "changelog"
        return "index" if name.startswith("index-") else "data"
    return _KIND_BY_DIR.get(parent, "other")


def bytes_match(before: Mapping[str, int], wh: str, doc: Mapping[str, Any]) -> None:
    """The run's deleted files and bytes per kind are those of the files it removed, as
    measured before the run (and nothing is of unknown size)."""
    after = listing(wh)
    gone = {p for p in before if p not in after} | {p for p in doc.get("deleted", []) if p in before}
    files: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for path in gone:
        kind = kind_of(path)
        files[kind] = files.get(kind, 0) + 1
        sizes[kind] = sizes.get(kind, 0) + before[path]
    result = doc["result"]
    assert result is not None, doc
    assert not result["unsized"] and not doc["unsized"], doc
    assert result["deleted"] == files, (result["deleted"], files)
    assert result["deleted_bytes"] == sizes, (result["deleted_bytes"], sizes)


