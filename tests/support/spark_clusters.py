"""pytest plugin: Spark as users run it, for the tiers of ``tests/spark_versions``.

- :func:`spark_env` / :func:`project_env`: the Python environments of ``scripts/spark-envs``
  (pyspark 3.5 and 4.0 drivers, a CPython 3.10 driver with pyspark 3.5, and ``executor``: the
  runtime dependencies without pyspark or tablekeeper), and the project's own ``.venv`` (pyspark
  4.3). tablekeeper is installed in none of the script's environments: drivers and executors import
  it from the ``--py-files`` zip (``submit.build_pyfiles_zip``, pure Python: the C extensions are
  absent and the Python fallbacks run), as ``spark-submit --py-files`` users do.
- ``standalone_cluster``: a real standalone cluster from pyspark's own jars, a master and two
  workers (``--cores 1 --memory 1g``) in their own JVMs, whose executors are separate JVMs again;
  their Python is the ``executor`` environment.
- ``connect_server``: a Spark Connect server started by pyspark's ``sbin/start-connect-server.sh``
  (in the foreground, ``--wait``) on a free loopback port, ``local[2]``, its Python the
  ``executor`` environment.

Every daemon runs with a scrubbed environment (no ``PYTHONPATH``, its own ``SPARK_CONF_DIR``,
log and work directories under the session's temporary directory, not the checkout) and a working
directory outside the checkout, so nothing but a shipped artifact can make tablekeeper importable
on its executors. Each is started under a small supervisor that kills the daemon's process group
when its standard input closes, so a test session that dies leaves no JVM behind.

Setup failures (a script, a JVM that does not come up, a worker that never registers) fail the
test under ``CI=true`` and skip it elsewhere with one line (:func:`unavailable`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

import pytest

from tablekeeper.spark import submit
from tests.support.stores import free_port

__all__ = [
    "REPO",
    "SparkEnv",
    "SparkEnvError",
    "StandaloneCluster",
    "ConnectServer",
    "unavailable",
    "spark_env",
    "project_env",
    "build_envs",
    "clean_env",
    "run_checked",
    "spark_submit",
]

REPO = Path(__file__).resolve().parents[2]
SETUP = REPO / "scripts" / "spark-envs"
_START_TIMEOUT_S = 180.0
#: Light JVMs for the daemons and executors (as the other test JVMs: C1 only, serial GC).
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Variables a daemon or a spark-submit process keeps from the test's environment; everything else
#: (PYTHONPATH, a stray SPARK_HOME or PYSPARK_PYTHON, SPARK_REMOTE, ...) is dropped.
_KEPT_VARIABLES = ("PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "JAVA_HOME", "TZ")


class SparkEnvError(RuntimeError):
    """An environment, cluster or server of these tiers could not be set up (the message says why)."""


def unavailable(reason: str) -> NoReturn:
    """A Spark tier that cannot run here: fail under CI=true, skip elsewhere (one line)."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"Spark tier cannot run under CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


# -- environments -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SparkEnv:
    """One Python environment: its interpreter and, if it has pyspark, the Spark distribution
    pip installed with it (``SPARK_HOME`` = the ``pyspark`` package directory)."""

    name: str
    venv: Path
    pyspark: str | None
    python_version: str

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def spark_home(self) -> Path:
        if self.pyspark is None:
            raise SparkEnvError(f"environment {self.name} has no pyspark")
        major, minor = self.python_version.split(".")[:2]
        return self.venv / "lib" / f"python{major}.{minor}" / "site-packages" / "pyspark"

    @property
    def spark_submit(self) -> str:
        return str(self.spark_home / "bin" / "spark-submit")


