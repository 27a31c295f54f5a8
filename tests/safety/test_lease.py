"""The table maintenance lease (core/safety/concurrency/lease.py, issue #12): one tablekeeper maintainer per table.

Local files and S3 (moto): exactly one of several racing acquirers wins; a holder blocks others
(exit 2 naming the holder and its expiry from the CLI, ``--wait`` waits, ``apply -f`` and the
operator report ``TableLocked``); an expired or dead holder is taken over; a lost lease stops a
run at its next phase boundary; a finished run leaves nothing behind."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tablekeeper.cli.main import main
from tablekeeper.core import errors
from tablekeeper.core.plans import execution
from tablekeeper.core.reclaim.expire import planning
from tablekeeper.core.safety.concurrency import lease, seams
from tablekeeper.core.storage import FileIO
from tablekeeper.operator.status.conditions import Reason
from tablekeeper.operator.status.errors import classify
from tests.maintenance.helpers import build_mixed, handle, table_root, views

NOW = 4_102_444_800_000


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[FileIO, str]]:
    """(FileIO, a table root) on the local disk or on moto S3."""
    if request.param == "local":
        yield FileIO.for_uri(str(tmp_path)), str(tmp_path / "db.db" / "t")
        return
    request.getfixturevalue("s3_bucket")
    options = request.getfixturevalue("s3_options")
    yield FileIO.for_uri("s3://lake/wh", options), "s3://lake/wh/db.db/t"


def test_one_of_many_racing_acquirers_wins(store: tuple[FileIO, str]) -> None:
    io, root = store
    won: list[lease.Lease] = []
    refused: list[errors.TableLockedError] = []
    barrier = threading.Barrier(6)

    def contend() -> None:
        barrier.wait()
        try:
            won.append(lease.acquire(io, root, "race"))
        except errors.TableLockedError as e:
            refused.append(e)

    threads = [threading.Thread(target=contend) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(refused) == 5
    assert all(won[0].record.owner in str(e) for e in refused)
    assert lease.holder(io, root) == won[0].record
    won[0].release()
    assert lease.holder(io, root) is None
    again = lease.acquire(io, root, "next")  # free at once after a release
    again.release()


def test_expired_lease_is_taken_over_and_the_old_holder_learns_it(store: tuple[FileIO, str]) -> None:
    io, root = store
    first = lease.acquire(io, root, "slow", ttl=timedelta(seconds=30))
    first._stop.set()  # a holder that stopped renewing (hung, partitioned)
    with pytest.raises(errors.TableLockedError, match="slow"):
        lease.acquire(io, root, "second")
    clock = [time.time() + 60]  # a contender whose clock is past the expiry
    second = lease.acquire(io, root, "second", clock=lambda: clock[0])
    try:
        assert lease.holder(io, root) == second.record
        assert not first.renew() and "took it over" in (first.lost or "")
        with pytest.raises(errors.TableLockedError, match="lost"):
            first.check()
        first.release()  # does not delete the new holder's record
        assert lease.holder(io, root) == second.record
    finally:
        second._stop.set()
        second.release()


def test_a_dead_holder_on_this_host_does_not_block(tmp_path: Path) -> None:
    io, root = FileIO.for_uri(str(tmp_path)), str(tmp_path / "t")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child takes the lease and dies without releasing it
        lease.acquire(io, root, "doomed")
        os._exit(0)
    os.waitpid(pid, 0)
    assert lease.holder(io, root) is not None
    lease.acquire(io, root, "rerun").release()


def test_renewal_keeps_a_short_lease_alive(tmp_path: Path) -> None:
    io, root = FileIO.for_uri(str(tmp_path)), str(tmp_path / "t")
    held = lease.acquire(io, root, "long run", ttl=timedelta(seconds=0.6))
    try:
        first_expiry = held.record.expires_ms
        time.sleep(1.5)
        assert held.lost is None and held.record.expires_ms > first_expiry
        with pytest.raises(errors.TableLockedError):
            lease.acquire(io, root, "other", ttl=timedelta(seconds=0.6))
    finally:
        held.release()


def test_a_lost_lease_stops_the_executor_at_the_next_phase(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    table = handle(wh)
    plan = planning.plan_expire(table, planning.ExpireConfig(retain_min=2, time_retained=timedelta(0)), NOW)
    with lease.held(table.file_io, table.root, "expire") as mine:
        mine._lost = "simulated"
        with pytest.raises(errors.TableLockedError, match="lost"):
            execution.execute(plan, table.file_io)
    assert handle(wh).snapshot_ids() == list(range(1, 8))  # stopped before the first stage


def test_cli_exits_2_naming_the_holder_then_waits_with_wait(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    table = handle(wh)
    before = views(wh)
    other = lease.acquire(table.file_io, table.root, "operator expire")
    try:
        code = main(["tag", "delete", "db.orders", "t3", "--force", "-w", wh])
        err = capsys.readouterr().err
        assert code == 2 and "operator expire" in err and "expires" in err and "--wait" in err
        assert handle(wh).tag_names() == ["t3"]
        code = main(["tag", "create", "db.orders", "x", "-w", wh, "--dry-run"])  # dry runs need no lease
        assert code == 0
        threading.Timer(1.0, other.release).start()
        code = main(["tag", "create", "db.orders", "x", "-w", wh, "--wait", "30 s"])
        assert code == 0
    finally:
        other.release()
    assert handle(wh).tag_names() == ["t3", "x"]
    assert not Path(table_root(wh), lease.LEASE_DIR).exists()  # nothing left behind
    after = views(wh)
    assert {k: v for k, v in after.items() if k in before} == before


def test_reentrant_in_one_thread_exclusive_across_threads(tmp_path: Path) -> None:
    io, root = FileIO.for_uri(str(tmp_path)), str(tmp_path / "t")
    with lease.held(io, root, "outer") as outer, lease.held(io, root, "inner") as inner:
        assert inner is outer
        failure: list[BaseException] = []

        def other() -> None:
            try:
                with lease.held(io, root, "other thread"):
                    pass
            except errors.TableLockedError as e:
                failure.append(e)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert len(failure) == 1
    assert lease.holder(io, root) is None


def test_operator_reports_table_locked() -> None:
    failure = classify(errors.TableLockedError("x is being maintained by y", fix="wait"))
    assert failure.reason == Reason.TABLE_LOCKED and failure.temporary


def test_seam_guards_are_per_thread() -> None:
    calls: list[str] = []
    with seams.guarded(calls.append):
        t = threading.Thread(target=seams.point, args=("elsewhere",))
        t.start()
        t.join()
        seams.point("here")
    assert calls == ["here"]


def test_force_below_one_hour_says_how_recent_the_latest_commit_is(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    wh = str(tmp_path / "wh")
    build_mixed(wh)
    code = main(["clean-orphans", "db.orders", "-w", wh, "--older-than", "10 min", "--dry-run"])
    assert code == 2 and "--force" in capsys.readouterr().err
    code = main(["clean-orphans", "db.orders", "-w", wh, "--older-than", "10 min", "--force", "--dry-run"])
    err = capsys.readouterr().err
    assert code == 0
    assert "the latest commit to db.orders was" in err and "can be lost" in err
    code = main(["clean-orphans", "db.orders", "-w", wh, "--older-than", "2 h", "--dry-run"])
    assert code == 0 and "warning" not in capsys.readouterr().err


def test_apply_on_a_locked_table_fails_its_actions_naming_the_holder(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from tests.reconcile.test_gitops_table_options import manifests
    from tests.support import paimon as P

    wh = tmp_path / "wh"
    P.build_history(str(wh), commits=3)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "table.yaml").write_text(manifests(wh, "TableOptions"))
    table = handle(str(wh), "db.orders")
    schemas = table.schema_ids()
    other = lease.acquire(table.file_io, table.root, "operator tag create")
    try:
        assert main(["apply", "-f", str(tmp_path / "m"), "-o", "json"]) != 0
        out = capsys.readouterr().out
        assert "operator tag create" in out and "being maintained" in out
        assert handle(str(wh), "db.orders").schema_ids() == schemas  # nothing applied
    finally:
        other.release()
    assert main(["apply", "-f", str(tmp_path / "m")]) == 0
    assert len(handle(str(wh), "db.orders").schema_ids()) == len(schemas) + 1
