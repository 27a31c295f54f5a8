"""The operator's logs: one line per action taken or refused, Kopf's watch noise at DEBUG, and the
two output formats (``--log-format text|json``).

Every action the controllers take or refuse is already an Event of the outcome
(:class:`~tablekeeper.operator.status.outcome.Outcome`); :func:`log_outcome` writes each Event as
a log line (``Normal`` at INFO, ``Warning`` at WARNING) naming the object and its table, so the
Events and the logs never disagree. The failure an outcome raises to Kopf is logged here too, at
WARNING when it retries and ERROR when it does not.

Kopf logs ``Handler 'tag-events' succeeded.`` after every handler that returns, also after a
reconcile that recorded a failure and chose not to retry: the line says only that the function
returned, and on a busy operator it is most of the log. :class:`KopfNoiseFilter` lowers those
lines to DEBUG, and Kopf's own line about a failure this module has already logged with its table.
Kopf's other lines (a handler that raised anything else, API errors) are left as they are.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, Literal

from tablekeeper.operator.cluster.view import View
from tablekeeper.operator.status.outcome import Outcome

__all__ = ["LOG_FORMATS", "LogFormat", "JsonFormatter", "TextFormatter", "KopfNoiseFilter", "configure",
           "install_filter", "log_outcome", "table_of"]

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("text", "json")

#: The logger of tablekeeper's per-object lines (not Kopf's ``kopf.objects``: with Kopf's log
#: posting on, its records would also become Events, doubling the ones the controllers post).
logger = logging.getLogger("tablekeeper.operator.objects")

_SUCCEEDED = re.compile(r"^(?:Handler|Timer|Daemon) '[^']+' succeeded\.$|^[A-Z][a-z]+ is processed: \d+ succeeded; 0 failed\.$")
_FAILED = re.compile(r"^(?:Handler|Timer|Daemon) '[^']+' failed (?:temporarily|permanently): (?P<text>.*)$", re.DOTALL)

#: The failure text last logged by :func:`log_outcome` per object uid, until Kopf logs it.
_logged_failures: dict[str, str] = {}
_lock = threading.Lock()


def _ref(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return {"kind": body.get("kind"), "namespace": meta.get("namespace"), "name": meta.get("name"),
            "uid": meta.get("uid")}


def table_of(body: Mapping[str, Any], outcome: Outcome | None = None, view: View | None = None) -> str | None:
    """The table an object is about, as users name it: ``db.table in <warehouse>`` once resolved
    (``status.table``) or found through the index (``view``), else the PaimonTable it refers to;
    None for objects of no table."""
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    namespace = (body.get("metadata") or {}).get("namespace")
    resolved = (outcome.fields.get("table") if outcome is not None else None) or status.get("table")
    if isinstance(resolved, Mapping) and resolved.get("database") and resolved.get("table"):
        return _named(resolved["database"], resolved["table"], resolved.get("warehouse"))
    if body.get("kind") == "PaimonTable" and spec.get("database") and spec.get("table"):
        return _named(spec["database"], spec["table"], _warehouse(view, namespace, spec))
    ref = spec.get("tableRef")
    if isinstance(ref, Mapping) and ref.get("name"):
        table = view.get("PaimonTable", namespace, str(ref["name"])) if view is not None else None
        if table is not None and table.spec.get("database") and table.spec.get("table"):
            return _named(table.spec["database"], table.spec["table"], _warehouse(view, namespace, table.spec))
        return f"PaimonTable {ref['name']}"
    return None


def _named(database: Any, table: Any, warehouse: Any) -> str:
    return f"{database}.{table}" + (f" in {warehouse}" if warehouse else "")


def _warehouse(view: View | None, namespace: str | None, table_spec: Mapping[str, Any]) -> str | None:
    """The warehouse of a PaimonTable's catalog, when the index has it."""
    ref = table_spec.get("catalogRef") or {}
    if view is None or not ref.get("name"):
        return None
    kind = str(ref.get("kind") or "PaimonCatalog")
    catalog = view.get(kind, None if kind.startswith("Cluster") else namespace, str(ref["name"]))
    warehouse = catalog.spec.get("warehouse") if catalog is not None else None
    return str(warehouse) if warehouse else None


