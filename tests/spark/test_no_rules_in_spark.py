"""No Paimon rule lives in tablekeeper/spark: the Spark job evaluates core's decisions
(tablekeeper.core.reclaim.orphans.decision) and every module says which. These checks read the source, so a
rule copied back into the Spark side fails here before it can drift from core's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tablekeeper.spark

SPARK_DIR = Path(tablekeeper.spark.__file__).parent
MODULES = sorted(p for p in SPARK_DIR.rglob("*.py") if p.name != "__init__.py")

#: Literal fragments of Paimon rules that core states (decisions, expire, orphans, root_metadata,
#: manifests, hints) and that must not reappear in the Spark evaluator.
RULE_FRAGMENTS = {
    r"""startswith\(\s*["']bucket-""": "bucket directories: decisions.is_bucket_dir",
    r"""["']=["']\s+in\b""": "partition directories: decisions.is_partition_dir",
    r"""\bEARLIEST\b|\bLATEST\b""": "hints: the decision's tail",
    r"""["']snapshot-["']|["']changelog-["']""": "file prefixes: core.paimon.layout via the decision",
    r"""changelog_decoupled\s*=""": "the decoupled-changelog rule: core's retention",
    r"""\.kind\s*==\s*0\b|entry\.kind\s*==""": "index/manifest entry kinds: core.root_metadata / manifests",
    r"""(adds|dels)\s*[><=]""": "live merge: manifests.merge_kinds",
    r"""_KEPT_NAMES""": "temp-file filter: decisions.is_candidate_name",
    r"""\b(expire|orphans|plans|reach|refs|partitions|concurrency|values|paimon|manifests|storage|policy|references|reachability|decisions)\._[a-z]""": "a private name of core",
}


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(SPARK_DIR).as_posix())
def test_no_paimon_rule_is_restated_in_spark(module: Path) -> None:
    source = module.read_text()
    tree = ast.parse(source)
    docs = [ast.get_docstring(n, clean=False) or "" for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]
    for doc in docs:  # docstrings say which core rule is evaluated: they may name it
        source = source.replace(doc, "")
    body = "\n".join(line.split("#", 1)[0] for line in source.splitlines())  # so may comments
    found = {why for pattern, why in RULE_FRAGMENTS.items() if re.search(pattern, body)}
    assert not found, f"{module.name} restates core's rules: {sorted(found)}"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(SPARK_DIR).as_posix())
def test_each_spark_module_says_what_it_evaluates_or_does(module: Path) -> None:
    doc = ast.get_docstring(ast.parse(module.read_text())) or ""
    assert doc, f"{module.name} has no docstring"
    if module.name in ("job.py", "executor.py", "driver.py", "plan.py"):  # the evaluators, driver and executor side
        assert "core" in doc and "decision" in doc, f"{module.name}: say which core decision it evaluates"


def test_spark_imports_no_private_name_of_core() -> None:
    for module in MODULES:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tablekeeper.core"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{module.name} imports private {private} from {node.module}"
                assert not any(part.startswith("_") for part in (node.module or "").split(".")), module.name
