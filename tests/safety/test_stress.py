"""Stress beside a live writer (issue #12), locally and on S3 (moto), bounded in time.

A pypaimon writer thread commits appends, partition overwrites and tags (its own model of the
data: what the latest snapshot and each tag must read) while this thread loops over expire
(unpublish/verify/delete), changelog expiration, orphan cleanup with the default 1-day threshold
(every file of the starting table is 3 days old, so only references protect it), tag deletion
and branch create/drop, each under the table lease. Afterwards every retained snapshot, tag and
branch reads through pypaimon, no needed file is missing, and the latest snapshot and every tag
read exactly what the writer's model says."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import commit, planning, retention
from tablekeeper.core.reclaim.orphans import planning as orphans
from tablekeeper.core.refs import branches, tag_deletion
from tablekeeper.core.safety.concurrency import lease
from tests.maintenance.helpers import (
    DAY_MS,
    IDENT,
    append_table,
    backdate_tree,
    handle,
    missing_required,
    overwrite,
    read_rows,
    reload,
    rows,
    table_root,
    views,
    write,
)

#: Seconds the writer commits for, per backend. The maintainer loop runs meanwhile.
WRITER_SECONDS = {"local": 12.0, "s3": 8.0}
EXPIRE = planning.ExpireConfig(retain_min=3, time_retained=timedelta(0), expire_limit=1000)


def _key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(r.items()))


def _expected(model: Mapping[int, dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((_key(r) for r in model.values()), key=repr)


class Writer(threading.Thread):
    """Commits until stopped; ``model`` is what the latest snapshot holds, ``tagged`` what each
    of its tags holds (tags the maintainer deleted are dropped from it by the maintainer)."""

    def __init__(self, wh: str, options: Mapping[str, str] | None) -> None:
        super().__init__(daemon=True)
        self.wh, self.options = wh, options
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.model: dict[int, dict[str, Any]] = {}
        self.tagged: dict[str, dict[int, dict[str, Any]]] = {}
        self.error: BaseException | None = None
        self.commits = 0

    def seed(self) -> None:
        t = reload(self.wh, catalog_options=self.options)
        for dt, start in (("a", 0), ("b", 100), ("a", 200)):
            batch = rows(dt, start, 3)
            write(t, batch)
            self.model.update({r["id"]: r for r in batch})
        t.create_tag("w-0")
        self.tagged["w-0"] = dict(self.model)

    def run(self) -> None:
        try:
            t = reload(self.wh, catalog_options=self.options)
            i = 1
            while not self.stop.is_set():
                start = 1000 + 10 * i
                if i % 4 == 3:  # overwrite partition a
                    batch = rows("a", start, 2)
                    overwrite(t, batch, {"dt": "a"})
                    with self.lock:
                        self.model = {k: v for k, v in self.model.items() if v["dt"] != "a"}
                        self.model.update({r["id"]: r for r in batch})
                else:
                    batch = rows("b" if i % 2 else "a", start, 2)
                    write(t, batch)
                    with self.lock:
                        self.model.update({r["id"]: r for r in batch})
                self.commits += 1
                if i % 5 == 0:
                    t.create_tag(f"w-{i}")
                    with self.lock:
                        self.tagged[f"w-{i}"] = dict(self.model)
                i += 1
                time.sleep(0.05)
        except BaseException as e:  # reported by the test
            self.error = e


def _maintain_once(wh: str, options: Mapping[str, str] | None, writer: Writer, n: int) -> None:
    t = handle(wh, options=options)
    now = int(time.time() * 1000)
    with lease.held(t.file_io, t.root, "stress"):
        commit.run_expire(t, EXPIRE, now)
        cconfig = planning.changelog_config(retention.from_options(t.options()), t.options())
        commit.run_expire_changelog(t, cconfig, now)
        plan = orphans.plan_orphan_clean(t, orphans.OrphanConfig(now - DAY_MS, processes=1))
        result = execution.execute(plan, t.file_io)
        assert not result.failed, result.failed
        with writer.lock:
            names = sorted(writer.tagged, key=lambda s: int(s.split("-")[1]))
        if len(names) > 3:
            tag_deletion.delete_tag(t, names[0])
            with writer.lock:
                writer.tagged.pop(names[0])
        if "br" in t.branch_names():
            branches.drop_branch(t, "br")
        elif names:
            try:
                branches.create_branch(t, "br", from_tag=names[-1])
            except Exception as e:  # the tag may be deleted right now: not a safety problem
                assert "does not exist" in str(e) or "not found" in str(e).lower(), e


def run_beside_writer(writer: Writer, seconds: float, maintain: Callable[[int], object]) -> tuple[int, list[str]]:
    """Start ``writer`` and call ``maintain(round)`` until ``seconds`` passed and, on a loaded
    machine, on until the writer made 5 commits and one round ended (bounded at 10x), so the
    test judges interleavings rather than the load. Returns the rounds done and the refusals (a
    round may fail closed, e.g. inputs kept changing; it must never lose a file)."""
    writer.start()
    started = time.monotonic()
    deadline, hard_deadline = started + seconds, started + 10 * seconds
    rounds = 0
    refused: list[str] = []
    try:
        while writer.error is None and time.monotonic() < hard_deadline and (
                time.monotonic() < deadline or writer.commits < 5 or rounds < 1):
            try:
                maintain(rounds)
                rounds += 1
            except errors.TablekeeperError as e:
                assert e.fix and not isinstance(e, errors.TableLockedError), e
                refused.append(str(e))
    finally:
        writer.stop.set()
        writer.join(timeout=60)
    return rounds, refused


def _stress(wh: str, options: Mapping[str, str] | None, backdate: Any, seconds: float) -> None:
    append_table(wh, catalog_options=options)
    writer = Writer(wh, options)
    writer.seed()
    backdate()
    rounds, refused = run_beside_writer(writer, seconds, lambda n: _maintain_once(wh, options, writer, n))
    assert writer.error is None, repr(writer.error)
    _maintain_once(wh, options, writer, rounds)  # once more on the final state
    assert rounds >= 1 and writer.commits >= 5, (rounds, writer.commits, refused)
    assert not missing_required(wh, IDENT, options)
    views(wh, IDENT, options)  # every snapshot, tag and branch head reads
    latest = reload(wh, catalog_options=options)
    assert read_rows(latest) == _expected(writer.model)
    for name, model in writer.tagged.items():
        assert read_rows(latest, {"scan.tag-name": name}) == _expected(model), name
    if "br" in handle(wh, options=options).branch_names():
        assert read_rows(reload(wh, branch="br", catalog_options=options))  # readable, non-empty


def test_stress_local(tmp_path: Any) -> None:
    wh = str(tmp_path / "wh")
    _stress(wh, None, lambda: backdate_tree(table_root(wh), 3 * 86400), WRITER_SECONDS["local"])


@pytest.mark.s3
def test_stress_s3(s3: Any, s3_bucket: str, s3_warehouse: str, s3_options: dict[str, str]) -> None:
    from tests.support.s3 import backdate

    def old() -> None:
        for key in s3.find(f"{s3_bucket}/"):
            backdate(s3_bucket, key.split("/", 1)[1], timedelta(days=3))

    _stress(s3_warehouse, s3_options, old, WRITER_SECONDS["s3"])
