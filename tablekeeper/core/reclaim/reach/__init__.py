"""What a retained root (snapshot, tag, changelog of any branch, consumer) reaches, over the
table's cached manifest reads, and which of its references Paimon keeps alive or lets dangle.
It decides what is reachable; what expires or is an orphan is ``expire``'s and ``orphans``'."""

# isort: skip_file
from typing import TYPE_CHECKING

from tablekeeper.core import lazy

_PUBLIC = {"available": "child_process", "ForkedCall": "child_process", "ForkedCallError": "child_process",
    "Send": "child_process", "SharedClaims": "child_process", "copied_lists": "guarantees",
    "dangling_roles": "guarantees", "details_of": "guarantees", "ignored_reference": "guarantees",
    "IgnoredReference": "guarantees", "list_reference": "guarantees", "missing_kept_file": "guarantees",
    "notes_of": "guarantees", "reads_delta": "guarantees", "Reference": "guarantees", "root_kind": "guarantees",
    "RootKind": "guarantees", "RootName": "guarantees", "Rule": "guarantees", "rule_for": "guarantees",
    "RULES": "guarantees", "MissingFile": "manifest_cache", "DataKey": "reachability", "MetaUnion": "reachability",
    "Missing": "reachability", "Reachability": "reachability", "changelog_reads": "roles", "ListRole": "roles",
    "added_index_entries": "root_metadata", "index_manifest_file": "root_metadata", "list_contents": "root_metadata",
    "list_file": "root_metadata", "lists_of": "root_metadata", "MetaRef": "root_metadata",
    "statistics_file": "root_metadata"}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from .child_process import (available as available, ForkedCall as ForkedCall, ForkedCallError as ForkedCallError,
        Send as Send, SharedClaims as SharedClaims)
    from .guarantees import (copied_lists as copied_lists, dangling_roles as dangling_roles, details_of as details_of,
        ignored_reference as ignored_reference, IgnoredReference as IgnoredReference,
        list_reference as list_reference, missing_kept_file as missing_kept_file, notes_of as notes_of,
        reads_delta as reads_delta, Reference as Reference, root_kind as root_kind, RootKind as RootKind,
        RootName as RootName, Rule as Rule, rule_for as rule_for, RULES as RULES)
    from .manifest_cache import MissingFile as MissingFile
    from .reachability import (DataKey as DataKey, MetaUnion as MetaUnion, Missing as Missing,
        Reachability as Reachability)
    from .roles import changelog_reads as changelog_reads, ListRole as ListRole
    from .root_metadata import (added_index_entries as added_index_entries,
        index_manifest_file as index_manifest_file, list_contents as list_contents, list_file as list_file,
        lists_of as lists_of, MetaRef as MetaRef, statistics_file as statistics_file)
else:
    __getattr__, __dir__ = lazy.public_names(__name__, _PUBLIC)
