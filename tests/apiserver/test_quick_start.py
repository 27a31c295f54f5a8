"""The quick start of docs/operator.md, command by command, on the real API server: the block
after ``<!-- quick-start -->`` is read from the docs and run as written (``kubectl`` with the
test server's kubeconfig, ``tablekeeper`` through its CLI); only ``scripts/k8s-testenv`` (the
session's server is already up), ``tablekeeper operator &`` (the harness's operator, with the
chart's RBAC) and the final ``kill``/``stop`` are the harness's own. Every object the examples
create ends Ready; the seconds from the catalog's Ready to its children's are printed (bounded
by ``bench/operator_reactions.py``, never asserted)."""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner

from tablekeeper.cli.main import cli
from tests.apiserver.harness import RealHarness
from tests.support.k8s import REPO_ROOT

DOCS = REPO_ROOT / "docs" / "operator.md"
NAMESPACE = "tablekeeper-demo"


def quick_start_commands() -> list[str]:
    text = DOCS.read_text()
    block = text[text.index("<!-- quick-start -->"):]
    body = re.search(r"```sh\n(.*?)```", block, re.S)
    assert body is not None
    return [line.split("  #")[0].strip() for line in body.group(1).splitlines() if line.strip()]


def ready_times(h: RealHarness, kinds: tuple[str, ...]) -> dict[tuple[str, str], str]:
    """(kind, name) -> lastTransitionTime of Ready=True, for every object of ``kinds``; asserts every one is Ready."""
    out = {}
    for kind in kinds:
        for body in h.all(kind, NAMESPACE):
            ready = next((c for c in body["status"].get("conditions") or () if c["type"] == "Ready"), None)
            assert ready is not None and ready["status"] == "True", (kind, body["metadata"]["name"], body["status"])
            out[(kind, body["metadata"]["name"])] = ready["lastTransitionTime"]
    return out


async def test_the_quick_start_ends_with_every_object_ready(real_harness: RealHarness, tmp_path: Path) -> None:
    h = real_harness
    h.namespaces.add(NAMESPACE)  # emptied afterwards
    h.config = replace(h.config, reconcile_interval=300.0, timer_idle=10.0, retry_base_delay=10.0,
                       retry_max_delay=600.0)  # the defaults: no periodic check comes to the rescue
    commands = quick_start_commands()
    assert any(c.startswith("tablekeeper demo") for c in commands) and any("wait" in c for c in commands)
    ran = 0
    t_applied = 0.0
    for command in commands:
        command = command.replace("/tmp/tablekeeper-demo", str(tmp_path / "tablekeeper-demo"))
        if command.startswith(("scripts/k8s-testenv", "eval ", "kill ")):
            continue  # the session's server; the harness stops its operator
        if command == "tablekeeper operator &":
            await h.start()
            continue
        args = shlex.split(command)
        if args[0] == "tablekeeper":
            result = await asyncio.to_thread(CliRunner().invoke, cli, args[1:], catch_exceptions=False)
            assert result.exit_code == 0, result.output
        else:
            assert args[0] == "kubectl", command
            if "apply" in args and not t_applied and "crds/" not in args:
                t_applied = time.monotonic()
            out = await asyncio.to_thread(h.testenv.kubectl, *args[1:], timeout=180)
            if "wait" in args:
                assert "condition met" in out.stdout, out.stdout + out.stderr
        ran += 1
    assert ran >= 8
    times = ready_times(h, ("PaimonCatalog", "PaimonTable", "PaimonTag", "PaimonBranch", "PaimonRetentionPolicy"))
    assert {name for kind, name in times if kind == "PaimonTag"} == {"baseline", "first-audit"}
    assert {name for kind, name in times if kind == "PaimonBranch"} == {"backfill"}
    assert {name for kind, name in times if kind == "PaimonTable"} == {"orders", "events"}
    catalog = times[("PaimonCatalog", "demo")]
    children = max(t for (kind, _), t in times.items() if kind in ("PaimonTable", "PaimonTag", "PaimonBranch"))
    for (kind, name), t in sorted(times.items(), key=lambda kv: kv[1]):
        print(f"  {t} {kind} {name}")
    print(f"\nquick start: catalog Ready at {catalog}, last child Ready at {children} "
          f"({time.monotonic() - t_applied:.1f} s since the first apply)")
