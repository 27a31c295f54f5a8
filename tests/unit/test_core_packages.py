"""The packages of ``tablekeeper.core`` and how the rest of tablekeeper uses them.

Each package's ``__init__`` names its public names twice: under ``if TYPE_CHECKING:`` (for type
checkers and readers) and in one map, name -> submodule, from which the name is imported on
first use (``tablekeeper.core.lazy``; tests/cli/test_startup.py asserts what each command
loads). The two must agree, and every name must resolve.

Other packages use only those public names: no module of tablekeeper imports a submodule of a
core package from outside it, nor a private (``_name``) of one (that is how a rule gets restated
where it then drifts: the Spark job evaluates core's decisions, it must not reach into
``expire._roots``). import-linter checks modules, not names, and a package's names are resolved
at run time, so this test reads the source; it also follows the names a module takes from
packages to the modules that define them, for the modules that must stay lean.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

import tablekeeper
import tablekeeper.core

ROOT = Path(tablekeeper.__file__).parent
CORE = tablekeeper.core.__name__
CORE_DIR = Path(tablekeeper.core.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
PACKAGES = sorted(_module_name(p) for p in CORE_DIR.rglob("__init__.py") if p.parent != CORE_DIR)
# A group (``core.reclaim``, ``core.safety``) only gathers packages: it has no modules of its own,
# so no public names; its docstring says what its packages share.
GROUPS = sorted(_module_name(p) for p in CORE_DIR.rglob("__init__.py") if p.parent != CORE_DIR
                and not any(m.suffix in (".py", ".c") and m.name != "__init__.py" for m in p.parent.iterdir()))


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _parent(module: str) -> str:
    return module.rsplit(".", 1)[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


# -- the faces ---------------------------------------------------------------------------------
@cache
def face(package: str) -> tuple[dict[str, str], dict[str, str], ast.Module]:
    """(the map name -> submodule, the TYPE_CHECKING imports name -> submodule, the tree)."""
    tree = ast.parse((CORE_DIR.parent.parent / package.replace(".", "/") / "__init__.py").read_text())
    public: dict[str, str] = {}
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_PUBLIC" for t in node.targets):
            public = ast.literal_eval(node.value)
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 1, ast.unparse(stmt)
                for alias in stmt.names:  # ``from .module import name as name``: the module of this package
                    assert alias.asname == alias.name, f"{package}: re-export {alias.name} as itself (mypy)"
                    typed[alias.name] = stmt.module
    return public, typed, tree


def test_every_package_of_core_has_a_face() -> None:
    assert PACKAGES, "no packages under tablekeeper/core"
    for package in PACKAGES:
        public, _, tree = face(package)
        assert ast.get_docstring(tree), f"{package}: say what it decides and what it leaves to others"
        if package in GROUPS:
            assert not public, f"{package}: a group of packages hands out no names of its own"
            assert importlib.import_module(package).__all__ == []
        else:
            assert public, f"{package}: no public names"


@pytest.mark.parametrize("package", PACKAGES)
def test_a_face_names_its_public_names_once_for_type_checkers_and_once_for_the_run(package: str) -> None:
    public, typed, tree = face(package)
    if package in GROUPS:
        assert typed == {} and public == {}, f"{package}: a group of packages hands out no names"
        return
    assert typed == public, f"{package}: TYPE_CHECKING imports and _PUBLIC differ: {set(typed) ^ set(public)}"
    module = importlib.import_module(package)
    assert module.__all__ == sorted(public)
    submodules = {p.stem for p in (CORE_DIR.parent.parent / package.replace(".", "/")).iterdir()
                  if p.name != "__init__.py" and (p.suffix in (".py", ".c") or (p / "__init__.py").exists())}
    assert not set(public) & submodules, f"{package}: a public name is also a submodule: {set(public) & submodules}"
    for name, where in public.items():
        defining = importlib.import_module(f"{package}.{where}")
        assert getattr(module, name) is getattr(defining, name), f"{package}.{name}"
    # __getattr__ only where type checkers do not look (it would make every attribute Any)
    for node in tree.body:
        assert not (isinstance(node, ast.FunctionDef) and node.name == "__getattr__"), package
        if isinstance(node, ast.Assign):
            assert "__getattr__" not in ast.unparse(node), f"{package}: __getattr__ outside the else branch"


def test_a_package_imports_nothing_when_imported() -> None:
    import subprocess
    import sys

    probe = ("import sys\nimport tablekeeper.core as c\nbefore = set(sys.modules)\n"
             f"for p in {PACKAGES!r}:\n    __import__(p)\n"
             "print(sorted(m for m in set(sys.modules) - before if m.startswith('tablekeeper') and m not in "
             f"{PACKAGES!r}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['tablekeeper.core.lazy']", done.stdout


# -- how the rest of tablekeeper uses them ------------------------------------------------------
def _package_of(module: str) -> str | None:
    """The core package whose face hands out ``module``'s names (None: a root module of core)."""
    parent = _parent(module)
    return parent if parent != CORE and parent in PACKAGES else None


def _is_package(module: str) -> bool:
    return module in PACKAGES or module == CORE


