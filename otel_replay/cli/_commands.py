"""The commands of ``agent-replay``, each loaded when it runs.

Typer builds a command's parameters, a pydantic adapter for each, when it builds the command, and
the modules behind the commands import rich, the store, the engine's settings and the HTTP client.
Building all fifteen commands to print ``agent-replay --help`` or to run ``list`` took more than
the rest of start-up together, so the group here knows each command by name, where it is defined
and the one-line summary ``--help`` lists, and builds a command only when it is asked for it.

The summaries are the first paragraph of each command's help as Typer renders it;
``tests/test_cli_startup.py`` checks each against its command, so the listing cannot drift from
the commands' own help.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from otel_replay.cli._values import PlainValuesCommand, convert_param, convert_plain_values

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

__all__ = ["COMMANDS", "LazyCommand", "LazyGroup"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a command is defined (a function, or a Typer app for a group of commands) and the
    line ``--help`` lists it with."""

    module: str
    attribute: str
    summary: str


def _command(module: str, attribute: str, summary: str) -> LazyCommand:
    return LazyCommand(f"otel_replay.cli.{module}", attribute, summary)


#: Every command in the order ``--help`` lists them.
COMMANDS: dict[str, LazyCommand] = {
    "import": _command(
        "_import",
        "import_command",
        "Import OTLP JSON / JSON Lines / protobuf files or native JSONL into the store; or the\n"
        "traces of a Phoenix project (phoenix://HOST:PORT/PROJECT).",
    ),
    "list": _command(
        "_browse", "list_command", "List the runs in the store, newest first, a page at a time."
    ),
    "show": _command(
        "_browse",
        "show_command",
        "Show one trajectory step by step (``--json``: the whole trajectory, and its identity).",
    ),
    "export": _command(
        "_export",
        "export_command",
        "Export trajectories (native JSONL, re-importable), all their steps (Parquet), or one\n"
        "recorded run as a pytest regression test (with its recording beside it).",
    ),
    "attribute": _command(
        "_attribute",
        "attribute_command",
        "Attribute a failed run to the step where its failure became inevitable; or many runs.",
    ),
    "blame": _command(
        "_blame",
        "blame_command",
        "Add up the stored attribution reports by step (kind, name, argument names): how often "
        "each\nstep was the Point of Commitment, its mean attribution, inconclusive runs, repairs.",
    ),
    "record": _command(
        "_live",
        "record_command",
        "Run an agent live, store the recorded trajectory, print its id. Each step is stored as "
        "it\ncompletes: a run killed half-way is kept up to its last whole step (`resume` "
        "continues it).",
    ),
    "replay": _command(
        "_live",
        "replay_command",
        "Re-run an agent with its recorded outputs served and check it does exactly the same.",
    ),
    "fork": _command(
        "_live",
        "fork_command",
        "Hold the steps before --at, change it (--do, --observe, --fault), continue, store the "
        "fork;\nwith --otlp-endpoint, also send it out as OTLP, linked to the run it forks.",
    ),
    "resume": _command(
        "_resume",
        "resume_command",
        "Continue a run that ended early (killed, or its agent raised): its recorded steps are\n"
        "served, nothing of them runs again, and the agent goes on live from there. Stores the "
        "result\nas a new run linked to the original (with --otlp-endpoint, also sent out as "
        "OTLP).",
    ),
    "diff": _command(
        "_live",
        "diff_command",
        "Where two runs first part, what each returned there, and how each ended.",
    ),
    "serve": _command(
        "_serve",
        "serve_command",
        "Receive traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip or not) into "
        "the\nstore: point OTEL_EXPORTER_OTLP_ENDPOINT at it. Runs until Ctrl-C or SIGTERM.",
    ),
    "ui": _command(
        "_ui",
        "ui_command",
        "Browse the store in a web browser: the runs (filter, sort), each run's steps and span "
        "tree,\nits stored attribution reports, two runs compared. Read-only; opens no browser "
        "by itself.\nRuns until Ctrl-C or SIGTERM.",
    ),
    "report": _command(
        "_report", "report_app", "The attribution report: its format, and as a page."
    ),
}


class _CommandTable(MutableMapping[str, click.Command]):
    """A group's ``commands``: every name is there from the start, and a command is built the
    first time it is read (so code that walks ``group.commands`` sees the whole CLI)."""

    def __init__(self, group: LazyGroup) -> None:
        self._group = group
        self.built: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.built:
            if name not in COMMANDS:
                raise KeyError(name)
            self.built[name] = self._group.build(name, COMMANDS[name])
        return self.built[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.built[name] = command

    def __delitem__(self, name: str) -> None:
        del self.built[name]

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in self.built

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (name for name in self.built if name not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS) + sum(name not in COMMANDS for name in self.built)


class LazyGroup(TyperGroup):
    """The ``agent-replay`` group: its commands are built on first use, and its help lists the
    ones not built yet from their summaries."""

    #: What the app passes Typer for the commands' tracebacks (Typer's default, which
    #: ``otel_replay.cli.app`` keeps; a test checks the two agree).
    pretty_exceptions_short: ClassVar[bool] = True

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        convert_plain_values(self)  # its own options (no commands yet: they come below)
        self.commands = _CommandTable(self)
        self._listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        table = self.commands
        assert isinstance(table, _CommandTable)
        if self._listing and cmd_name in COMMANDS and cmd_name not in table.built:
            # the help's command list reads a command's name and first paragraph only
            return TyperCommand(name=cmd_name, help=COMMANDS[cmd_name].summary)
        return table.get(cmd_name)

    def get_help_option(self, ctx: click.Context) -> Any:
        option = super().get_help_option(ctx)
        convert_param(option)  # made when the command line is parsed, as in PlainValuesCommand
        return option

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the names, without building the commands as `.items()` would

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def build(self, name: str, where: LazyCommand) -> click.Command:
        """Import the command and build it as ``app.command(name)`` or ``app.add_typer(...,
        name=name)`` would have: through a Typer holding it alone, with this group's settings."""
        defined = getattr(importlib.import_module(where.module), where.attribute)
        holder = typer.Typer()
        if isinstance(defined, typer.Typer):
            holder.add_typer(defined, name=name)
            group = typer.main.get_group_from_info(
                holder.registered_groups[0],
                pretty_exceptions_short=self.pretty_exceptions_short,
                rich_markup_mode=self.rich_markup_mode,
                suggest_commands=self.suggest_commands,
            )
            return convert_plain_values(group)
        holder.command(name, cls=PlainValuesCommand)(defined)
        command = typer.main.get_command_from_info(
            holder.registered_commands[0],
            pretty_exceptions_short=self.pretty_exceptions_short,
            rich_markup_mode=self.rich_markup_mode,
        )
        return convert_plain_values(command)
