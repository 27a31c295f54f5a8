"""What a retained root (snapshot, tag, long-lived changelog of any branch, consumer) reaches: its
manifest lists, manifests, index and statistics files and live data files (:mod:`.reachability`,
over the cached manifest reads of :mod:`.manifest_cache`), which of those references Paimon keeps
alive and which dangle by design (:mod:`.guarantees`), and the forked helpers that decode on a
second core.

It decides what is reachable; what expires or is an orphan is decided by ``expire`` and
``orphans``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tablekeeper.core import lazy

#: name -> the submodule that defines it (resolved on first use)
_PUBLIC = {
    "DataKey": "reachability",
    "ForkedCall": "child_process",
    "IgnoredReference": "guarantees",
    "ListRole": "roles",
    "MetaRef": "root_metadata",
    "MetaUnion": "reachability",
    "Missing": "reachability",
    "MissingFile": "reachability",
    "RULES": "guarantees",
    "Reachability": "reachability",
    "Reference": "guarantees",
    "RootKind": "guarantees",
    "RootName": "guarantees",
    "Rule": "guarantees",
    "Send": "child_process",
    "SharedClaims": "child_process",
    "added_index_entries": "root_metadata",
    "changelog_reads": "roles",
    "copied_lists": "guarantees",
    "dangling_roles": "guarantees",
    "details_of": "guarantees",
    "ignored_reference": "guarantees",
    "index_manifest_file": "root_metadata",
    "list_contents": "root_metadata",
    "list_file": "root_metadata",
    "list_reference": "guarantees",
    "lists_of": "root_metadata",
    "missing_kept_file": "guarantees",
    "notes_of": "guarantees",
    "reads_delta": "guarantees",
    "root_kind": "guarantees",
    "rule_for": "guarantees",
    "statistics_file": "root_metadata",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from tablekeeper.core.reach.child_process import ForkedCall as ForkedCall
    from tablekeeper.core.reach.child_process import Send as Send
    from tablekeeper.core.reach.child_process import SharedClaims as SharedClaims
    from tablekeeper.core.reach.guarantees import RULES as RULES
    from tablekeeper.core.reach.guarantees import IgnoredReference as IgnoredReference
    from tablekeeper.core.reach.guarantees import Reference as Reference
    from tablekeeper.core.reach.guarantees import RootKind as RootKind
    from tablekeeper.core.reach.guarantees import RootName as RootName
    from tablekeeper.core.reach.guarantees import Rule as Rule
    from tablekeeper.core.reach.guarantees import copied_lists as copied_lists
    from tablekeeper.core.reach.guarantees import dangling_roles as dangling_roles
    from tablekeeper.core.reach.guarantees import details_of as details_of
    from tablekeeper.core.reach.guarantees import ignored_reference as ignored_reference
    from tablekeeper.core.reach.guarantees import list_reference as list_reference
    from tablekeeper.core.reach.guarantees import missing_kept_file as missing_kept_file
    from tablekeeper.core.reach.guarantees import notes_of as notes_of
    from tablekeeper.core.reach.guarantees import reads_delta as reads_delta
    from tablekeeper.core.reach.guarantees import root_kind as root_kind
    from tablekeeper.core.reach.guarantees import rule_for as rule_for
    from tablekeeper.core.reach.reachability import DataKey as DataKey
    from tablekeeper.core.reach.reachability import MetaUnion as MetaUnion
    from tablekeeper.core.reach.reachability import Missing as Missing
    from tablekeeper.core.reach.reachability import MissingFile as MissingFile
    from tablekeeper.core.reach.reachability import Reachability as Reachability
    from tablekeeper.core.reach.roles import ListRole as ListRole
    from tablekeeper.core.reach.roles import changelog_reads as changelog_reads
    from tablekeeper.core.reach.root_metadata import MetaRef as MetaRef
    from tablekeeper.core.reach.root_metadata import added_index_entries as added_index_entries
    from tablekeeper.core.reach.root_metadata import index_manifest_file as index_manifest_file
    from tablekeeper.core.reach.root_metadata import list_contents as list_contents
    from tablekeeper.core.reach.root_metadata import list_file as list_file
    from tablekeeper.core.reach.root_metadata import lists_of as lists_of
    from tablekeeper.core.reach.root_metadata import statistics_file as statistics_file
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
