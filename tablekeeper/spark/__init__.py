"""Distributed maintenance on Spark: core's decisions, evaluated by PySpark.

- the job (imports pyspark): ``job`` runs one request (``python -m tablekeeper.spark`` is its
  entry point), on a session from ``session``, with the run's context and stage helpers of
  ``stages``; one package per operation, ``orphans`` and ``expire``, each with its ``driver``
  side and its ``executor`` side; ``deletes`` (by stage) and ``tail`` where they end;
- the executor side (plain closures over plain data, lazy imports, no pyspark): ``executor``
  and each package's ``executor`` module;
- launching (no pyspark: the operator and the CLI import them): ``job_request``, ``run_names``,
  ``submit``, ``k8s_manifests``, ``result_artifact``, ``engine_choice``;
- ``dispatch``: engine ``auto`` and the in-process engine with the same request and result
  types; ``run_steps``, ``request_tally``: what both engines share.

Importing this package imports nothing heavy; see docs/spark.md.
"""

__all__: list[str] = []
