"""Kopf's state in ``status.kopf`` (tablekeeper/operator/persistence.py): the diff base leaves
tablekeeper's own annotations out (as the annotation storage's marker did), an object last handled
by an older operator (diff base in an annotation) is not seen as new, and the progress of a
retried handler marks the object as in flight for the periodic check."""

from __future__ import annotations

import json

import kopf

from tablekeeper.operator import persistence


def body(annotations: dict[str, str] | None = None, status: dict[str, object] | None = None) -> kopf.Body:
    return kopf.Body({"apiVersion": "tablekeeper.io/v1alpha1", "kind": "PaimonTag",
                      "metadata": {"name": "t", "namespace": "sales", "annotations": annotations or {},
                                   "labels": {"app": "x"}},
                      "spec": {"snapshotId": 3}, "status": status or {}})


def test_essence_ignores_tablekeeper_annotations_and_the_status() -> None:
    storage = persistence.StatusDiffBase()
    essence = storage.build(body=body({"tablekeeper.io/paused": "true", "team": "a"}, {"state": "Ready"}))
    assert essence == {"metadata": {"annotations": {"team": "a"}, "labels": {"app": "x"}}, "spec": {"snapshotId": 3}}
    bare = storage.build(body=body({"tablekeeper.io/run-now": "ExpireSnapshots"}))
    assert bare == {"metadata": {"labels": {"app": "x"}}, "spec": {"snapshotId": 3}}


def test_diff_base_is_stored_in_status_and_read_from_the_legacy_annotation() -> None:
    storage = persistence.StatusDiffBase()
    patch = kopf.Patch()
    essence = storage.build(body=body())
    storage.store(body=body(), patch=patch, essence=essence)
    assert set(patch) == {"status"}  # one status PATCH carries it, no metadata write
    stored = patch["status"]["kopf"]["last-handled-configuration"]
    assert storage.fetch(body=body(status={"kopf": {"last-handled-configuration": stored}})) == essence
    legacy = body({"tablekeeper.io/last-handled-configuration": json.dumps({"spec": {"snapshotId": 3}})})
    assert storage.fetch(body=legacy) == {"spec": {"snapshotId": 3}}
    assert persistence.handled(legacy["metadata"], {}) and not persistence.handled({}, {})


def test_in_flight_while_kopf_keeps_progress() -> None:
    status = {"kopf": {"progress": {"tag-reconcile": {"retries": 1}}}}
    assert persistence.in_flight(status, ["tag-reconcile"])
    assert not persistence.in_flight({"kopf": {"progress": {}}}, ["tag-reconcile"])


def test_kopf_stands_aside_while_the_finalizer_is_written_ahead() -> None:
    from tablekeeper.operator.controllers import children as objects
    from tablekeeper.operator.status.markers import FINALIZER

    def holds(state: str, finalizers: list[str], policy: str = "Delete") -> bool:
        return objects.kopf_holds_finalizer({"finalizers": finalizers}, {"deletionPolicy": policy},
                                            {"owned": True, "state": state}, default_policy="Delete",
                                            use_finalizers=True)

    assert not holds("Creating", [])  # write_ahead adds it with the labels
    assert holds("Creating", [FINALIZER]) and holds("Ready", []) and holds("Ready", [FINALIZER])
    assert not holds("Ready", [FINALIZER], policy="Retain")  # Kopf removes it
