"""The checked-in generated files are current: a fresh generation from the models into a
temporary directory must equal ``crds/``, ``charts/tablekeeper/crds/`` and
``docs/crd-reference.md`` byte for byte. Fix a failure with::

    python -m tablekeeper.operator.crds --out crds --out charts/tablekeeper/crds --docs docs/crd-reference.md
"""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest

from tablekeeper.operator.crds import generate as crds
from tablekeeper.operator.crds import kinds as crd_kinds
from tests.support.k8s import REPO_ROOT

CHECKED_IN = (REPO_ROOT / "crds", REPO_ROOT / "charts" / "tablekeeper" / "crds")
DOCS = REPO_ROOT / "docs" / "crd-reference.md"
FIX = ("run: python -m tablekeeper.operator.crds --out crds --out charts/tablekeeper/crds "
       "--docs docs/crd-reference.md")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("generated")
    assert crds.main(["--out", str(out / "crds"), "--docs", str(out / "crd-reference.md")]) == 0
    return out


@pytest.mark.parametrize("directory", CHECKED_IN, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_crd_directory_is_current(generated: Path, directory: Path) -> None:
    fresh = sorted(p.name for p in (generated / "crds").iterdir())
    assert fresh == sorted(f"tablekeeper.io_{info.plural}.yaml" for info in crd_kinds.KINDS)
    present = sorted(p.name for p in directory.glob("*.yaml"))
    assert present == fresh, f"{directory} has other files than a fresh generation; {FIX}"
    match, mismatch, errors = filecmp.cmpfiles(generated / "crds", directory, fresh, shallow=False)
    assert not mismatch and not errors, f"stale: {mismatch + errors}; {FIX}"


def test_reference_page_is_current(generated: Path) -> None:
    assert DOCS.read_text(encoding="utf-8") == (generated / "crd-reference.md").read_text(encoding="utf-8"), FIX


def test_check_mode_reports_stale_and_extra_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "crds"
    assert crds.main(["--out", str(out)]) == 0
    assert crds.main(["--check", "--out", str(out)]) == 0
    (out / "tablekeeper.io_paimontags.yaml").write_text("# edited\n")
    (out / "tablekeeper.io_old.yaml").write_text("# left over\n")
    (out / "README.md").write_text("not generated, never touched\n")
    capsys.readouterr()
    assert crds.main(["--check", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "stale" in err and "tablekeeper.io_paimontags.yaml" in err
    assert "not generated any more" in err and "tablekeeper.io_old.yaml" in err
    assert crds.main(["--out", str(out)]) == 0
    assert not (out / "tablekeeper.io_old.yaml").exists() and (out / "README.md").exists()
    assert crds.main(["--check", "--out", str(out)]) == 0


def test_module_entry_point_prints_all_crds() -> None:
    result = subprocess.run([sys.executable, "-m", "tablekeeper.operator.crds"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.count("kind: CustomResourceDefinition") == len(crd_kinds.KINDS)
    check = subprocess.run([sys.executable, "-m", "tablekeeper.operator.crds", "--check", "--out", "crds",
                            "--out", "charts/tablekeeper/crds", "--docs", "docs/crd-reference.md"],
                           cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
