"""The Spark suite's session fixture ``spark`` (``local[2]``) lives in ``tests/support/spark.py``, a
plugin registered from ``tests/conftest.py``, so the operator's Spark-run tests reuse the same JVM."""
