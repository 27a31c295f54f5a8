"""The spark-submit main of the version tiers' smoke tests (run as a file, so its functions are
pickled by value): imports tablekeeper's job modules on the driver and in every task and prints
one ``PROBE {json}`` line saying where each came from, which interpreter ran it and whether the
optional C extensions were found. Imports that fail are reported, not raised, so the Python 3.10
run still shows which module needs what.

Usage: spark-submit [--master M] --py-files tablekeeper.zip probe_job.py [PARTITIONS]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

MODULES = (
    "tablekeeper.core.plans",
    "tablekeeper.core.storage.fileio",
    "tablekeeper.core.paimon.manifests.decoding",
    "tablekeeper.spark.executor",
)
NATIVE = (
    "tablekeeper.core.reclaim.orphans._name_scan_native",
    "tablekeeper.core.paimon.manifests._avro_native",
    "tablekeeper.core.storage._fs_native",
)


def where() -> dict[str, Any]:
    import importlib
    import importlib.util

    modules: dict[str, str] = {}
    for name in MODULES:
        try:
            modules[name] = str(importlib.import_module(name).__file__)
        except Exception as e:  # reported: the Python 3.10 run lists what fails
            modules[name] = f"error: {type(e).__name__}: {e}"
    native: dict[str, bool | str] = {}
    for name in NATIVE:
        try:
            native[name] = importlib.util.find_spec(name) is not None
        except Exception as e:
            native[name] = f"error: {type(e).__name__}"
    return {"python": sys.executable, "version": ".".join(map(str, sys.version_info[:3])), "cwd": os.getcwd(),
            "pid": os.getpid(), "modules": modules, "native": native}


def probe(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa
    from pyspark import TaskContext

    for batch in batches:
        info = where()
        context = TaskContext.get()
        info["partition"] = context.partitionId() if context is not None else -1
        yield pa.RecordBatch.from_pydict({"info": [json.dumps(info)] * batch.num_rows})


def main() -> None:
    from pyspark.sql import SparkSession

    partitions = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    spark = SparkSession.builder.appName("tablekeeper-probe").getOrCreate()
    rows = spark.range(0, partitions, 1, partitions).mapInArrow(probe, "info string").collect()
    context = spark.sparkContext
    report = {
        "spark": spark.version,
        "java": context._jvm.System.getProperty("java.version"),  # type: ignore[union-attr]
        "master": context.master,
        "driver": where(),
        "tasks": [json.loads(row.info) for row in rows],
    }
    spark.stop()
    print("PROBE " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
