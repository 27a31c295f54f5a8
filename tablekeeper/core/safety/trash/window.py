"""How long a run's files are kept: ``--keep-deleted``, else the table option ``trash.keep`` (ad-hoc
commands); the effective policy's ``trash.keep`` (which falls back to that option) for what the
operator and ``apply`` run."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from tablekeeper.core import errors, values
from tablekeeper.core.safety.trash.context import KEEP_OPTION

__all__ = ["KEEP_OPTION", "keep_window", "policy_window"]



def keep_window(flag: str | None, table_options: Mapping[str, str]) -> timedelta | None:
    """The window of a run: the flag's duration, else the table's ``trash.keep``; None: the run
    deletes as before. A zero or negative window is bad input (say nothing to delete for good)."""
    text, field = (flag, "--keep-deleted") if flag is not None else (table_options.get(KEEP_OPTION), KEEP_OPTION)
    if text is None:
        return None
    window = values.parse_duration(text, field=field)
    if window <= timedelta(0):
        raise errors.InvalidInputError(f"{field} must be a positive duration, not {text!r}",
                                       fix="give e.g. '7 d', or leave it out to delete for good")
    return window


def policy_window(policy_values: Mapping[str, Any]) -> timedelta | None:
    """The window of the runs a resolved policy drives: its ``trash.keep`` (the table's own option
    is the lowest level of that policy; a cluster minimum has already raised it). None: no window."""
    keep = policy_values.get("trash.keep")  # the policy's leaf path (the option's name too)
    return None if keep is None else values.parse_duration(str(keep), field="trash.keep")
