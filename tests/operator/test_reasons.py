"""Every condition reason has one kind and one "what to do", in code
(``tablekeeper.operator.status.reasons``) and in docs/operator.md's table of reasons, and they
agree; the retry decision follows the kind (a transient reason retries and is never Stalled)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tablekeeper import operator as package
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


def _event_reasons() -> tuple[set[str], int]:
    """The reasons of every Event the operator's code posts (``outcome.event(type, reason, ...)``,
    ``Event(type, reason, ...)``, ``kopf.event(..., reason=...)``), read from its source: the
    literal ones by name, and how many sites post a failure's own reason (a variable)."""
    names: set[str] = set()
    dynamic = 0

    def reason_names(node: ast.expr) -> set[str] | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Reason":
            return {str(getattr(Reason, node.attr))}
        if isinstance(node, ast.IfExp):
            a, b = reason_names(node.body), reason_names(node.orelse)
            return None if a is None or b is None else a | b
        return None

    for path in Path(package.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            if not ((isinstance(node.func, ast.Attribute) and node.func.attr == "event")
                    or (isinstance(node.func, ast.Name) and node.func.id == "Event")):
                continue
            arg = next((k.value for k in node.keywords if k.arg == "reason"), None)
            if arg is None and len(node.args) >= 2:
                arg = node.args[1]
            if arg is None:
                continue
            found = reason_names(arg)
            if found is None:
                dynamic += 1
            else:
                names |= found
    return names, dynamic


def test_the_documented_events_are_the_posted_ones() -> None:
    """docs/operator.md's list of Events names exactly the reasons the code posts by name; the
    rest are posted with a failure's reason ("the failure reasons above")."""
    text = DOCS.read_text()
    paragraph = text[text.index("\nEvents: "):]
    paragraph = paragraph[:paragraph.index("Transient failures")]
    documented = set(re.findall(r"`([A-Za-z]+)`", paragraph))
    posted, dynamic = _event_reasons()
    assert "the failure reasons above" in paragraph and dynamic > 0
    assert posted <= documented, f"posted, not documented: {sorted(posted - documented)}"
    never = documented - posted - conditions.REASONS  # a reason is posted as a failure's
    assert not never, f"documented, never posted: {sorted(never)}"
