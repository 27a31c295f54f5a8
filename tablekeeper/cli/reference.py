"""The CLI reference of the docs site, rendered from the click command tree.

The docs build (``docs/hooks.py``) puts :func:`render_reference` into ``docs/cli-reference.md``,
so the page is every command's ``--help`` at the time of the build and cannot go stale. Not
imported by the CLI itself (start-up stays as ``tests/cli/test_startup.py`` asserts)."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["commands", "render_reference", "render_options", "anchor"]

#: The width click formats usage lines with (the CLI's own ``max_content_width``).
_WIDTH = 100


def commands(group: click.Group, prefix: str = "tablekeeper") -> Iterator[tuple[str, click.Command]]:
    """Every visible command under ``group``, depth first in name order, as ``(full name, command)``;
    groups come before their subcommands."""
    ctx = click.Context(group, info_name=prefix)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        full = f"{prefix} {name}"
        yield full, command
        if isinstance(command, click.Group):
            yield from commands(command, full)


def anchor(full_name: str) -> str:
    """The heading id MkDocs gives ``## tablekeeper tag create`` (its default slugify)."""
    return re.sub(r"[^\w]+", "-", full_name.lower()).strip("-")


def _escape(text: str) -> str:
    """Help text as Markdown prose: no accidental HTML, emphasis or links."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", text)


def _cell(text: str) -> str:
    return _escape(" ".join(text.split()))


def _code_cell(text: str) -> str:
    """``text`` as a code span inside a table cell (a ``|`` would end the cell)."""
    return "<code>" + text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("|", "&#124;") + "</code>"


def _description(help_text: str) -> list[str]:
    r"""click's help text as Markdown: paragraphs stay paragraphs, a ``\b`` block (kept as
    written by click) becomes a code block."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", help_text.strip()):
        lines = block.splitlines()
        if lines and lines[0].strip() == "\b":
            body = "\n".join(line.rstrip() for line in lines[1:])
            out += ["```text", _dedent(body), "```", ""]
        else:
            out += [_escape(" ".join(line.strip() for line in lines)), ""]
    return out


def _dedent(text: str) -> str:
    lines = text.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


def _options(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is not None:
            rows.append(f"| {_code_cell(record[0])} | {_cell(record[1])} |")
    return ["| Option | Description |", "|---|---|", *rows, ""] if rows else []


def _index(rows: list[tuple[str, str, click.Command]]) -> list[str]:
    """A table of commands: ``(label, full name, command)`` per row."""
    out = ["| Command | What it does |", "|---|---|"]
    for label, full, command in rows:
        out.append(f"| [{label}](#{anchor(full)}) | {_cell(command.get_short_help_str(limit=200))} |")
    return [*out, ""]


def _section(full_name: str, command: click.Command, ctx: click.Context) -> list[str]:
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    out = [f"## {full_name}", "", "```text", f"Usage: {usage}", "```", ""]
    out += _description(command.help or command.short_help or "")
    if isinstance(command, click.Group):
        subs = [(name, f"{full_name} {name}", sub) for name, sub in
                ((n, command.get_command(ctx, n)) for n in command.list_commands(ctx))
                if sub is not None and not sub.hidden]
        out += _index(subs)
    return out + _options(command, ctx)


def render_reference(group: click.Group, prefix: str = "tablekeeper") -> str:
    """The reference as Markdown: the program's description and options, an index of every
    command, then one section per command with its usage, description and options, as
    ``--help`` gives them."""
    root = click.Context(group, info_name=prefix, **{**group.context_settings, "max_content_width": _WIDTH,
                                                     "terminal_width": _WIDTH})
    listed = list(commands(group, prefix))
    out = [*_description(group.help or ""), *_options(group, root), *_index([(f, f, c) for f, c in listed])]
    contexts = {prefix: root}
    for full, command in listed:
        parent_name, name = full.rsplit(" ", 1)
        ctx = click.Context(command, info_name=name, parent=contexts[parent_name],
                            max_content_width=_WIDTH, terminal_width=_WIDTH)
        contexts[full] = ctx
        out += _section(full, command, ctx)
    return "\n".join(out).rstrip() + "\n"


def _model_field(model: type[BaseModel], path: str) -> FieldInfo:
    """The pydantic field behind a camelCase ``path`` such as ``snapshots.minRetained``."""
    head, _, rest = path.partition(".")
    for name, field in model.model_fields.items():
        if (field.alias or name) == head:
            if not rest:
                return field
            nested = [arg for arg in typing.get_args(field.annotation) or (field.annotation,)
                      if isinstance(arg, type) and issubclass(arg, BaseModel)]
            return _model_field(nested[0], rest)
    raise KeyError(f"{model.__name__} has no field {path!r}")


def _flags_naming(group: click.Group, key: str) -> list[str]:
    """``command --flag`` for every option whose help names the Paimon option ``key``."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(key)}(?![\w-])")
    found = []
    for full, command in commands(group):
        for param in command.params:
            if isinstance(param, click.Option) and param.help and pattern.search(param.help):
                found.append(f"{full.removeprefix('tablekeeper ')} {max(param.opts, key=len)}")
    return found


def render_options(group: click.Group) -> str:
    """The Paimon table options tablekeeper reads (and writes with ``enforcement: TableOptions``):
    one row per option with its retention field, the CLI flags that override it and the field's
    description, from ``core.policy.retention.PAIMON_OPTIONS`` and the models."""
    from tablekeeper.core.policy.specs import PAIMON_OPTIONS, RetentionSpec

    out = ["| Paimon table option | Retention field | CLI flag | Description |", "|---|---|---|---|"]
    for path, keys in PAIMON_OPTIONS.items():
        field = _model_field(RetentionSpec, path)
        option = "<br>".join(_code_cell(key) + (" (older name)" if i else "") for i, key in enumerate(keys))
        flags = "<br>".join(_code_cell(flag) for key in keys for flag in _flags_naming(group, key))
        out.append(f"| {option} | {_code_cell('retention.' + path)} | {flags} | {_cell(field.description or '')} |")
    return "\n".join(out) + "\n"
