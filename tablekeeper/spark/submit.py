"""A local ``spark-submit`` of the job: the ``--py-files`` zip of this package, the argv, and the
environment (a pip-installed pyspark's ``SPARK_HOME``, this interpreter for the workers)."""

from __future__ import annotations

import os
import sys
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tablekeeper.spark.job_request import JobRequest

__all__ = ["package_root", "build_pyfiles_zip", "local_spark_home", "local_submit_env", "default_spark_submit", "spark_submit_argv"]

def package_root() -> Path:
    """The directory holding the ``tablekeeper`` package."""
    return Path(__file__).resolve().parents[2]


def build_pyfiles_zip(dest_dir: str | os.PathLike[str]) -> str:
    """Zip the pure-Python ``tablekeeper`` package for ``--py-files`` / ``spark.submit.pyFiles``
    (executors import it from their ``userFiles-*`` copy). Third-party dependencies must already
    be on the executors' interpreter (spark-jobs.md §6.1)."""
    src = package_root() / "tablekeeper"
    target = Path(dest_dir) / "tablekeeper-pyfiles.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(src.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            zf.write(path, path.relative_to(src.parent).as_posix())
    return str(target)


def _main_file() -> str:
    return str(Path(__file__).resolve().with_name("__main__.py"))


def local_spark_home() -> str | None:
    """The Spark distribution bundled with the pip-installed pyspark (located, not imported)."""
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return str(Path(next(iter(spec.submodule_search_locations))).resolve())


def local_submit_env(python: str | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a local spark-submit process: ``SPARK_HOME`` of the bundled distribution
    (pip's ``spark-submit`` wrapper otherwise looks for it with whatever ``python`` is first on
    PATH) and ``PYSPARK_PYTHON``."""
    env = dict(os.environ if base is None else base)
    home = local_spark_home()
    if home and "SPARK_HOME" not in env:
        env["SPARK_HOME"] = home
    env.setdefault("PYSPARK_PYTHON", python or sys.executable)
    return env


def default_spark_submit() -> str:
    home = os.environ.get("SPARK_HOME") or local_spark_home()
    candidate = Path(home) / "bin" / "spark-submit" if home else None
    return str(candidate) if candidate is not None and candidate.exists() else "spark-submit"


def spark_submit_argv(request: JobRequest, *, spark_submit: str = "spark-submit", master: str = "local[*]",
                      py_files: Sequence[str] = (), python: str | None = None,
                      conf: Mapping[str, str] | None = None, app_name: str | None = None,
                      main_file: str | None = None) -> list[str]:
    """argv of a local ``spark-submit`` process running this request (client mode).

    ``python`` becomes ``spark.pyspark.python`` (default: this interpreter), so executors use
    the interpreter that has fastavro, fsspec and pyarrow (spark-jobs.md §6.1)."""
    settings: dict[str, str] = {
        "spark.pyspark.python": python or sys.executable,
        "spark.pyspark.driver.python": python or sys.executable,
        "spark.ui.showConsoleProgress": "false",
    }
    settings.update(conf or {})
    argv = [spark_submit, "--master", master, "--name", app_name or request.run_name or "tablekeeper"]
    for key, value in sorted(settings.items()):
        argv += ["--conf", f"{key}={value}"]
    if py_files:
        argv += ["--py-files", ",".join(py_files)]
    argv.append(main_file or _main_file())
    return argv + request.to_args()
