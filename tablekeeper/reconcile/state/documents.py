"""Reading YAML manifests (``tablekeeper plan/apply -f DIR``): the same objects as the CRDs,
``apiVersion: tablekeeper.io/v1alpha1``, several documents per file allowed.

Every problem of every document is collected before anything is returned, and reported as one
:class:`ManifestError` naming the file, the object and the field (camelCase, the CRD spelling)::

    examples/02-tags.yaml (PaimonTag demo/baseline): spec.timeRetained: '7 days' is not a duration ...

Relative warehouse paths of ``PaimonCatalog``/``ClusterPaimonCatalog`` resolve against
``base_dir`` (the CLI passes the current directory, or the manifest directory with
``--relative-to manifests``): the one place a spec is rewritten before validation, because the
CRD grammar accepts only URIs and absolute paths.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tablekeeper.core import errors, policy
from tablekeeper.core.policy import NAMESPACE_NAME_PATTERN, OBJECT_NAME_PATTERN, InvalidSpecError, SpecModel

__all__ = [
    "Resource",
    "ManifestError",
    "Problem",
    "SUPPORTED_KINDS",
    "DEFAULT_NAMESPACE",
    "manifest_files",
    "load_manifests",
    "collect_manifests",
    "Loaded",
    "parse_documents",
]

DEFAULT_NAMESPACE = "default"
#: Kinds plan/apply understands; PaimonMaintenanceRun is imperative (use the CLI commands).
SUPPORTED_KINDS = frozenset(k for k in policy.SPEC_MODELS if k != "PaimonMaintenanceRun")
_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")
_METADATA = ("name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
             "creationTimestamp")
_OBJECT_NAME = re.compile(OBJECT_NAME_PATTERN)
_NAMESPACE = re.compile(NAMESPACE_NAME_PATTERN)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


@dataclass(frozen=True)
class Problem:
    """One problem of the manifests: where (file, object, field) and what."""

    where: str
    field: str
    message: str
    fix: str | None = None

    def __str__(self) -> str:
        if not self.message:  # a line already formatted by the policy models
            return self.where
        text = f"{self.where}: {self.field}: {self.message}" if self.field else f"{self.where}: {self.message}"
        return f"{text} (fix: {self.fix})" if self.fix else text


class ManifestError(InvalidSpecError):
    """The manifests are not acceptable; nothing was changed. ``problems`` lists every one."""

    reason = "InvalidSpec"

    def __init__(self, problems: Sequence[Problem | str]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in the manifests; nothing was changed:\n{lines}",
                         fix=None)


@dataclass(frozen=True)
class Resource:
    """One validated manifest object."""

    kind: str
    name: str
    namespace: str | None
    spec: SpecModel
    file: str
    document: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """``PaimonTag demo/baseline`` (cluster kinds: ``ClusterPaimonCatalog prod``)."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    @property
    def where(self) -> str:
        """``examples/02-tags.yaml (PaimonTag demo/baseline)``: the prefix of every message."""
        return f"{self.file} ({self.ref})"

    @property
    def key(self) -> tuple[str, str | None, str]:
        return (self.kind, self.namespace, self.name)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (PyYAML silently keeps the last one)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
        if key in out:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=deep)  # type: ignore[no-untyped-call]
    return out


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)  # type: ignore[arg-type]


def manifest_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The YAML files named by ``paths``: files as given, directories searched recursively for
    ``*.yaml`` / ``*.yml`` (sorted, so ``01-...`` comes before ``02-...``).

    Raises:
        InvalidInputError: a path does not exist or a directory holds no YAML file.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml")
                           and not any(part.startswith(".") for part in p.relative_to(path).parts))
            if not found:
                raise errors.InvalidInputError(f"no *.yaml or *.yml files in {path}",
                                               fix="point -f at a directory of manifests or at a file")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise errors.InvalidInputError(f"{path} does not exist", fix="check the path given to -f")
    seen: set[Path] = set()
    unique = []
    for p in out:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


def _display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


@dataclass(frozen=True)
class Loaded:
    """What loading produced: valid objects, problems, and the (kind, namespace, name) of
    objects that were named but invalid (so references to them are not reported again)."""

    resources: tuple[Resource, ...]
    problems: tuple[Problem, ...]
    invalid: frozenset[tuple[str, str | None, str]]


