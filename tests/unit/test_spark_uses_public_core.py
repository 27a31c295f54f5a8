"""``tablekeeper.spark`` uses only public names of ``tablekeeper.core`` (issue #11).

The Spark job evaluates decisions core makes; reaching into a private helper of core
(``expire._roots`` and the like) is how a rule gets re-expressed on the Spark side and drifts.
import-linter checks modules, not names, so this test reads the source: no ``from
tablekeeper.core... import _name`` and no ``<core module>._name`` attribute in tablekeeper/spark,
whatever the alias (tests/spark/test_no_rules_in_spark.py checks the imports and a fixed list of
module names textually).
"""

from __future__ import annotations

import ast
from pathlib import Path

import tablekeeper.core
import tablekeeper.spark

SPARK = Path(tablekeeper.spark.__file__).parent
CORE = tablekeeper.core.__name__


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_core_uses(source: str) -> list[str]:
    """``file:line name`` of every private core name ``source`` uses."""
    tree = ast.parse(source)
    core_aliases: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(CORE):
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno} {node.module}.{alias.name}")
                core_aliases.add(alias.asname or alias.name)  # a module (or a name) of core
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(CORE):
                    core_aliases.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in core_aliases:
                found.append(f"{node.lineno} {ast.unparse(node)}")
    return found


def test_the_checker_finds_private_uses() -> None:
    code = ("from tablekeeper.core import expire, plans\nfrom tablekeeper.core.orphans import _data_roots\n"
            "x = expire._roots(t)\ny = plans.STAGE_ORDER\nz = self._kept\n")
    assert private_core_uses(code) == ["2 tablekeeper.core.orphans.planning._data_roots", "3 expire._roots"]


def test_spark_uses_no_private_name_of_core() -> None:
    found = {str(p.relative_to(SPARK)): [use.split(" ", 1)[1] for use in uses] for p in sorted(SPARK.rglob("*.py"))
             if (uses := private_core_uses(p.read_text(encoding="utf-8")))}
    assert found == {}, f"tablekeeper.spark uses private names of tablekeeper.core: {found}"
