"""MkDocs hook: the CLI reference page, written from the ``agent-replay`` Typer app at build time.

The page ``reference/cli.md`` holds a placeholder; each build replaces it with every command and
subcommand as the app builds it (its usage line, its help, its arguments and options with their
defaults), so the reference cannot drift from ``--help``. The app's commands are built lazily
(``otel_replay.cli._commands``): reading a name from the group's ``commands`` table builds that
command the way running it would, so the page shows the real commands, not their summaries.

Help texts are Rich markup, as Typer renders them in ``rich`` markup mode; they are turned into the
plain text the terminal shows, then escaped for Markdown, so a bracket or an underscore in a help
text is shown as it is.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer
from rich.text import Text
from typer.core import TyperGroup

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

__all__ = ["PAGE", "PLACEHOLDER", "on_page_markdown", "render"]

#: The page the hook writes into, and the line in it that the reference replaces.
PAGE = "reference/cli.md"
PLACEHOLDER = "<!-- cli-reference -->"

_PROGRAM = "agent-replay"
# what Python-Markdown (and its tables extension) reads as markup anywhere in a line, and what it
# reads as markup only at the start of one (a heading, a list item, a quote, a numbered item)
_INLINE_SPECIALS = re.compile(r"([\\`*_{}\[\]|])")
_LINE_START = re.compile(r"^(\s*)([#>+-]|\d+(?=[.)]))", re.MULTILINE)

# an epilog's "Example: agent-replay show incident-fail" (one command, on one line)
_EXAMPLE = re.compile(r"(?P<label>Examples?):\s*(?P<command>[^\n]+)")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs event: fill the CLI reference page; leave every other page alone."""
    if page.file.src_uri != PAGE:
        return markdown
    if PLACEHOLDER not in markdown:
        # a page without the placeholder would build, silently without its reference
        raise ValueError(f"{PAGE} has no {PLACEHOLDER!r} line for the CLI reference to go in")
    return markdown.replace(PLACEHOLDER, render())


def render() -> str:
    """The reference of the whole ``agent-replay`` command, as Markdown."""
    from otel_replay.cli import app

    group = typer.main.get_command(app)
    root = click.Context(group, info_name=_PROGRAM, **group.context_settings)
    return "\n".join(_command(group, root, level=2)).rstrip() + "\n"


def _command(command: click.Command, ctx: click.Context, level: int) -> list[str]:
    """The command's section, in the order of its ``--help``, then its subcommands' sections."""
    mode = _markup_mode(ctx)
    lines = [f"{'#' * level} {escape(ctx.command_path)}", ""]
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    lines += ["```text", usage, "```", ""]
    lines += _help(command.help or "", mode)
    lines += _parameters(command, ctx)
    # each built here, as running it would build it (not the summary the lazy group lists)
    subcommands: dict[str, click.Command] = {}
    if isinstance(command, TyperGroup):
        subcommands = {name: command.commands[name] for name in command.list_commands(ctx)}
    if subcommands:
        lines += ["Commands:", ""]
        for name, sub in subcommands.items():
            summary = next(iter(_help(sub.help or "", mode)), "")
            summary = "" if summary.startswith("```") else summary  # an example, not a line
            lines.append(f"* [`{name}`](#{_anchor(ctx, name)}): {summary}")
        lines.append("")
    lines += _epilog(command.epilog or "", mode)
    for name, sub in subcommands.items():
        sub_ctx = click.Context(sub, info_name=name, parent=ctx, **sub.context_settings)
        lines += _command(sub, sub_ctx, min(level + 1, 6))
    return lines


def _anchor(ctx: click.Context, name: str) -> str:
    # the id the toc extension gives the subcommand's heading ("agent-replay report html")
    return "-".join([*ctx.command_path.split(), name]).lower()


def _markup_mode(ctx: click.Context) -> str | None:
    while ctx.parent is not None:
        ctx = ctx.parent
    return getattr(ctx.command, "rich_markup_mode", None)


def _help(text: str, markup_mode: str | None) -> list[str]:
    """The help's paragraphs: a ``\\b`` paragraph or an indented one (an example) as a code block,
    every other one as text, its line breaks joined as ``--help`` joins them."""
    text = inspect.cleandoc(text).partition("\f")[0]
    lines: list[str] = []
    for paragraph in (p for p in text.split("\n\n") if p.strip()):
        verbatim = paragraph.startswith("\b")
        body = paragraph.lstrip("\b").strip("\n")
        indented = all(line.startswith((" ", "\t")) for line in body.splitlines() if line)
        if verbatim or indented:
            block = inspect.cleandoc(_plain(body, markup_mode))
            lines += ["```text", block, "```", ""]
        else:
            lines += [escape(_plain(" ".join(body.split()), markup_mode)), ""]
    return lines


def _epilog(text: str, markup_mode: str | None) -> list[str]:
    """What ``--help`` ends with: an ``Example: COMMAND`` line as the command in a code block (to
    copy), anything else as help text."""
    lines: list[str] = []
    for paragraph in (p for p in inspect.cleandoc(text).split("\n\n") if p.strip()):
        example = _EXAMPLE.fullmatch(_plain(paragraph.strip(), markup_mode))
        if example is None:
            lines += _help(paragraph, markup_mode)
        else:
            lines += [f"{example['label']}:", "", "```text", example["command"], "```", ""]
    return lines


def _parameters(command: click.Command, ctx: click.Context) -> list[str]:
    mode = _markup_mode(ctx)
    # the arguments, then the options in their --help panels (otel_replay.cli._panels), in order
    rows: dict[str, list[str]] = {"Arguments": []}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx) if not getattr(param, "hidden", False) else None
        if record is None:
            continue
        names, described = record
        own = getattr(param, "help", None) or ""
        # click's record is the help, then the extras ([default: …; required]) two spaces after
        extras = described[len(own) :].strip() if described.startswith(own) else described
        words = " ".join(own.split())
        cell = escape(_plain(words, mode))
        if extras:  # "[env var: X; default: 50; x>=0]", each shown apart as --help shows them
            parts = extras.removeprefix("[").removesuffix("]").split("; ")
            cell = " ".join([cell, *(escape(f"[{part}]") for part in parts)]).strip()
        panel = getattr(param, "rich_help_panel", None) or "Options"
        kind = "Arguments" if param.param_type_name == "argument" else panel
        rows.setdefault(kind, []).append(f"| {_code(names)} | {cell} |")
    lines: list[str] = []
    for kind, body in rows.items():
        if body:
            column = "Argument" if kind == "Arguments" else "Option"
            lines += [f"{kind}:", "", f"| {column} | Description |", "| --- | --- |"]
            lines += [*body, ""]
    return lines


def _plain(text: str, markup_mode: str | None) -> str:
    """The text the terminal shows: Rich markup read as Typer reads it in ``rich`` mode."""
    if markup_mode == "rich":
        return Text.from_markup(text).plain
    return text


def _code(text: str) -> str:
    """``text`` as a code span, fenced with more backticks than it holds; a pipe stays a pipe
    because the tables extension leaves pipes inside code spans alone."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def escape(text: str) -> str:
    """``text`` shown as it is in Markdown: specials backslash-escaped, ``&`` and ``<`` as
    entities (so nothing reads as HTML)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;")
    text = _INLINE_SPECIALS.sub(r"\\\1", text)
    return _LINE_START.sub(_escape_start, text)


def _escape_start(match: re.Match[str]) -> str:
    space, mark = match.groups()
    if mark.isdigit():  # "1." starts a numbered list: escape the dot after it instead
        return f"{space}{mark}\\"
    return f"{space}\\{mark}"