def core_uses(module: str, source: str) -> Iterator[str]:
    """``line: what`` for every use of core in ``source`` that breaks the rules above."""
    tree = ast.parse(source)
    bindings: dict[str, str] = {}  # name -> the core module or package bound to it
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(CORE):
            assert node.module is not None
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:  # a module bound by name
                    bindings[alias.asname or alias.name] = full
                    package = _package_of(full)
                    if package is not None and not _is_package(full) and not _inside(module, package):
                        yield f"{node.lineno}: {full} is a submodule of {package}: import its public names"
                    continue
                if _private(alias.name) and not _inside(module, _package_of(node.module) or node.module):
                    yield f"{node.lineno}: private {full}"
                    continue
                package = _package_of(node.module)
                if _is_package(node.module):
                    if node.module != CORE and _inside(module, node.module):
                        yield f"{node.lineno}: {full}: inside its package, import the submodule"
                    elif node.module != CORE and alias.name not in face(node.module)[0]:
                        yield f"{node.lineno}: {full} is not a public name of {node.module}"
                elif package is not None and not _inside(module, package):
                    yield f"{node.lineno}: {node.module} is a submodule of {package}: import from {package}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(CORE + ".") and alias.name in MODULES:
                    bindings[alias.asname or alias.name] = alias.name
                    package = _package_of(alias.name)
                    if package is not None and not _inside(module, package) and not _is_package(alias.name):
                        yield f"{node.lineno}: import {alias.name}: a submodule of {package}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bindings:
            bound = bindings[node.value.id]
            owner = bound if _is_package(bound) else (_package_of(bound) or bound)
            if _private(node.attr) and not _inside(module, owner):
                yield f"{node.lineno}: private {ast.unparse(node)}"


def test_the_checker_finds_what_breaks_the_rules() -> None:
    code = ("from tablekeeper.core.reclaim import expire; from tablekeeper.core import plans\nfrom tablekeeper.core.reclaim.orphans.planning import decide\n"
            "from tablekeeper.core.reclaim.orphans import _data_roots\nfrom tablekeeper.core.reclaim.reach import reachability\n"
            "x = expire._roots(t)\ny = plans.STAGE_ORDER\nz = self._kept\nfrom tablekeeper.core.refs import nothing\n")
    assert [u.split(":")[0] for u in core_uses("tablekeeper.spark.job", code)] == ["2", "3", "4", "8", "5"]
    assert list(core_uses("tablekeeper.core.reclaim.orphans.references", "from tablekeeper.core.reclaim.orphans import decision\n")) == []


def test_no_module_reaches_into_another_package_of_core() -> None:
    found = {name: uses for name, path in MODULES.items() if (uses := list(core_uses(name, path.read_text())))}
    assert found == {}, f"imports of another package's submodules or private names: {found}"


# -- what the lean modules reach -----------------------------------------------------------------
@cache
def loads(module: str) -> frozenset[str]:
    """The modules (of tablekeeper, and the top-level names of others) that running ``module`` may
    import: its imports anywhere but under TYPE_CHECKING, a package's names followed to the
    modules that define them."""
    tree = ast.parse(MODULES[module].read_text())
    skip = {id(n) for node in ast.walk(tree) if _is_type_checking(node) for n in ast.walk(node)}
    out: set[str] = set()
    faces: dict[str, str] = {}

    def named(package: str, name: str) -> None:
        out.add(package)
        while _is_package(package) and package != CORE and name in face(package)[0]:
            package = f"{package}.{face(package)[0][name]}"
            out.add(package)

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not node.module.startswith("tablekeeper"):
                out.add(node.module.split(".")[0])
                continue
            out.add(node.module)
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:
                    out.add(full)
                    if _is_package(full):
                        faces[alias.asname or alias.name] = full
                else:
                    named(node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                out.add(alias.name if alias.name.startswith("tablekeeper") else alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in faces \
                and id(node) not in skip:
            named(faces[node.value.id], node.attr)
    return frozenset(out)


def reached(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        todo.extend(m for m in loads(current) if m in MODULES)
    return seen | {m for s in seen for m in loads(s)}


def test_what_the_spark_executors_run_stays_lean() -> None:
    """Executor functions run in forked Python workers: no Spark, no pypaimon, no driver, and none
    of the in-process engine's reachability."""
    found = reached("tablekeeper.spark.executor")
    assert "tablekeeper.core.paimon.manifests.readers" in found  # the checker follows names
    forbidden = {"pyspark", "pypaimon", "tablekeeper.spark.job", "tablekeeper.spark.dispatch",
                 "tablekeeper.core.reclaim.reach.reachability", "tablekeeper.core.paimon.pypaimon"}
    assert sorted(m for m in found if any(_inside(m, f) for f in forbidden)) == []


@pytest.mark.parametrize("module", ["job_request", "run_names", "submit", "k8s_manifests", "result_artifact",
                                    "engine_choice"])
def test_what_launches_a_spark_job_runs_without_spark(module: str) -> None:
    """What the operator and the CLI import to launch a job never reaches pyspark or pypaimon."""
    found = reached(f"tablekeeper.spark.{module}")
    forbidden = {"pyspark", "pypaimon", "tablekeeper.spark.job", "tablekeeper.spark.dispatch"}
    assert sorted(m for m in found if any(_inside(m, f) for f in forbidden)) == []