def log_outcome(outcome: Outcome, body: Mapping[str, Any], view: View | None = None) -> None:
    """Log every Event of ``outcome`` and its failure, about the object of ``body`` (``view``:
    the index, to name the table of an object not resolved yet). A Warning Event that reports
    the failure itself is told in the failure's line, not twice."""
    ref = _ref(body)
    table = table_of(body, outcome, view)
    about = f"{ref['kind']}" + (f" of {table}" if table else "")
    extra = {"k8s_ref": ref}
    failure = outcome.failure
    folded: list[str] = []
    for event in outcome.events:
        if failure is not None and event.type == "Warning" and event.message.startswith(failure.message):
            folded.append(event.reason)
            continue
        level = logging.INFO if event.type == "Normal" else logging.WARNING
        logger.log(level, "%s: %s: %s", about, event.reason, event.message, extra=extra)
    if failure is not None:
        text = f"{failure.reason}: {failure.message}"
        head = "".join(f"{reason}: " for reason in folded if reason != failure.reason)
        if failure.temporary:
            logger.warning("%s: %s%s (retrying in %gs)", about, head, text, outcome.delay, extra=extra)
        else:
            logger.error("%s: %s%s (not retried until the spec changes; the periodic check looks again)",
                         about, head, text, extra=extra)
        if ref["uid"]:
            with _lock:
                _logged_failures[str(ref["uid"])] = text


class KopfNoiseFilter(logging.Filter):
    """On Kopf's object logger: lowers "Handler '...' succeeded." (and "... is processed: N
    succeeded; 0 failed.") to DEBUG, and Kopf's line about a failure :func:`log_outcome` has just
    logged for the same object. A lowered record is dropped unless the logger is enabled for DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING and record.levelno > logging.DEBUG:
            if _SUCCEEDED.match(record.getMessage()):
                return self._lower(record)
        elif record.levelno >= logging.WARNING:
            match = _FAILED.match(record.getMessage())
            uid = str((getattr(record, "k8s_ref", None) or {}).get("uid") or "")
            if match and uid:
                with _lock:
                    seen = _logged_failures.get(uid) == match.group("text")
                    if seen:
                        del _logged_failures[uid]
                if seen:
                    return self._lower(record)
        return True

    @staticmethod
    def _lower(record: logging.LogRecord) -> bool:
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def _where(record: logging.LogRecord) -> dict[str, str] | None:
    ref = getattr(record, "k8s_ref", None)
    if not isinstance(ref, Mapping) or not ref.get("name"):
        return None
    return {key: str(ref[key]) for key in ("kind", "namespace", "name") if ref.get(key)}


class TextFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger>: [namespace/name] message`` (the object as Kopf's ``k8s_ref``)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        where = _where(record)
        if where:
            ref = f"{where['namespace']}/{where['name']}" if where.get("namespace") else where["name"]
            head, sep, tail = text.partition(": ")
            return f"{head}{sep}[{ref}] {tail}" if sep else f"[{ref}] {text}"
        return text


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``timestamp`` (RFC 3339, UTC), ``level``, ``logger``, ``message``,
    ``object`` (``kind``, ``namespace``, ``name``) when the record is about one, ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
        line: dict[str, Any] = {"timestamp": stamp.replace("+00:00", "Z"), "level": record.levelname,
                                "logger": record.name, "message": record.getMessage()}
        where = _where(record)
        if where:
            line["object"] = where
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, default=str)


def configure(log_format: LogFormat, *, debug: bool = False) -> None:
    """Route all logs to stderr in ``log_format`` (INFO, or DEBUG with ``debug``) and put the
    noise filter on Kopf's object logger."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}: use one of {', '.join(LOG_FORMATS)}")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    logging.basicConfig(level=logging.DEBUG if debug else logging.INFO, handlers=[handler], force=True)
    install_filter()


def install_filter() -> None:
    """Put :class:`KopfNoiseFilter` on Kopf's object logger (once)."""
    kopf_objects = logging.getLogger("kopf.objects")
    if not any(isinstance(f, KopfNoiseFilter) for f in kopf_objects.filters):
        kopf_objects.addFilter(KopfNoiseFilter())
