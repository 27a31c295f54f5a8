"""MkDocs hook: the generated pages of the docs site (mkdocs.yml ``hooks``).

A page holding ``<!-- generated: tablekeeper.cli.reference.render_reference -->`` gets the CLI
reference rendered from the click command tree there, ``render_options`` the table options;
both at build time, so they cannot go stale."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tablekeeper.cli import reference
from tablekeeper.cli.main import cli

_GENERATED: dict[str, Callable[[], str]] = {
    "<!-- generated: tablekeeper.cli.reference.render_reference -->": lambda: reference.render_reference(cli),
    "<!-- generated: tablekeeper.cli.reference.render_options -->": lambda: reference.render_options(cli),
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    for marker, render in _GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown
