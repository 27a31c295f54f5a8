"""The operator's life cycles end to end on a real kube-apiserver and a real pypaimon warehouse,
the operator logged in as the chart's ServiceAccount with exactly the chart's RBAC.

The scenarios are the emulator tests' own functions (tests/operator/), run unchanged with the
:class:`RealHarness` in place of the emulator's (no copies: a scenario changed there changes here).
The fixture fails a test when the server answered any 403 during it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.apiserver.harness import RealHarness
from tests.operator import (
    test_annotations,
    test_examples,
    test_maintenance,
    test_policy_tags,
    test_restart,
    test_tag_lifecycle,
)

Scenario = Callable[..., Awaitable[None]]

SCENARIOS: list[Scenario] = [
    # catalog Ready, tag Ready with its snapshot in status, CR deleted -> tag and finalizer gone
    test_tag_lifecycle.test_tag_with_delete_policy_lives_and_dies_with_its_cr,
    test_tag_lifecycle.test_tag_with_retain_policy_stays_in_storage,  # deletionPolicy: Retain
    test_tag_lifecycle.test_flipping_the_deletion_policy_adds_and_removes_the_finalizer,
    test_tag_lifecycle.test_branch_lifecycle_and_fork_point_protection,  # branch from a tag
    test_policy_tags.test_policy_tags_become_paimon_tags_when_switched_on,  # retention policy, auto tags
    test_maintenance.test_run_now_expires_snapshots_through_a_run,  # PaimonMaintenanceRun Succeeded, counts
    test_annotations.test_paused_changes_nothing_until_resumed,
    test_annotations.test_resume_alone_creates_without_the_periodic_check,  # the resume reaction alone
    test_annotations.test_unmanaged_detaches_and_deletion_never_touches_storage,
    test_restart.test_restart_between_resolve_and_create,  # stopped mid-reconcile, adopts, no duplicate
    test_examples.test_every_example_is_applied_and_becomes_ready,  # examples/ with the operator
]


def _id(scenario: Scenario) -> str:
    return f"{scenario.__module__.rsplit('.', 1)[-1]}::{scenario.__name__}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=_id)
async def test_scenario(scenario: Scenario, real_harness: RealHarness, request: pytest.FixtureRequest) -> None:
    kwargs: dict[str, Any] = {}
    for name in inspect.signature(scenario).parameters:
        kwargs[name] = real_harness if name == "harness" else request.getfixturevalue(name)
    await scenario(**kwargs)
