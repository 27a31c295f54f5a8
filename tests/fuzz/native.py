"""The C extensions as ``scripts/fuzz`` builds them (ASan, UBSan, libFuzzer's coverage), loaded
under their package names before anything imports them, so the targets exercise the sanitized
code; the directory is given by ``TABLEKEEPER_FUZZ_NATIVE`` (unset: the ordinary build runs)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

__all__ = ["MODULES", "load_sanitized"]

#: Extension module -> its file name stem in the build directory.
MODULES = {
    "tablekeeper.core.paimon.manifests._avro_native": "_avro_native",
    "tablekeeper.core.reclaim.orphans._name_scan_native": "_name_scan_native",
    "tablekeeper.core.storage._fs_native": "_fs_native",
}


def load_sanitized() -> list[str]:
    """Load every extension found in ``$TABLEKEEPER_FUZZ_NATIVE``; the module names loaded."""
    directory = os.environ.get("TABLEKEEPER_FUZZ_NATIVE")
    if not directory:
        return []
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    loaded = []
    for name, stem in MODULES.items():
        path = Path(directory) / f"{stem}{suffix}"
        if not path.is_file():
            raise SystemExit(f"{path} is missing: build it with scripts/fuzz")
        loader = importlib.machinery.ExtensionFileLoader(name, str(path))
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        sys.modules[name] = module
        loaded.append(name)
    return loaded
