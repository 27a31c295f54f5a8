"""CustomResourceDefinitions of the tablekeeper kinds, generated from the policy models.

The spec models in :mod:`tablekeeper.core.policy` are the single source of the CRD schemas. Each
kind's ``spec`` schema is the model's pydantic JSON schema translated into a Kubernetes
*structural* schema:

- ``$ref``/``$defs`` are inlined (a model used in several places is copied into each);
- ``Optional[X]`` (``anyOf: [X, {type: null}]``) becomes plain ``X``, not required and not
  ``nullable``: absent means "not managed here", and Kubernetes drops explicit nulls of
  non-nullable fields, so ``has(self.x)`` in CEL means "set";
- ``Literal`` becomes ``enum``; patterns, bounds, formats and descriptions are kept; titles are
  dropped; ``additionalProperties: false`` is dropped (the API server prunes unknown fields, and
  ``kubectl`` rejects them with strict field validation); ``patternProperties`` becomes
  ``additionalProperties`` (key syntax is then checked by the model only);
- defaults are kept when they are non-empty (``branch: main``, ``backoffLimit: 6``), so the API
  server fills in exactly what the model would;
- :mod:`tablekeeper.operator.crds.validations` adds CEL rules (one-of, ranges, names, immutability)
  and refinements (``maxLength`` for the CEL cost budget, list types, zone pattern).

Anything the translation cannot express (a union, an unknown keyword) raises
:class:`CRDGenerationError` instead of producing a schema Kubernetes would reject.

Every kind gets the status subresource (``status`` preserves unknown fields but declares
``observedGeneration`` and ``metav1.Condition``-shaped ``conditions``), printer columns including
``Ready`` and ``Age``, short names and the categories ``tablekeeper`` and ``paimon``.

Modules: :mod:`tablekeeper.operator.crds.kinds` (the kinds and their CRD documents),
:mod:`tablekeeper.operator.crds.schema` (the schema translation),
:mod:`tablekeeper.operator.crds.reference` (the reference page); this module writes and checks the
files (``python -m tablekeeper.operator.crds`` runs :func:`main`).

Command line (the CRDs in ``crds/`` and ``charts/tablekeeper/crds/`` and the reference page
``docs/crd-reference.md`` are generated and checked in)::

    python -m tablekeeper.operator.crds --out crds --out charts/tablekeeper/crds --docs docs/crd-reference.md
    python -m tablekeeper.operator.crds --check --out crds --docs docs/crd-reference.md   # exit 1 if stale
    python -m tablekeeper.operator.crds | kubectl apply -f -                             # to stdout
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tablekeeper.core.policy import API_GROUP
from tablekeeper.operator.crds.kinds import GENERATOR_COMMAND, build_crds, crd_filename, render_crd
from tablekeeper.operator.crds.reference import render_reference
from tablekeeper.operator.crds.schema import CRDGenerationError

__all__ = ["write_outputs", "main"]


def _outputs(crds: Sequence[Mapping[str, Any]], out_dirs: Sequence[Path],
             docs: Path | None) -> dict[Path, str]:
    files: dict[Path, str] = {}
    for directory in out_dirs:
        for crd in crds:
            files[directory / crd_filename(crd)] = render_crd(crd)
    if docs is not None:
        files[docs] = render_reference(crds)
    return files


def _stale_generated(out_dirs: Sequence[Path], wanted: Mapping[Path, str]) -> list[Path]:
    """Generated-looking files in the output directories that are no longer generated."""
    extra = []
    for directory in out_dirs:
        if directory.is_dir():
            extra += [path for path in sorted(directory.glob(f"{API_GROUP}_*.yaml")) if path not in wanted]
    return extra


def write_outputs(out_dirs: Sequence[Path], docs: Path | None = None, *, check: bool = False) -> list[str]:
    """Write (or with ``check``, compare) the CRD files and the reference page.

    Returns:
        With ``check``: one line per stale, missing or superfluous file (empty = up to date).
        Without: the paths written.
    """
    crds = build_crds()
    wanted = _outputs(crds, out_dirs, docs)
    extra = _stale_generated(out_dirs, wanted)
    if check:
        problems = [f"missing: {path}" for path in wanted if not path.exists()]
        problems += [f"stale: {path}" for path, text in wanted.items()
                     if path.exists() and path.read_text(encoding="utf-8") != text]
        problems += [f"not generated any more: {path}" for path in extra]
        return problems
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for path in extra:
        path.unlink()
    return [str(path) for path in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tablekeeper.operator.crds``: see the module docstring."""
    parser = argparse.ArgumentParser(
        prog=GENERATOR_COMMAND,
        description="Generate the tablekeeper CRDs (and their reference page) from the policy models. "
        "Without --out or --docs, print every CRD to stdout as one multi-document YAML stream.",
    )
    parser.add_argument("--out", action="append", type=Path, default=[], metavar="DIR",
                        help="write tablekeeper.io_<plural>.yaml files into DIR (repeatable); removes "
                        "tablekeeper.io_*.yaml files that are no longer generated")
    parser.add_argument("--docs", type=Path, metavar="FILE", help="write the CRD reference (Markdown) to FILE")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing every file that differs from a fresh generation")
    args = parser.parse_args(argv)
    try:
        if not args.out and args.docs is None:
            if args.check:
                parser.error("--check needs --out and/or --docs")
            sys.stdout.write("---\n".join(render_crd(crd) for crd in build_crds()))
            return 0
        result = write_outputs(args.out, args.docs, check=args.check)
    except CRDGenerationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.check:
        for line in result:
            print(line, file=sys.stderr)
        if result:
            print(f"fix: run {GENERATOR_COMMAND} " + " ".join(f"--out {d}" for d in args.out)
                  + (f" --docs {args.docs}" if args.docs else ""), file=sys.stderr)
        return 1 if result else 0
    for line in result:
        print(f"wrote {line}")
    return 0

