"""tablekeeper.core.reclaim.reach.forked_decode: manifests decoded by the forked helper are exactly what the
sequential reader returns (pypaimon- and Java-written manifests), a manifest the helper cannot read
is left to the sequential read (which raises as always), and an expiration plans the same with
and without the helper."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon import manifests
from tablekeeper.core.paimon.table import open_table, open_table_path
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.reclaim.reach import forked_decode
from tablekeeper.core.reclaim.reach.reachability import Reachability
from tablekeeper.core.storage import FileIO, join
from tests.support import paimon as tp

pytestmark = pytest.mark.skipif(not forked_decode.usable(FileIO.for_uri("/tmp")),
                                reason="the forked helper runs on Linux with two or more CPUs only")


def _manifest_names(manifest_dir: str) -> list[str]:
    return sorted(n for n in os.listdir(manifest_dir)
                  if n.startswith("manifest-") and not n.startswith("manifest-list-"))


def _decode_both_ways(file_io: FileIO, manifest_dir: str, names: list[str],
                      monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, list[manifests.FileRef]], int]:
    monkeypatch.setattr(forked_decode, "MIN_MANIFESTS_TO_FORK", 1)
    monkeypatch.setattr(forked_decode, "CLAIM_BATCH", 1)
    got: dict[str, list[manifests.FileRef]] = {}
    waited: list[bool] = []

    def decode_here(name: str) -> None:
        if not waited:  # on a loaded machine the helper may not get a CPU before this process is done:
            waited.append(True)  # give it half a second to claim manifests of its own
            time.sleep(0.5)
        got[name] = manifests.read_manifest_refs(file_io, join(manifest_dir, name))

    handed = forked_decode.decode_shared(file_io, manifest_dir, names, decode_here, got.__setitem__)
    return got, handed


@pytest.mark.parametrize("writer", ["pypaimon", "java"])
def test_the_helper_decodes_exactly_what_the_sequential_reader_does(tmp_path: Path, writer: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if writer == "java":
        table = open_table_path(str(tp.extract_java_fixture(tmp_path) / "default.db" / "test_pk_full_text_golden"))
    else:
        tp.build_history(str(tmp_path), commits=12)
        table = open_table(str(tmp_path), "db.orders")
    manifest_dir = table.shared_dir("manifest")
    names = _manifest_names(manifest_dir) * 20  # repeated: enough claims for both processes
    got, handed = _decode_both_ways(table.file_io, manifest_dir, names, monkeypatch)
    assert handed > 0, "the helper handed nothing back"
    assert set(got) == set(names)
    for name in set(names):
        expected = manifests.read_manifest_refs(table.file_io, join(manifest_dir, name))
        assert got[name] == expected
        assert all(type(r) is manifests.FileRef for r in got[name])


def test_a_manifest_the_helper_cannot_read_is_left_to_the_sequential_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tp.build_history(str(tmp_path), commits=8)
    table = open_table(str(tmp_path), "db.orders")
    manifest_dir = table.shared_dir("manifest")
    good = _manifest_names(manifest_dir)
    damaged = join(manifest_dir, "manifest-damaged-0")
    with open(damaged, "wb") as f:
        f.write(b"Obj\x01 not a manifest")
    names = [*good, "manifest-damaged-0", "manifest-missing-0"] * 10
    # the helper alone claims: this process's own decode is a no-op recording what it was given
    monkeypatch.setattr(forked_decode, "MIN_MANIFESTS_TO_FORK", 1)
    stored: dict[str, list[manifests.FileRef]] = {}
    forked_decode.decode_shared(table.file_io, manifest_dir, names, lambda _name: None, stored.__setitem__)
    assert "manifest-damaged-0" not in stored and "manifest-missing-0" not in stored
    with pytest.raises(errors.FormatError):
        manifests.read_manifest_refs(table.file_io, damaged)


def test_a_failing_helper_hands_back_nothing_and_the_caller_still_decodes_its_share(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tp.build_history(str(tmp_path), commits=6)
    table = open_table(str(tmp_path), "db.orders")
    manifest_dir = table.shared_dir("manifest")
    names = _manifest_names(manifest_dir) * 10

    def crash(*_args: object) -> bytes:
        os._exit(3)

    monkeypatch.setattr(forked_decode, "MIN_MANIFESTS_TO_FORK", 1)
    monkeypatch.setattr(forked_decode, "_helper", crash)
    decoded: list[str] = []
    handed = forked_decode.decode_shared(table.file_io, manifest_dir, names, decoded.append, lambda *_: None)
    assert handed == 0
    assert decoded, "the caller decoded nothing itself"


def test_an_expiration_plans_the_same_with_and_without_the_helper(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tp.build_history(str(tmp_path), commits=14, primary_key=False)
    table = open_table(str(tmp_path), "db.orders")
    config = planning.ExpireConfig(retain_min=2, retain_max=3, time_retained=timedelta(0), expire_limit=100)
    now_ms = int(time.time() * 1000)
    plans = {}
    shared: list[int] = []
    decode_shared = forked_decode.decode_shared

    def counting(*args: Any, **kwargs: Any) -> int:
        shared.append(len(args[2]))
        return decode_shared(*args, **kwargs)

    monkeypatch.setattr(forked_decode, "decode_shared", counting)
    for forked in (False, True):
        monkeypatch.setattr(forked_decode, "MIN_MANIFESTS_TO_FORK", 1 if forked else 10**9)
        plans[forked] = planning.plan_expire(table, config, now_ms, reach=Reachability(table))
    assert shared and shared[-1] > 1, "the expiration never offered its manifests to the helper"
    assert plans[True] == plans[False]
    assert any(step.files for step in plans[True].steps if hasattr(step, "files")), "nothing planned"


def test_meanwhile_runs_once_while_the_helper_decodes_and_not_without_a_helper(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tp.build_history(str(tmp_path), commits=6)
    table = open_table(str(tmp_path), "db.orders")
    manifest_dir = table.shared_dir("manifest")
    names = _manifest_names(manifest_dir) * 10
    ran: list[int] = []
    got: dict[str, list[manifests.FileRef]] = {}

    def decode_here(name: str) -> None:
        got[name] = manifests.read_manifest_refs(table.file_io, join(manifest_dir, name))

    monkeypatch.setattr(forked_decode, "MIN_MANIFESTS_TO_FORK", 10**9)  # no helper: not run
    forked_decode.decode_shared(table.file_io, manifest_dir, names, decode_here, got.__setitem__,
                              meanwhile=lambda: ran.append(1))
    assert ran == []
    monkeypatch.setattr(forked_decode, "MIN_MANIFESTS_TO_FORK", 1)
    forked_decode.decode_shared(table.file_io, manifest_dir, names, decode_here, got.__setitem__,
                              meanwhile=lambda: ran.append(1))
    assert ran == [1]
    assert set(got) == set(names)
