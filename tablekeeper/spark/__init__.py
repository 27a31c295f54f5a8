"""Distributed maintenance on Spark: the same plans as ``tablekeeper.core``, executed by PySpark.

- ``job``: the driver (imports pyspark); ``python -m tablekeeper.spark`` is its entry point;
- ``executor``: executor-side functions (plain closures, lazy imports, no pyspark);
- ``launch``: spark-submit argv, Kubernetes Job and SparkApplication manifests, run names and
  the JSON result artifact (no pyspark: the operator imports it);
- ``engine``: ``auto`` engine choice by plan size, and the in-process engine with the same
  request and result types.

Importing this package imports nothing heavy; see docs/spark.md.
"""

__all__: list[str] = []