def build_envs(names: Sequence[str]) -> dict[str, SparkEnv]:
    """Run ``scripts/spark-envs`` for ``names`` (idempotent; warm in well under a second) and
    return the environments it reports. Raises SparkEnvError with the script's last words."""
    try:
        out = subprocess.run(["bash", str(SETUP), *names], check=True, capture_output=True, text=True,
                             timeout=1800).stdout
    except subprocess.CalledProcessError as e:
        raise SparkEnvError(f"scripts/spark-envs {' '.join(names)} failed: {e.stderr.strip()[-300:]}") from e
    except (subprocess.TimeoutExpired, OSError) as e:
        raise SparkEnvError(f"scripts/spark-envs {' '.join(names)}: {e}") from e
    envs: dict[str, SparkEnv] = {}
    for line in out.splitlines():
        name, venv, pyspark, python_version = line.split()
        envs[name] = SparkEnv(name, Path(venv), None if pyspark == "-" else pyspark, python_version)
    missing = set(names) - set(envs)
    if missing:
        raise SparkEnvError(f"scripts/spark-envs printed no environment for {sorted(missing)}: {out!r}")
    return envs


def spark_env(name: str) -> SparkEnv:
    """The environment ``name`` of ``scripts/spark-envs``, or (CI: fail, elsewhere: skip)."""
    try:
        return build_envs([name])[name]
    except SparkEnvError as e:
        unavailable(str(e))


def project_env() -> SparkEnv:
    """The project's own environment (this interpreter, pyspark 4.3 from the ``spark`` extra)."""
    import pyspark

    venv = Path(sys.prefix)
    return SparkEnv("project", venv, pyspark.__version__, ".".join(map(str, sys.version_info[:3])))


def clean_env(spark_home: Path | str | None, conf_dir: Path, **extra: str) -> dict[str, str]:
    """A process environment with only :data:`_KEPT_VARIABLES` of this one, ``SPARK_HOME``, an
    empty ``SPARK_CONF_DIR`` of the test's (no spark-defaults.conf or spark-env.sh of the machine)
    and ``extra``."""
    env = {k: os.environ[k] for k in _KEPT_VARIABLES if k in os.environ}
    conf_dir.mkdir(parents=True, exist_ok=True)
    env["SPARK_CONF_DIR"] = str(conf_dir)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    if spark_home is not None:
        env["SPARK_HOME"] = str(spark_home)
    env.update(extra)
    return env


def run_checked(argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float = 600.0,
                what: str = "command") -> subprocess.CompletedProcess[str]:
    """Run ``argv``; a non-zero exit raises AssertionError with the tail of its output (a test
    failure, not a setup failure: the setup is the fixtures')."""
    proc = subprocess.run(list(argv), env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{what} exited {proc.returncode}:\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}")
    return proc


