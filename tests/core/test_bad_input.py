"""Bad input never changes storage: every case asserts the typed error class from
tablekeeper.core.errors AND that ``dir_listing(warehouse)`` (names, sizes, mtimes) is unchanged.

The same matrix runs against a pypaimon-written table and against the Java-written fixture
(paimon-semantics.md §11.1, ``default.test_pk_full_text_golden``), each with the same tags and
branches added on top: tags ``ta`` (older) and ``tb``, branch ``b`` (from ``ta`` plus one own
commit), branch ``div`` (diverged: its fork snapshot and tag copy removed), empty branch ``e``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tablekeeper.core import errors
from tablekeeper.core.paimon.table import Table, open_table
from tablekeeper.core.refs import branches, tags
from tablekeeper.core.values import durations
from tests.core.helpers import copy_warehouse, table_root
from tests.support.paimon import (
    branch_table,
    build_history,
    catalog,
    dir_listing,
    extract_java_fixture,
    read_rows,
    snapshot_views,
    write,
)

JAVA_IDENT = "default.test_pk_full_text_golden"
PY_IDENT = "db.orders"


@dataclass(frozen=True)
class Ctx:
    wh: str
    ident: str
    table: Table

    @property
    def db(self) -> str:
        return self.ident.split(".")[0]


def _decorate(wh: str, ident: str, older: int, newer: int, branch_row: dict[str, Any]) -> None:
    """Tags ta@older, tb@newer; branch b from ta + one commit; diverged div; empty e."""
    t = open_table(wh, ident)
    tags.create_tag(t, "ta", snapshot_id=older)
    tags.create_tag(t, "tb", snapshot_id=newer)
    for name in ("b", "div"):
        branches.create_branch(t, name, from_tag="ta")
        write(branch_table(catalog(wh), ident, name), [branch_row])
    div = table_root(wh, ident) / "branch" / "branch-div"
    (div / "snapshot" / f"snapshot-{older}").unlink()
    (div / "tag" / "tag-ta").unlink()
    branches.create_branch(t, "e")


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, str]]:
    py = str(tmp_path_factory.mktemp("py") / "wh")
    build_history(py, PY_IDENT, commits=4)
    _decorate(py, PY_IDENT, 2, 3, {"dt": "2026-01-09", "id": 900, "amount": 9.0})
    java = tmp_path_factory.mktemp("java") / "wh"
    extract_java_fixture(java)
    _decorate(str(java), JAVA_IDENT, 7, 8, {"id": 900, "content": "from a pypaimon branch commit"})
    return {"pypaimon": (py, PY_IDENT), "java": (str(java), JAVA_IDENT)}


@pytest.fixture(params=["pypaimon", "java"])
def ctx(request: pytest.FixtureRequest, templates: dict[str, tuple[str, str]], tmp_path: Path) -> Ctx:
    src, ident = templates[request.param]
    wh = copy_warehouse(src, tmp_path / "wh")
    return Ctx(wh, ident, open_table(wh, ident))


def _latest(c: Ctx) -> int:
    latest = c.table.latest_snapshot_id()
    assert latest is not None
    return latest


Action = Callable[[Ctx], Any]

CASES: list[Any] = [
    # branch names
    *[pytest.param(lambda c, n=n: branches.create_branch(c.table, n, from_tag="ta"), errors.InvalidNameError,
                   id=f"branch-name-{n!r}") for n in ("a.b", "a/b", "..", "", "  ", "main", "123")],
    pytest.param(lambda c: branches.create_branch(c.table, "x,y"), errors.InvalidNameError, id="branch-name-comma"),
    pytest.param(lambda c: branches.rename_branch(c.table, "b", "a/b"), errors.InvalidNameError,
                 id="rename-branch-to-bad-name"),
    pytest.param(lambda c: branches.rename_branch(c.table, "main", "x"), errors.InvalidNameError,
                 id="rename-main"),
    pytest.param(lambda c: branches.drop_branch(c.table, "main"), errors.InvalidNameError, id="drop-main"),
    pytest.param(lambda c: branches.fast_forward(c.table, "main"), errors.InvalidNameError, id="fast-forward-main"),
    # tag names
    *[pytest.param(lambda c, n=n: tags.create_tag(c.table, n), errors.InvalidNameError, id=f"tag-name-{n!r}")
      for n in ("a/b", "..", "", "42", "x,y")],
    pytest.param(lambda c: tags.rename_tag(c.table, "ta", "42"), errors.InvalidNameError, id="rename-tag-to-digits"),
    # unknown table
    pytest.param(lambda c: open_table(c.wh, f"{c.db}.no_such_table"), errors.TableNotFoundError,
                 id="unknown-table"),
    pytest.param(lambda c: open_table(c.wh, "nodb_no_dot"), errors.InvalidInputError, id="bad-identifier"),
    pytest.param(lambda c: open_table(c.wh, c.ident, branch="nope"), errors.BranchNotFoundError,
                 id="open-unknown-branch"),
    # unknown snapshot
    pytest.param(lambda c: tags.create_tag(c.table, "x", snapshot_id=99), errors.SnapshotNotFoundError,
                 id="tag-unknown-snapshot"),
    pytest.param(lambda c: tags.create_tag(c.table, "x", snapshot_id=0), errors.InvalidInputError,
                 id="tag-snapshot-zero"),
    pytest.param(lambda c: branches.create_branch(c.table, "nb", from_snapshot=99), errors.SnapshotNotFoundError,
                 id="branch-from-unknown-snapshot"),
    pytest.param(lambda c: tags.replace_tag(c.table, "tb", snapshot_id=99), errors.SnapshotNotFoundError,
                 id="replace-to-unknown-snapshot"),
    pytest.param(lambda c: tags.create_tag(c.table.on_branch("e"), "x"), errors.SnapshotNotFoundError,
                 id="tag-on-empty-branch"),
    # unknown tag
    pytest.param(lambda c: tags.plan_delete_tag(c.table, "nope"), errors.TagNotFoundError, id="delete-unknown-tag"),
    pytest.param(lambda c: tags.rename_tag(c.table, "nope", "x"), errors.TagNotFoundError, id="rename-unknown-tag"),
    pytest.param(lambda c: tags.replace_tag(c.table, "nope"), errors.TagNotFoundError, id="replace-unknown-tag"),
    pytest.param(lambda c: branches.create_branch(c.table, "nb", from_tag="nope"), errors.TagNotFoundError,
                 id="branch-from-unknown-tag"),
    # unknown branch
    pytest.param(lambda c: branches.drop_branch(c.table, "nope"), errors.BranchNotFoundError,
                 id="drop-unknown-branch"),
    pytest.param(lambda c: branches.fast_forward(c.table, "nope"), errors.BranchNotFoundError,
                 id="fast-forward-unknown-branch"),
    pytest.param(lambda c: branches.rename_branch(c.table, "nope", "x"), errors.BranchNotFoundError,
                 id="rename-unknown-branch"),
    pytest.param(lambda c: branches.replace_main(c.table, "nope"), errors.BranchNotFoundError,
                 id="replace-main-unknown-branch"),
    # durations
    *[pytest.param(lambda c, s=s: durations.parse_duration(s), errors.InvalidDurationError, id=f"duration-{s!r}")
      for s in ("1 week", "abc", "", "-5 min")],
    pytest.param(lambda c: tags.create_tag(c.table, "x", time_retained=timedelta(seconds=-1)),
                 errors.InvalidDurationError, id="negative-time-retained"),
    # conflicts
    pytest.param(lambda c: tags.create_tag(c.table, "ta"), errors.TagConflictError, id="tag-conflict-latest"),
    pytest.param(lambda c: tags.create_tag(c.table, "ta", snapshot_id=_latest(c)), errors.TagConflictError,
                 id="tag-conflict-snapshot"),
    pytest.param(lambda c: branches.fast_forward(c.table, "div"), errors.DivergedBranchError,
                 id="fast-forward-diverged"),
    pytest.param(lambda c: branches.fast_forward(c.table, "e"), errors.InvalidInputError,
                 id="fast-forward-empty-branch"),
    pytest.param(lambda c: branches.create_branch(c.table, "b", from_tag="tb"), errors.AlreadyExistsError,
                 id="branch-exists-other-tag"),
    pytest.param(lambda c: branches.create_branch(c.table, "b"), errors.AlreadyExistsError,
                 id="branch-exists-empty"),
    pytest.param(lambda c: branches.create_branch(c.table, "b", from_snapshot=_latest(c)),
                 errors.AlreadyExistsError, id="branch-exists-from-snapshot"),
    pytest.param(lambda c: branches.create_branch(c.table, "b", from_tag="ta"), errors.AlreadyExistsError,
                 id="branch-exists-same-tag-moved-on"),
    pytest.param(lambda c: branches.rename_branch(c.table, "b", "e"), errors.AlreadyExistsError,
                 id="rename-branch-onto-existing"),
    pytest.param(lambda c: branches.replace_main(c.table, "b", backup="div"), errors.AlreadyExistsError,
                 id="replace-main-backup-exists"),
    pytest.param(lambda c: tags.rename_tag(c.table, "ta", "tb"), errors.AlreadyExistsError,
                 id="rename-tag-onto-existing"),
    pytest.param(lambda c: tags.plan_delete_tag(c.table, "ta"), errors.ProtectedObjectError,
                 id="delete-fork-tag"),
    pytest.param(lambda c: tags.replace_tag(c.table, "ta"), errors.ProtectedObjectError, id="replace-fork-tag"),
    pytest.param(lambda c: tags.rename_tag(c.table, "ta", "tz"), errors.ProtectedObjectError, id="rename-fork-tag"),
    # both snapshot and timestamp
    pytest.param(lambda c: tags.create_tag(c.table, "x", snapshot_id=1, timestamp_ms=1), errors.InvalidInputError,
                 id="tag-snapshot-and-timestamp"),
    pytest.param(lambda c: branches.create_branch(c.table, "nb", from_tag="ta", from_snapshot=1),
                 errors.InvalidInputError, id="branch-tag-and-snapshot"),
]


@pytest.mark.parametrize(("action", "error"), CASES)
def test_bad_input_raises_typed_error_and_changes_nothing(ctx: Ctx, action: Action,
                                                          error: type[errors.TablekeeperError]) -> None:
    before = dir_listing(ctx.wh)
    with pytest.raises(error) as info:
        action(ctx)
    assert isinstance(info.value, errors.TablekeeperError)
    assert info.value.fix  # every error says what to do
    assert dir_listing(ctx.wh) == before


def test_matrix_is_large_enough() -> None:
    assert len(CASES) >= 25


def test_java_fixture_tag_and_branch_read_as_before(tmp_path: Path) -> None:
    """Positive path on the Java-written table: tag + branch from it, read through pypaimon."""
    wh = str(extract_java_fixture(tmp_path))
    t = open_table(wh, JAVA_IDENT)
    latest = t.latest_snapshot_id()
    assert latest is not None
    before = snapshot_views(wh, JAVA_IDENT)
    assert tags.create_tag(t, "golden").snapshot_id == latest
    branches.create_branch(t, "gb", from_tag="golden")
    after = snapshot_views(wh, JAVA_IDENT)
    assert {k: v for k, v in after.items() if k.startswith("main@") and k != "main@tag-golden"} == before
    assert after["main@tag-golden"] == before["main@latest"]
    assert after["gb@latest"] == after[f"gb@snapshot-{latest}"] == after["gb@tag-golden"] == before["main@latest"]
    assert read_rows(branch_table(catalog(wh), JAVA_IDENT, "gb")) == before["main@latest"]
    # P7: the Java golden snapshot and schema are copied byte for byte (Jackson layout kept)
    bdir = table_root(wh, JAVA_IDENT) / "branch" / "branch-gb"
    java_snapshot = Path(t.snapshot_path(latest)).read_bytes()
    assert (bdir / "snapshot" / f"snapshot-{latest}").read_bytes() == java_snapshot
    assert b'"id" : ' in java_snapshot  # really Java's pretty printer
    assert (bdir / "schema" / "schema-0").read_bytes() == Path(t.schema_path(0)).read_bytes()
    assert (bdir / "tag" / "tag-golden").read_bytes() == Path(t.tag_path("golden")).read_bytes()
    rows = {r.branch_name: r for r in branches.list_branches(t)}
    assert (rows["gb"].from_tag, rows["gb"].fork_snapshot_id) == ("golden", latest)
