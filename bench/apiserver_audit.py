"""Who wrote what: the real kube-apiserver's audit log of the bench, as a table of write causes.

``bench/operator_apiserver.py --audit`` starts the server with :data:`POLICY` (every create,
patch, update and delete of a ``tablekeeper.io`` object, request and response) and prints, for a
time window (the tags' way to Ready, the idle re-check), the writes grouped by client, object
kind, verb, answer and the fields the write changed. The fields come from the server's own
answers: each successful write's response is diffed against the previous response for the same
object, so a write that moved only ``status.kopf.progress`` or one condition's timestamp shows
as exactly that. Refused writes (409, 422) list the fields they tried to send.

Why an audit log and not the request metrics: ``apiserver_request_total`` counts, but cannot say
which write was the extra one; the audit log is the server's record of each request, nothing in
this process sits between the operator and the server.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["POLICY", "Write", "write_policy", "read", "table"]

POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: RequestResponse
  verbs: [create, patch, update, delete]
  resources: [{group: tablekeeper.io}]
- level: None
"""

#: Metadata the server moves on every write: never a cause.
_IGNORED = {"metadata.resourceVersion", "metadata.managedFields", "metadata.generation"}


@dataclass(frozen=True)
class Write:
    """One write request the server answered."""

    time: float  # epoch seconds (the server's stageTimestamp)
    client: str  # the user agent's product ("kopf", "python-requests", "kubectl")
    resource: str  # "paimontags" or "paimontags/status"
    verb: str
    code: int
    name: str
    changed: tuple[str, ...]  # field paths changed (successful) or sent (refused)


def write_policy(directory: Path) -> Path:
    """The audit policy file in ``directory``."""
    path = directory / "audit-policy.yaml"
    path.write_text(POLICY, encoding="utf-8")
    return path


def _paths(old: Any, new: Any, prefix: str) -> Iterator[str]:
    """Dotted paths where ``new`` differs from ``old`` (conditions by type, lists whole)."""
    if prefix in _IGNORED:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new)):
            yield from _paths(old.get(key), new.get(key), f"{prefix}.{key}" if prefix else str(key))
        return
    if prefix.endswith("conditions") and isinstance(new, list):
        before = {c.get("type"): c for c in old or () if isinstance(c, Mapping)}
        after = {c.get("type"): c for c in new if isinstance(c, Mapping)}
        for type_ in sorted(set(before) | set(after), key=str):
            yield from _paths(before.get(type_), after.get(type_), f"{prefix}[{type_}]")
        return
    if old != new:
        yield prefix


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def read(log: Path) -> list[Write]:
    """Every write in the audit log, with the fields it changed."""
    last: dict[tuple[str, str, str], Any] = {}  # (plural, namespace, name) -> the object as last answered
    out: list[Write] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        ref = entry.get("objectRef") or {}
        if entry.get("stage") != "ResponseComplete" or not ref.get("name") and entry.get("verb") != "create":
            continue
        plural = ref.get("resource", "")
        code = int((entry.get("responseStatus") or {}).get("code") or 0)
        response = entry.get("responseObject")
        name = ref.get("name") or ((entry.get("requestObject") or {}).get("metadata") or {}).get("name", "")
        key = (plural, ref.get("namespace", ""), name)
        if 200 <= code < 300 and isinstance(response, Mapping) and response.get("kind") != "Status":
            changed = tuple(_paths(last.get(key), response, "")) if key in last else ("(created)",)
            last[key] = response
        else:
            changed = tuple(_paths(None, entry.get("requestObject"), ""))
        agent = str(entry.get("userAgent") or "?").split("/")[0]
        out.append(Write(_epoch(entry["stageTimestamp"]), agent,
                         plural + (f"/{ref['subresource']}" if ref.get("subresource") else ""),
                         entry.get("verb", ""), code, name, changed))
    return out


def table(writes: Iterable[Write], start: float, end: float, *, top: int = 25) -> str:
    """Writes within ``[start, end)`` grouped by client, resource, verb, code and changed fields."""
    groups: Counter[tuple[str, str, str, int, str]] = Counter()
    for w in writes:
        if start <= w.time < end:
            groups[(w.client, w.resource, w.verb, w.code, ", ".join(w.changed) or "(nothing)")] += 1
    lines = [f"  {n:6d}  {client} {verb} {resource} {code}: {fields}"
             for (client, resource, verb, code, fields), n in groups.most_common(top)]
    if len(groups) > top:
        lines.append(f"  ... {sum(n for _, n in groups.most_common()[top:])} more in {len(groups) - top} groups")
    return "\n".join(lines) or "  (no writes)"
