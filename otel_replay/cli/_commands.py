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
import inspect
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from otel_replay.cli._panels import arrange, as_flag
from otel_replay.cli._values import PlainValuesCommand, convert_param, convert_plain_values

try:  # typer vendors click from 0.20 on; earlier it depends on click itself
    from typer import _click as click
except ImportError:  # pragma: no cover - older typer
    import click  # type: ignore[no-redef,import-not-found,unused-ignore]

__all__ = ["COMMANDS", "EXAMPLE", "SUBCOMMAND_EXAMPLES", "LazyCommand", "LazyGroup", "reflow"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a command is defined (a function, or a Typer app for a group of commands), the line
    ``--help`` lists it with, and the example its own ``--help`` ends with."""

    module: str
    attribute: str
    summary: str
    example: str


def _command(module: str, attribute: str, summary: str, example: str) -> LazyCommand:
    return LazyCommand(f"otel_replay.cli.{module}", attribute, summary, example)


#: What ``agent-replay --help`` ends with: the first command a newcomer runs.
EXAMPLE = "agent-replay import sample_traces/incident.steps.jsonl"

_TOOLS = "--resamplers examples/incident/tools.py"
_AGENT = "--agent examples/incident/agent.py:investigate"

#: Every command in the order ``--help`` lists them. Each example runs as written from the
#: repository's root once the bundled samples are imported, in this order (``report html`` reads
#: the report ``attribute`` writes); ``tests/test_cli_help.py`` runs them.
COMMANDS: dict[str, LazyCommand] = {
    "import": _command(
        "_import",
        "import_command",
        "Import trace files (OTLP, Jaeger, Zipkin, MLflow, LangSmith, Datadog, Langfuse, native "
        "JSONL) into the store; or the traces of a Phoenix project, an MLflow experiment or a "
        "Jaeger service (phoenix://, mlflow://, jaeger://HOST:PORT/NAME).",
        "agent-replay import sample_traces/incident.otlp.jsonl",
    ),
    "lint": _command(
        "_lint",
        "lint_command",
        "Check trace files, or stored runs, for what replay and attribution need (model calls' "
        "input messages, tool calls' arguments and results, values not cut by a length limit), "
        "without importing anything. Exit 1 when a run cannot be attributed.",
        "agent-replay lint sample_traces",
    ),
    "list": _command(
        "_browse",
        "list_command",
        "List the runs in the store, newest first, a page at a time.",
        "agent-replay list --where failed",
    ),
    "show": _command(
        "_browse",
        "show_command",
        "Show one trajectory step by step (--json: the whole trajectory, and its identity).",
        "agent-replay show incident-fail",
    ),
    "export": _command(
        "_export",
        "export_command",
        "Export trajectories (native JSONL or OTLP traces, both re-importable), all their steps "
        "(Parquet), or one recorded run as a pytest regression test (with its recording beside "
        "it).",
        "agent-replay export incident-fail --out incident-fail.jsonl",
    ),
    "score": _command(
        "_score",
        "score_command",
        "Score stored runs with a verifier and keep each outcome with the verifier that gave it "
        "(runs that arrived as traces often have none); runs with an outcome are skipped unless "
        "--force.",
        "agent-replay score --all --success-if v841",
    ),
    "attribute": _command(
        "_attribute",
        "attribute_command",
        "Attribute a failed run to the step where its failure became inevitable; or many runs.",
        f"agent-replay attribute incident-fail {_TOOLS} --out report.json",
    ),
    "sweep": _command(
        "_sweep",
        "sweep_command",
        "Inject each fault at each chosen step of a run and estimate how often the run then "
        "fails: which single fault breaks a passing run, which would not have mattered to a "
        "failing one.",
        f"agent-replay sweep incident-fail {_TOOLS} --success-if v841 --max-rollouts 8",
    ),
    "blame": _command(
        "_blame",
        "blame_command",
        "Add up the stored attribution reports by step (kind, name, argument names): how often "
        "each step was the Point of Commitment, its mean attribution, inconclusive runs, repairs.",
        "agent-replay blame",
    ),
    "record": _command(
        "_live",
        "record_command",
        "Run an agent live, store the recorded trajectory, print its id. Each step is stored as "
        "it completes: a run killed half-way is kept up to its last whole step (agent-replay "
        "resume continues it).",
        f"agent-replay record {_AGENT} --verifier examples/incident/agent.py:outcome",
    ),
    "replay": _command(
        "_live",
        "replay_command",
        "Re-run an agent with its recorded outputs served and check it does exactly the same.",
        "agent-replay replay incident-fail",
    ),
    "fork": _command(
        "_live",
        "fork_command",
        "Hold the steps before --at, change it (--do, --observe, --fault, --remove), continue, store the "
        "fork; with --otlp-endpoint, also send it out as OTLP, linked to the run it forks.",
        f"agent-replay fork incident-fail --at 2 --fault empty {_TOOLS}",
    ),
    "resume": _command(
        "_resume",
        "resume_command",
        "Continue a run that ended early (killed, or its agent raised): its recorded steps are "
        "served, nothing of them runs again, and the agent goes on live from there. Stores the "
        "result as a new run linked to the original (with --otlp-endpoint, also sent out as "
        "OTLP).",
        f"agent-replay resume d16af222 {_AGENT} --verifier examples/incident/agent.py:outcome",
    ),
    "diff": _command(
        "_live",
        "diff_command",
        "Where two runs first part, what each returned there, and how each ended.",
        "agent-replay diff incident-fail incident-pass",
    ),
    "serve": _command(
        "_serve",
        "serve_command",
        "Receive traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip or not) into "
        "the store: point OTEL_EXPORTER_OTLP_ENDPOINT at it. Runs until Ctrl-C or SIGTERM.",
        "agent-replay serve --port 0",
    ),
    "ui": _command(
        "_ui",
        "ui_command",
        "Browse the store in a web browser: the runs (filter, sort), each run's steps and span "
        "tree, its stored attribution reports, two runs compared. Read-only; opens no browser "
        "by itself. Runs until Ctrl-C or SIGTERM.",
        "agent-replay ui --port 0",
    ),
    "report": _command(
        "_report",
        "report_app",
        "The attribution report: its format, and as a page.",
        "agent-replay report schema",
    ),
    "init": _command(
        "_init",
        "init_command",
        "Write an agent-replay.toml: how to re-run the agent and the question's defaults, from "
        "what a run remembers (the code it was recorded or last attributed with) or from "
        "questions asked here. Every command reads it from then on; flags still win.",
        "agent-replay init incident-fail",
    ),
}

#: The examples of the commands inside a group, by their path below ``agent-replay``.
SUBCOMMAND_EXAMPLES: dict[str, str] = {
    "report schema": "agent-replay report schema",
    "report html": "agent-replay report html report.json --out report.html",
}


def reflow(help_text: str | None) -> str | None:
    """The help with each paragraph's lines joined: docstrings wrap at the source's width, and
    Typer's rich mode keeps a single line break where it is (so the help wraps at the terminal's
    width instead). A paragraph Typer keeps as it is (starting with a backspace) stays so."""
    if help_text is None:
        return None
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def _finish(command: click.Command, path: str, example: str) -> click.Command:
    """Reflow the help of the command and of the commands inside it, end each with its example,
    and place its options in their panels."""
    arrange(command, path)
    command.help = reflow(command.help)
    command.short_help = None if command.help is None else command.help.split("\n\n")[0]
    command.epilog = f"Example: {example}"
    for name, inner in getattr(command, "commands", {}).items():
        _finish(inner, f"{path} {name}", SUBCOMMAND_EXAMPLES[f"{path} {name}"])
    return command


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
        arrange(self, "")
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
        as_flag(option)
        return option

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if any(arg == "--config" or arg.startswith("--config=") for arg in args):
            from otel_replay.cli._config import hoist_config  # `CMD ... --config FILE` too

            args = hoist_config(args, COMMANDS)
        return super().parse_args(ctx, args)

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
            return _finish(convert_plain_values(group), name, where.example)
        holder.command(name, cls=PlainValuesCommand)(defined)
        command = typer.main.get_command_from_info(
            holder.registered_commands[0],
            pretty_exceptions_short=self.pretty_exceptions_short,
            rich_markup_mode=self.rich_markup_mode,
        )
        return _finish(convert_plain_values(command), name, where.example)
