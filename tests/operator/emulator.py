"""Compatibility shim: the emulator fixes now live in the shared test support
(:class:`tests.support.k8s.ApiServerEmulator`); import ``OperatorEmulator`` from there.
Kept only for ``bench/operator.py``, which still imports this module."""

from tests.support.k8s import OperatorEmulator

__all__ = ["OperatorEmulator"]
