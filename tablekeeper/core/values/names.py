"""Validation of tag and branch names. Stricter than Paimon where Paimon's leniency bites
(paimon-semantics.md §4 and §9.10): path separators, '..', commas and all-digit names."""

from __future__ import annotations

from tablekeeper.core import errors

__all__ = ["validate_tag_name", "validate_branch_name", "MAIN_BRANCH"]

MAIN_BRANCH = "main"
_FORBIDDEN_CHARS = ("/", "\\", "\0")


def _common(kind: str, name: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise errors.InvalidNameError(f"{kind} name must not be blank", fix=f"give the {kind} a name")
    if name != name.strip():
        raise errors.InvalidNameError(
            f"{kind} name {name!r} has leading or trailing white space", fix="remove the spaces"
        )
    for char in _FORBIDDEN_CHARS:
        if char in name:
            raise errors.InvalidNameError(
                f"{kind} name {name!r} contains a path separator {char!r}",
                fix="use letters, digits, '-', '_' (no '/' or '\\')",
            )
    if name in (".", "..") or ".." in name:
        raise errors.InvalidNameError(f"{kind} name {name!r} contains '..'", fix="remove '..'")
    if any(ord(c) < 32 for c in name):
        raise errors.InvalidNameError(f"{kind} name {name!r} contains control characters",
                                      fix="use printable characters")
    if name.isdigit():
        raise errors.InvalidNameError(
            f"{kind} name {name!r} is all digits; it would shadow snapshot ids in time travel",
            fix="add a letter, e.g. 'v" + name + "'",
        )


def validate_tag_name(name: str) -> str:
    """Reject blank names, path separators, '..', ',' (undeletable by Paimon procedures) and
    all-digit names (they shadow snapshot ids in ``scan.version``)."""
    _common("tag", name)
    if "," in name:
        raise errors.InvalidNameError(
            f"tag name {name!r} contains ','; Paimon procedures split tag lists on commas",
            fix="use '-' or '_' instead of ','",
        )
    return name


def validate_branch_name(name: str) -> str:
    """Reject 'main', blank, all-digit names (as Paimon), plus '.', ',' and path separators."""
    _common("branch", name)
    if name == MAIN_BRANCH:
        raise errors.InvalidNameError("a branch cannot be named 'main'", fix="choose another name")
    if "." in name:
        raise errors.InvalidNameError(
            f"branch name {name!r} contains '.'; Paimon identifiers 'db.table$branch_x' would break",
            fix="use '-' or '_' instead of '.'",
        )
    if "," in name or "$" in name:
        raise errors.InvalidNameError(
            f"branch name {name!r} contains ',' or '$'", fix="use letters, digits, '-' and '_'"
        )
    return name
