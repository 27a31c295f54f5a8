"""Planning ``SetTableOptions``: the policy's managed fields written as Paimon table options
(``enforcement: TableOptions`` / ``Both``), protected keys reported, never written. Pure.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from tablekeeper.core import paimon
from tablekeeper.core.policy.effective import EffectivePolicy
from tablekeeper.core.policy.specs import PAIMON_OPTIONS
from tablekeeper.reconcile import actions as A
from tablekeeper.reconcile.state.desired import TableTarget, describe
from tablekeeper.reconcile.state.observe import TableState

__all__ = ["managed_table_options", "plan_table_options"]


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def managed_table_options(target: TableTarget, policy: EffectivePolicy) -> dict[str, str]:
    """The Paimon table options the policy manages (operator-design.md §4.2 mapping): only fields
    some level explicitly sets (absent = not managed, never reset), not in a ``Disabled`` section,
    and only with ``enforcement: TableOptions`` or ``Both``. With ``Both`` the operator creates
    auto tags itself, so ``tag.automatic-creation`` and its companions are not written (writers
    and the operator must never both create auto tags)."""
    enforcement = target.spec.enforcement
    if enforcement not in ("TableOptions", "Both"):
        return {}
    out: dict[str, str] = {}
    for path in policy.explicit_paths():
        keys = PAIMON_OPTIONS.get(path)
        value = policy.values.get(path)
        if not keys or value is None:
            continue
        if policy.values.get(f"{path.split('.', 1)[0]}.state") == "Disabled":
            continue
        if enforcement == "Both" and path.startswith("tags.autoCreate."):
            continue
        out[keys[0]] = _option_text(value)
    return out


def plan_table_options(target: TableTarget, state: TableState, policy: EffectivePolicy,
                       unalterable: Collection[str] = ()) -> list[A.Action]:
    """``SetTableOptions`` when a managed option differs from the table's (pure). Keys in the
    table's ``protectedOptions`` or the operator's ``unalterable`` list are never written: a
    difference there is reported as a ``Skipped`` (``ConflictingTableOption``). ``partition.*``
    options are not written to a table without partition keys (Java Paimon's schema validation
    refuses to read such a table)."""
    desired = managed_table_options(target, policy)
    if state.partition_keys == ():  # Paimon refuses partition.* options on a table without partitions
        desired = {k: v for k, v in desired.items() if not k.startswith("partition.")}
    if not desired:
        return []
    protected = set(target.spec.protected_options) | set(unalterable)
    diff = paimon.diff_options(state.options, desired, protected)
    base: dict[str, Any] = {"warehouse": target.location.warehouse, "table": target.location.identifier,
                            "resource": target.resource.ref, "source": target.resource.file}
    paths = [p for p in policy.explicit_paths() if PAIMON_OPTIONS.get(p, ("",))[0] in desired]
    out: list[A.Action] = []
    if not diff.is_empty:
        out.append(A.SetTableOptions(**base, options={k: v for k, v in desired.items() if k not in protected},
                                     changed=dict(diff.set), previous=dict(diff.previous),
                                     policy=describe(policy.values, policy.sources, paths),
                                     reason=f"enforcement {target.spec.enforcement}: set "
                                            + ", ".join(f"{k}={v}" for k, v in diff.set.items())))
    for key, (current, wanted) in diff.protected.items():
        out.append(A.Skipped(**base, what=f"table option {key}",
                             reason=f"ConflictingTableOption: the policy asks for {key}={wanted} but the table has "
                                    f"{current if current is not None else 'it unset'}; the key is protected "
                                    "(protectedOptions or the operator's unalterable list), so it is not written"))
    return out
