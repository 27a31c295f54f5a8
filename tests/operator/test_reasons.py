"""Every condition reason has one kind and one "what to do", in code
(``tablekeeper.operator.status.reasons``) and in docs/operator.md's table of reasons, and they
agree; the retry decision follows the kind (a transient reason retries and is never Stalled)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tablekeeper.core import errors as core_errors
from tablekeeper.core.policy.effective import result
from tablekeeper.operator.status import conditions, errors, reasons
from tablekeeper.operator.status.conditions import Reason

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operator.md"
_ROW = re.compile(r"^\| `(?P<reason>[A-Za-z]+)` \| (?P<kind>\w+) \| (?P<what>.+) \|$")


def docs_table() -> dict[str, tuple[str, str]]:
    text = DOCS.read_text()
    section = text[text.index("### Reasons"):]
    section = section[:section.index("\n#")]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match:
            assert match["reason"] not in rows, f"{match['reason']} is listed twice"
            rows[match["reason"]] = (match["kind"], match["what"])
    return rows


def test_every_reason_has_a_kind_and_the_docs_table_equals_the_code() -> None:
    assert set(reasons.GUIDE) == conditions.REASONS
    assert docs_table() == {r: (g.kind, g.what_to_do) for r, g in reasons.GUIDE.items()}


def test_dependency_reasons_are_transient() -> None:
    for reason in (Reason.CATALOG_NOT_READY, Reason.TABLE_NOT_READY, Reason.TAG_NOT_FOUND, Reason.CATALOG_NOT_FOUND,
                   Reason.CATALOG_UNREACHABLE, Reason.TABLE_NOT_FOUND, Reason.SNAPSHOT_NOT_FOUND):
        assert reasons.is_transient(reason), reason
    for reason in (Reason.INVALID_SPEC, Reason.SNAPSHOT_EXPIRED, Reason.ALREADY_EXISTS_DIFFERENT_SNAPSHOT,
                   Reason.RESOURCE_CONFLICT):
        assert reason in reasons.PERMANENT, reason


@pytest.mark.parametrize("error", [
    core_errors.TableNotFoundError("no table"), core_errors.SnapshotNotFoundError("no snapshot"),
    core_errors.TagNotFoundError("no tag"), core_errors.TagConflictError("moved"),
    core_errors.InvalidInputError("bad"), result.PolicyNotFoundError("gold"),
    core_errors.ProtectedObjectError("fork point"), core_errors.StorageError("down"),
])
def test_retry_decision_follows_the_kind(error: Exception) -> None:
    failure = errors.classify(error)
    assert failure.temporary == reasons.is_transient(failure.reason)
