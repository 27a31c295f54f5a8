"""Lazy public names: how a package's ``__init__`` hands out its names without importing what
it does not need.

Each package of core lists its public names once, name -> submodule, and imports a submodule when
one of its names is first used (PEP 562): importing a package loads nothing else, so a command loads
only the modules it runs (tests/cli/test_startup.py). The name is then kept on the package, so later
uses cost what an attribute of a module costs (as with a package that re-exports its submodules'
names). Type checkers read the same names from the package's ``if TYPE_CHECKING:`` imports
(tests/unit/test_core_packages.py checks that both agree)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["public_names"]


def public_names(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public ``names`` map to the submodule
    (relative to ``package``) that defines or re-exports each."""
    modules = {name: f"{package}.{module}" for name, module in names.items()}

    def __getattr__(name: str) -> Any:
        try:
            module = modules[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # found once: later uses are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