def spark_submit(env: SparkEnv, app: Path | str, args: Sequence[str] = (), *, cwd: Path,
                 master: str = "local[2]", executor_python: str | None = None, py_files: Sequence[str] = (),
                 conf: Mapping[str, str] | None = None, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
    """``spark-submit`` of ``env``'s distribution in client mode, the driver on ``env``'s Python and
    the executors on ``executor_python`` (default: the same), from ``cwd`` (outside the checkout)
    with a scrubbed environment. A non-zero exit fails the test with the output's tail."""
    python = executor_python or env.python
    settings = {
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": env.python,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        **(conf or {}),
    }
    argv = [env.spark_submit, "--master", master]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    if py_files:
        argv += ["--py-files", ",".join(py_files)]
    argv += [str(app), *args]
    process_env = clean_env(env.spark_home, cwd / "conf", PYSPARK_PYTHON=python, PYSPARK_DRIVER_PYTHON=env.python)
    return run_checked(argv, env=process_env, cwd=cwd, timeout=timeout, what=f"spark-submit ({env.name})")


def assert_lacks_tablekeeper(python: str, cwd: Path) -> None:
    """The executors' interpreter must not import tablekeeper by itself (from any directory)."""
    probe = subprocess.run([python, "-c", "import tablekeeper"], cwd=cwd, env=clean_env(None, cwd / "conf"),
                           capture_output=True, text=True, timeout=120)
    if probe.returncode == 0 or "No module named 'tablekeeper'" not in probe.stderr:
        raise SparkEnvError(f"{python} imports tablekeeper by itself (or fails otherwise): {probe.stderr[-300:]!r}")


# -- supervised daemons -------------------------------------------------------------------------
# Runs argv in its own session and kills that process group (the daemon and every JVM or Python
# worker it started) when stdin closes: at the fixture's stop, or when the test session dies.
_SUPERVISOR = r"""
import os, signal, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], start_new_session=True, stdin=subprocess.DEVNULL)
def stop():
    sys.stdin.read()
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=grace)
            os.killpg(child.pid, signal.SIGKILL)  # stragglers of the group (executor JVMs)
            return
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            return
threading.Thread(target=stop, daemon=True).start()
sys.exit(child.wait())
"""


@dataclass
class Daemon:
    """A supervised process with its log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, chars: int = 1500) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_daemon(name: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, log: Path) -> Daemon:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", _SUPERVISOR, *argv], env=dict(env), cwd=cwd,
                                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
    return Daemon(name, proc, log)


def _wait_for(what: str, ready: Any, daemons: Sequence[Daemon], timeout: float = _START_TIMEOUT_S) -> Any:
    """Poll ``ready()`` (a truthy value ends the wait) while every daemon lives."""
    deadline = time.monotonic() + timeout
    while True:
        for d in daemons:
            if not d.alive():
                raise SparkEnvError(f"{d.name} exited with {d.proc.returncode} while waiting for {what}:\n{d.tail()}")
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SparkEnvError(f"{what}: not ready after {timeout:.0f} s:\n"
                                + "\n".join(f"--- {d.name}\n{d.tail(600)}" for d in daemons))
        time.sleep(0.3)


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


# -- standalone cluster -------------------------------------------------------------------------
@dataclass
class StandaloneCluster:
    """A standalone master and ``workers`` workers of the distribution at ``spark_home``."""

    spark_home: Path
    executor_python: str
    workdir: Path
    workers: int = 2
    worker_cores: int = 1
    worker_memory: str = "1g"
    master_port: int = 0
    webui_port: int = 0
    daemons: list[Daemon] = field(default_factory=list)
    startup_s: float = 0.0

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def state(self) -> dict[str, Any]:
        """The master's JSON (``/json/``): workers, their state, cores, applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as r:
            doc: dict[str, Any] = json.load(r)
            return doc

    def _alive_workers(self) -> list[dict[str, Any]]:
        try:
            doc = self.state()
        except OSError:
            return []
        return [w for w in doc.get("workers", []) if w.get("state") == "ALIVE"]

    def start(self) -> StandaloneCluster:
        began = time.monotonic()
        self.master_port, self.webui_port = free_port(), free_port()
        spark_class = str(self.spark_home / "bin" / "spark-class")
        env = clean_env(self.spark_home, self.workdir / "conf",
                        SPARK_LOG_DIR=str(self.workdir / "logs"), SPARK_PID_DIR=str(self.workdir),
                        SPARK_DAEMON_MEMORY="512m", SPARK_DAEMON_JAVA_OPTS=DAEMON_JAVA_OPTS,
                        SPARK_LOCAL_DIRS=str(self.workdir / "local"))
        master = start_daemon("master", [spark_class, "org.apache.spark.deploy.master.Master",
                                         "--host", "127.0.0.1", "--port", str(self.master_port),
                                         "--webui-port", str(self.webui_port)],
                              env=env, cwd=self.workdir, log=self.workdir / "logs" / "master.log")
        self.daemons.append(master)
        _wait_for("the master's web UI", lambda: _port_open(self.webui_port) and _port_open(self.master_port),
                  [master])
        for i in range(self.workers):
            work = self.workdir / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            self.daemons.append(start_daemon(
                f"worker-{i}",
                [spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url,
                 "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                 "--cores", str(self.worker_cores), "--memory", self.worker_memory, "--work-dir", str(work)],
                env=env, cwd=work, log=self.workdir / "logs" / f"worker-{i}.log"))
        _wait_for(f"{self.workers} workers registered with the master",
                  lambda: len(self._alive_workers()) >= self.workers, self.daemons)
        self.startup_s = time.monotonic() - began
        return self

    def stop(self) -> None:
        for d in reversed(self.daemons):
            d.stop()
        self.daemons.clear()

    def submit_conf(self) -> dict[str, str]:
        """Settings a job on this cluster needs: the executors' Python, loopback addresses, one
        executor per worker, and no task before every executor has registered."""
        return {
            "spark.pyspark.python": self.executor_python,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.cores.max": str(self.workers * self.worker_cores),
            "spark.executor.cores": str(self.worker_cores),
            "spark.executor.memory": "768m",
            "spark.executor.extraJavaOptions": DAEMON_JAVA_OPTS,
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
        }


# -- Spark Connect server -----------------------------------------------------------------------
@dataclass
class ConnectServer:
    """``sbin/start-connect-server.sh --wait`` of the distribution at ``spark_home``."""

    spark_home: Path
    python: str
    workdir: Path
    master: str = "local[2]"
    port: int = 0
    daemon: Daemon | None = None
    startup_s: float = 0.0

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> ConnectServer:
        began = time.monotonic()
        self.port = free_port()
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.pyspark.python": self.python,
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
        }
        argv = [str(self.spark_home / "sbin" / "start-connect-server.sh"), "--wait", "--master", self.master]
        for key, value in conf.items():
            argv += ["--conf", f"{key}={value}"]
        env = clean_env(self.spark_home, self.workdir / "conf", SPARK_LOG_DIR=str(self.workdir / "logs"),
                        SPARK_PID_DIR=str(self.workdir), SPARK_LOCAL_DIRS=str(self.workdir / "local"),
                        SPARK_IDENT_STRING="tablekeeper-tests", PYSPARK_PYTHON=self.python)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.daemon = start_daemon("connect-server", argv, env=env, cwd=self.workdir,
                                   log=self.workdir / "logs" / "connect-server.log")
        _wait_for(f"the Spark Connect server on port {self.port}", lambda: _port_open(self.port), [self.daemon])
        self.startup_s = time.monotonic() - began
        return self

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def executor_env(tmp_path_factory: pytest.TempPathFactory) -> SparkEnv:
    """The executors' Python (runtime dependencies only), checked to lack tablekeeper."""
    env = spark_env("executor")
    try:
        assert_lacks_tablekeeper(env.python, tmp_path_factory.mktemp("executor-probe"))
    except SparkEnvError as e:
        unavailable(str(e))
    return env


@pytest.fixture(scope="session")
def pyfiles_zip(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The ``--py-files`` zip of this checkout's tablekeeper package (pure Python)."""
    return submit.build_pyfiles_zip(tmp_path_factory.mktemp("spark-versions-pyfiles"))


def _session_dir(prefix: str) -> str:
    """A directory outside the checkout (the executors' working directories live here)."""
    return tempfile.mkdtemp(prefix=f"tk-{prefix}-")


class _Service(Protocol):
    def start(self) -> Any: ...
    def stop(self) -> None: ...


_S = TypeVar("_S", bound=_Service)


def _serve(what: str, prefix: str, make: Callable[[Path], _S]) -> Iterator[_S]:
    """Start ``make(workdir)`` (CI: fail, elsewhere: skip when it cannot), yield it, stop it."""
    workdir = Path(_session_dir(prefix))
    service = make(workdir)
    try:
        try:
            service.start()
        except SparkEnvError as e:
            unavailable(f"{what} did not start: {e}")
        yield service
    finally:
        service.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def standalone_cluster(executor_env: SparkEnv) -> Iterator[StandaloneCluster]:
    """Master + two workers of the project's pyspark (4.3), executors on ``executor_env``."""
    yield from _serve("standalone cluster", "standalone",
                      lambda workdir: StandaloneCluster(project_env().spark_home, executor_env.python, workdir))


@pytest.fixture(scope="session")
def connect_server(executor_env: SparkEnv) -> Iterator[ConnectServer]:
    """A Spark Connect server of the project's pyspark (4.3), its Python ``executor_env``."""
    yield from _serve("Spark Connect server", "connect",
                      lambda workdir: ConnectServer(project_env().spark_home, executor_env.python, workdir))
