"""tablekeeper: declarative tags, branches and retention for Apache Paimon tables."""

__version__ = "0.1.0"
__all__ = ["__version__"]