def load_manifests(paths: Iterable[str | os.PathLike[str]], *, base_dir: str | os.PathLike[str] | None = None,
                   relative_to_manifests: bool = False) -> list[Resource]:
    """Read and validate every manifest under ``paths``.

    Args:
        paths: files and/or directories.
        base_dir: what relative warehouse paths resolve against (default: the current directory).
        relative_to_manifests: resolve them against each manifest file's directory instead.

    Returns:
        The objects, in file order.

    Raises:
        ManifestError: listing every problem (YAML syntax, apiVersion, kind, metadata, spec
            fields, duplicate objects).
        InvalidInputError: a path does not exist.
    """
    loaded = collect_manifests(paths, base_dir=base_dir, relative_to_manifests=relative_to_manifests)
    if loaded.problems:
        raise ManifestError(loaded.problems)
    return list(loaded.resources)


def collect_manifests(paths: Iterable[str | os.PathLike[str]], *, base_dir: str | os.PathLike[str] | None = None,
                      relative_to_manifests: bool = False) -> Loaded:
    """Like :func:`load_manifests`, but returns the problems instead of raising them.

    Raises:
        InvalidInputError: a path does not exist or cannot be read.
    """
    files = manifest_files(paths)
    texts = []
    for path in files:
        try:
            texts.append((_display(path), path.read_text(encoding="utf-8"), path.parent))
        except (OSError, UnicodeDecodeError) as e:
            raise errors.InvalidInputError(f"cannot read {path}: {e}", fix="check the file") from e
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    return parse_documents(texts, base_dir=None if relative_to_manifests else base)


def parse_documents(texts: Sequence[tuple[str, str, Path]], *, base_dir: Path | None) -> Loaded:
    """Validate YAML texts ``[(display name, text, directory of the file)]``; relative warehouse
    paths resolve against ``base_dir`` (None: each file's directory)."""
    problems: list[Problem] = []
    resources: list[Resource] = []
    invalid: set[tuple[str, str | None, str]] = set()
    seen: dict[tuple[str, str | None, str], Resource] = {}
    for name, text, directory in texts:
        try:
            documents = list(yaml.load_all(text, Loader=_StrictLoader))  # noqa: S506 - a SafeLoader
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{name}:{mark.line + 1}" if mark is not None else name
            problems.append(Problem(where, "", f"not valid YAML: {getattr(e, 'problem', None) or e}",
                                    "fix the YAML syntax"))
            continue
        for index, doc in enumerate(documents):
            if doc is None:
                continue
            resource = _parse_document(name, index, doc, base_dir or directory, problems)
            if resource is None:
                key = _named(doc)
                if key is not None:
                    invalid.add(key)
                continue
            previous = seen.get(resource.key)
            if previous is not None:
                problems.append(Problem(resource.where, "metadata.name",
                                        f"{resource.ref} is also defined in {previous.file}",
                                        "keep one definition per object"))
                continue
            seen[resource.key] = resource
            resources.append(resource)
    return Loaded(tuple(resources), tuple(problems), frozenset(invalid))


def _named(doc: Any) -> tuple[str, str | None, str] | None:
    """(kind, namespace, name) of an invalid document, if it says so."""
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        return None
    kind, name = doc.get("kind"), doc["metadata"].get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        return None
    namespace = None if kind in policy.CLUSTER_SCOPED else doc["metadata"].get("namespace") or DEFAULT_NAMESPACE
    return (kind, namespace if isinstance(namespace, str) else None, name)


