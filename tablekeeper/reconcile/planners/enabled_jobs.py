"""Which maintenance a table's policy enables: the one rule the planner and the operator share.

The reconcile planner decides per action kind whether to plan it; the operator's scheduler
decides per run type whether to create ``PaimonMaintenanceRun`` objects. Both ask
:func:`enabled` (issue #11: the operator reads decisions, it does not make its own). Whether an
enabled kind is *due* (schedules, windows) and whether storage has anything for it to do are
separate questions, answered by the planner.
"""

from __future__ import annotations

from tablekeeper.core.policy.effective import EffectivePolicy

__all__ = ["KINDS", "managed", "enabled"]

#: The kinds :func:`enabled` answers for: the maintenance action kinds and tag expiration.
KINDS = ("ExpirePartitions", "ExpireConsumers", "ExpireSnapshots", "ExpireChangelog", "CleanOrphans", "ExpireTags")


def managed(policy: EffectivePolicy, *sections: str) -> bool:
    """A retention section is managed when some level explicitly set one of its fields (a
    built-in default or the table's own option alone manages nothing)."""
    return any(path.split(".", 1)[0] in sections for path in policy.explicit_paths())


def enabled(kind: str, enforcement: str, policy: EffectivePolicy) -> bool:
    """Whether tablekeeper runs ``kind`` for a table with ``enforcement`` and ``policy``.

    ``enforcement: TableOptions`` leaves every maintenance to the table's writers (the policy is
    written as table options), tag expiration included. Otherwise: partitions when a level set
    the section and ``partitions.expiration``; snapshots when a level set the section; the
    changelog when a level set it or the snapshots section; consumers when a level set the
    section and ``consumers.expiration`` (Paimon never expires consumers without it); orphan cleanup only when
    ``orphanFiles.state`` is ``Enabled``; tag expiration unless ``tags.state`` is ``Disabled``.

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown maintenance kind {kind!r}")
    if enforcement == "TableOptions":
        return False
    v = policy.values
    if kind == "ExpirePartitions":
        return bool(v["partitions.state"] != "Disabled" and v["partitions.expiration"] is not None
                    and managed(policy, "partitions"))
    if kind == "ExpireConsumers":
        return bool(v["consumers.state"] != "Disabled" and v["consumers.expiration"] is not None
                    and managed(policy, "consumers"))
    if kind == "ExpireSnapshots":
        return bool(v["snapshots.state"] != "Disabled" and managed(policy, "snapshots"))
    if kind == "ExpireChangelog":
        return bool(v["changelog.state"] != "Disabled" and managed(policy, "changelog", "snapshots"))
    if kind == "ExpireTags":
        return bool(v["tags.state"] != "Disabled")
    return bool(v["orphanFiles.state"] == "Enabled")
