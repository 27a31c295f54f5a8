"""The generated reference pages of the docs site (tablekeeper/cli/reference.py): every visible
command and option of the click tree is in the CLI reference, hidden ones are not, and every
Paimon table option the retention models map is in the options table with its field."""

from __future__ import annotations

import click

from tablekeeper.cli.main import cli
from tablekeeper.cli.reference import anchor, commands, render_options, render_reference
from tablekeeper.core.policy.specs.retention import PAIMON_OPTIONS


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    page = render_reference(cli)
    listed = list(commands(cli))
    assert len(listed) == 38 and all(not command.hidden for _, command in listed)
    for full, command in listed:
        assert f"## {full}\n" in page and f"](#{anchor(full)})" in page, full
        for param in command.params:
            if isinstance(param, click.Option):
                longest = max(param.opts, key=len)
                assert (f"<code>{longest}" in page or f", {longest}" in page) != param.hidden, (full, longest)


def test_help_text_is_escaped_for_markdown() -> None:
    page = render_reference(cli)
    assert "else 10; &gt;= 1" in page  # expire --retain-min: a raw '>' could open a quote or a tag
    assert "(\\*.yaml, \\*.yml" in page  # apply -f: a raw '*' would start emphasis
    assert "TABLEKEEPER\\_WAREHOUSE" in page
    assert "[table&#124;json]" in page  # a '|' inside a table cell would split it


def test_every_mapped_table_option_is_in_the_options_reference() -> None:
    page = render_options(cli)
    for path, keys in PAIMON_OPTIONS.items():
        assert f"<code>retention.{path}</code>" in page
        for key in keys:
            assert f"<code>{key}</code>" in page
    assert "<code>expire --retain-min</code>" in page  # the flag that overrides snapshot.num-retained.min
