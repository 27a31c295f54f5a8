"""Every input of the fuzz corpus (tests/fuzz/corpus/<target>/: the seeds, and every input a
fuzz run ever reported, kept as a regression input) replayed through its target, in the ordinary
test run and without atheris: each must pass its target's invariants."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS, corpus_of

INPUTS = [pytest.param(name, path, id=f"{name}/{path.name}")
          for name in sorted(TARGETS) for path in sorted(corpus_of(name).glob("*")) if path.is_file()]


@pytest.mark.parametrize(("target", "path"), INPUTS)
def test_corpus_input(target: str, path: Path) -> None:
    TARGETS[target].one_input(path.read_bytes())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_target_has_a_seed_corpus(target: str) -> None:
    assert len(list(corpus_of(target).glob("seed-*"))) >= 5, f"run python -m tests.fuzz.seeds ({target})"
