"""The Spark Connect client of the Connect smoke test (run as a file, so its functions are pickled
by value): on the server's executors, imports tablekeeper and a probe module before and after
``addArtifacts(zip, pyfile=True)``, through ``mapInArrow`` and ``mapInPandas``, and prints one
``PROBE {json}`` line.

Usage: python connect_probe.py sc://HOST:PORT TABLEKEEPER_ZIP PROBE_ZIP
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any


def where() -> dict[str, Any]:
    import os

    info: dict[str, Any] = {"python": sys.executable, "cwd": os.getcwd()}
    try:
        import tablekeeper.core.plans.plan

        info["tablekeeper"] = tablekeeper.core.plans.plan.__file__
    except ImportError as e:
        info["tablekeeper"] = f"error: {type(e).__name__}: {e}"
    try:
        import tk_artifact_probe

        info["probe"] = tk_artifact_probe.MARKER
    except ImportError as e:
        info["probe"] = f"error: {type(e).__name__}: {e}"
    return info


def arrow_probe(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    for batch in batches:
        yield pa.RecordBatch.from_pydict({"info": [json.dumps(where())] * batch.num_rows})


def pandas_probe(frames: Iterator[Any]) -> Iterator[Any]:
    import pandas as pd

    for frame in frames:
        yield pd.DataFrame({"info": [json.dumps(where())] * len(frame)})


def run(spark: Any, fn: Any, kind: str = "arrow") -> list[dict[str, Any]]:
    df = spark.range(0, 2, 1, 2)
    mapped = df.mapInArrow(fn, "info string") if kind == "arrow" else df.mapInPandas(fn, "info string")
    return [json.loads(row.info) for row in mapped.collect()]


def attempt(action: Any) -> str:
    try:
        action()
        return "ok"
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:300]}"


def main() -> None:
    from pyspark.sql import SparkSession

    url, tk_zip, probe_zip = sys.argv[1:4]
    spark = SparkSession.builder.remote(url).getOrCreate()
    report: dict[str, Any] = {"spark": spark.version, "before": run(spark, arrow_probe)}
    spark.addArtifacts(tk_zip, pyfile=True)
    spark.addArtifacts(probe_zip, pyfile=True)
    report["after_arrow"] = run(spark, arrow_probe)
    report["after_pandas"] = run(spark, pandas_probe, "pandas")
    report["add_again"] = attempt(lambda: spark.addArtifacts(tk_zip, pyfile=True))
    from tablekeeper.spark import request_tally, session

    report["slots"] = request_tally.slots(spark)  # the driver's side: the client has tablekeeper
    report["is_connect"] = session.is_connect(spark)
    other = SparkSession.builder.remote(url).create()  # a second session of the same server
    report["other_session"] = run(other, arrow_probe)
    other.stop()
    spark.stop()
    print("PROBE " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
