"""``tablekeeper operator``: the Kubernetes operator, run standalone."""

from __future__ import annotations

import platform
import sys

import click

from tablekeeper.core import errors

__all__ = ["operator"]


@click.command("operator")
@click.option("--namespace", "-n", "namespaces", multiple=True, metavar="NS",
              help="Watch only this namespace (repeatable); default: the whole cluster.")
@click.option("--liveness", default="http://0.0.0.0:8080/healthz", show_default=True, metavar="URL",
              help="Health endpoint for liveness probes; '' disables it.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=65535), default=9090, show_default=True,
              help="Port of the Prometheus metrics server; 0 disables it.")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Log lines as text, or as one JSON object per line (timestamp, level, logger, message, object).")
def operator(namespaces: tuple[str, ...], liveness: str, metrics_port: int, log_format: str) -> None:
    """Run the Kubernetes operator (Kopf, standalone; needs the 'operator' extra and Python 3.11+)."""
    if sys.version_info < (3, 11):  # kopf 1.45 needs 3.11; the CLI and the Spark job run on 3.10
        raise errors.InvalidInputError(f"the operator needs Python 3.11 or newer, this is {platform.python_version()}",
                                       fix="run the operator image, or install tablekeeper[operator] on Python 3.11+")
    try:
        from tablekeeper.operator import main as operator_main
    except ImportError as e:
        raise errors.InvalidInputError(f"the operator cannot start: {e}",
                                       fix="install the operator extra: pip install 'tablekeeper[operator]'") from e
    operator_main.run(namespaces=namespaces, liveness_endpoint=liveness or None, metrics_port=metrics_port,
                      log_format="json" if log_format == "json" else "text")