def _parse_document(file: str, index: int, doc: Any, base_dir: Path, problems: list[Problem]) -> Resource | None:
    where = f"{file} (document {index + 1})"
    if not isinstance(doc, dict):
        problems.append(Problem(where, "", "a manifest must be a mapping with apiVersion, kind, metadata and spec",
                                "write the object as a YAML mapping"))
        return None
    ok = True
    for key in doc:
        if key not in _TOP_LEVEL:
            close = difflib.get_close_matches(str(key), _TOP_LEVEL, n=1)
            problems.append(Problem(where, str(key), f"unknown top-level field '{key}'",
                                    (f"did you mean '{close[0]}'? " if close else "") + "allowed: "
                                    + ", ".join(_TOP_LEVEL)))
            ok = False
    api = doc.get("apiVersion")
    if api != policy.API_GROUP_VERSION:
        problems.append(Problem(where, "apiVersion",
                                "apiVersion is missing" if api is None else f"apiVersion {api!r} is not supported",
                                f"use apiVersion: {policy.API_GROUP_VERSION}"))
        ok = False
    kind = doc.get("kind")
    if not isinstance(kind, str) or kind not in SUPPORTED_KINDS:
        if kind == "PaimonMaintenanceRun":
            message, fix = ("PaimonMaintenanceRun is an imperative one-shot run, not desired state",
                            "run it with the CLI (tablekeeper expire / clean-orphans / expire-partitions)")
        else:
            close = difflib.get_close_matches(str(kind), sorted(SUPPORTED_KINDS), n=1)
            message = "kind is missing" if kind is None else f"unknown kind {kind!r}"
            fix = (f"did you mean '{close[0]}'? " if close else "") + "use one of " + ", ".join(sorted(SUPPORTED_KINDS))
        problems.append(Problem(where, "kind", message, fix))
        return None
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        problems.append(Problem(where, "metadata", "metadata with a name is required",
                                "add metadata: {name: ...}"))
        return None
    name = metadata.get("name")
    if not isinstance(name, str) or not _OBJECT_NAME.match(name) or len(name) > 253:
        problems.append(Problem(f"{file} ({kind}, document {index + 1})", "metadata.name",
                                "metadata.name is missing" if name is None else
                                f"{name!r} is not a Kubernetes object name",
                                "use lowercase letters, digits, '-' and '.' (DNS-1123); put Paimon names that "
                                "do not fit into spec.tagName / spec.branchName"))
        return None
    cluster = kind in policy.CLUSTER_SCOPED
    namespace = metadata.get("namespace")
    ref_where = f"{file} ({kind} {name})" if cluster else f"{file} ({kind} {namespace or DEFAULT_NAMESPACE}/{name})"
    for key in metadata:
        if key not in _METADATA:
            problems.append(Problem(ref_where, f"metadata.{key}", f"unknown metadata field '{key}'",
                                    "allowed: " + ", ".join(_METADATA)))
            ok = False
    if cluster and namespace is not None:
        problems.append(Problem(ref_where, "metadata.namespace", f"{kind} is cluster-scoped and has no namespace",
                                "remove metadata.namespace"))
        ok = False
    if not cluster:
        namespace = namespace if namespace is not None else DEFAULT_NAMESPACE
        if not isinstance(namespace, str) or not _NAMESPACE.match(namespace) or len(namespace) > 63:
            problems.append(Problem(ref_where, "metadata.namespace", f"{namespace!r} is not a namespace name",
                                    "use a DNS-1123 label such as 'demo'"))
            ok = False
    labels = _string_map(metadata.get("labels"), ref_where, "metadata.labels", problems)
    annotations = _string_map(metadata.get("annotations"), ref_where, "metadata.annotations", problems)
    spec = doc.get("spec")
    if spec is None:
        problems.append(Problem(ref_where, "spec", "spec is missing", f"add the spec of the {kind}"))
        return None
    if kind in ("PaimonCatalog", "ClusterPaimonCatalog") and isinstance(spec, dict):
        spec = _resolve_warehouse(spec, base_dir)
    try:
        model = policy.parse_spec(kind, spec, source=ref_where)
    except errors.InvalidInputError as e:
        lines = [line for line in str(e).splitlines() if line.strip()]
        if isinstance(e, InvalidSpecError) and lines:
            problems.extend(Problem(line, "", "") for line in lines)
        else:
            problems.append(Problem(ref_where, "spec", e.message, e.fix))
        return None
    if not ok:
        return None
    return Resource(kind, name, None if cluster else namespace, model, file, index, labels or {}, annotations or {})


def _string_map(value: Any, where: str, path: str, problems: list[Problem]) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        problems.append(Problem(where, path, "must map strings to strings", "quote the values"))
        return None
    return dict(value)


def _resolve_warehouse(spec: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """A relative local warehouse path becomes absolute (against ``base_dir``)."""
    warehouse = spec.get("warehouse")
    if not isinstance(warehouse, str) or not warehouse.strip() or warehouse != warehouse.strip():
        return spec
    if _URI.match(warehouse) or warehouse.startswith("/"):
        return spec
    return {**spec, "warehouse": os.path.normpath(os.path.join(os.path.abspath(base_dir), warehouse))}
