"""What a destructive command says about its trash run: the run id and until when it can be undone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import click

__all__ = ["with_trash_run", "iso", "kept_line"]


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def kept_line(table: str, run_id: str, keep_until_ms: int, files: int | None = None) -> str:
    """The line that names a trash run, until when it is kept and how to undo it."""
    count = f" ({files} file(s))" if files is not None else ""
    return (f"kept in the trash as run {run_id} until {iso(keep_until_ms)}{count}: "
            f"'tablekeeper undo {table} {run_id}' puts it back")


def with_trash_run(payload: Any, text: Callable[[], None]) -> tuple[Any, Callable[[], None]]:
    """``payload`` and ``text`` with the running command's trash run, if it moved anything."""
    from tablekeeper.core.safety import trash

    run = trash.active()
    if run is None or not run.started:
        return payload, text
    info = {"run": run.run_id, "keep_until": iso(run.keep_until_ms), "moved_files": run.moved,
            "moved_bytes": run.moved_bytes}
    if isinstance(payload, dict):
        payload = {**payload, "trash": info}

    def told() -> None:
        text()
        click.echo(kept_line(run.table or "TABLE", run.run_id, run.keep_until_ms))

    return payload, told
