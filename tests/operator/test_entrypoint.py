"""``tablekeeper operator`` (the image's entrypoint) starts, logs in with a kubeconfig, serves its
liveness endpoint and Prometheus metrics, logs as text or JSON lines (``--log-format``), and stops
on SIGTERM. Runs the CLI in a subprocess against the emulator."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.support.k8s import ApiServerEmulator, eventually

pytestmark = pytest.mark.k8s


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (loopback only)
            return response.status, response.read().decode()
    except OSError:
        return 0, ""


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_the_operator_command_runs(k8s: ApiServerEmulator, tmp_path: Path, log_format: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
        "clusters": [{"name": "emulator", "cluster": {"server": str(k8s.url).rstrip("/")}}],
        "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "tester", "namespace": "sales"}}],
        "users": [{"name": "tester", "user": {"token": "test-token"}}],
    }))
    health, metrics = _free_port(), _free_port()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    process = subprocess.Popen(
        [sys.executable, "-m", "tablekeeper.cli.main", "operator", "--namespace", "sales",
         f"--liveness=http://127.0.0.1:{health}/healthz", f"--metrics-port={metrics}", f"--log-format={log_format}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        status, body = await eventually(lambda: _get(f"http://127.0.0.1:{health}/healthz")[0] == 200
                                        and _get(f"http://127.0.0.1:{health}/healthz"), timeout=60, interval=0.2)
        assert status == 200 and "tablekeeper" in body
        status, text = await asyncio.to_thread(_get, f"http://127.0.0.1:{metrics}/metrics")
        assert status == 200 and "python_info" in text
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            output, _ = await asyncio.to_thread(process.communicate, timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = await asyncio.to_thread(process.communicate)
    assert process.returncode == 0, output
    assert "tablekeeper controllers started for 8 kinds" in output
    assert "authentication has failed" not in output.lower(), output  # the kubeconfig login worked
    if log_format == "json":
        lines = [json.loads(line) for line in output.splitlines() if line.strip()]
        assert lines and all({"timestamp", "level", "logger", "message"} <= set(line) for line in lines), output
        assert all(line["timestamp"].endswith("Z") for line in lines)
        assert any(line["logger"] == "tablekeeper.operator.main" and line["level"] == "INFO" for line in lines)
    else:
        assert " INFO tablekeeper.operator.main: tablekeeper controllers started" in output
