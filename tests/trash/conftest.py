"""Fixtures of the trash suite: the maintenance suite's mixed table, one fresh copy per test."""

from tests.maintenance.conftest import mixed, mixed_template

__all__ = ["mixed", "mixed_template"]
