"""The ``agent-replay`` command: thin Typer commands that render what the library computes."""

from __future__ import annotations

import typer

from otel_replay.cli._attribute import attribute_command
from otel_replay.cli._browse import list_command, show_command
from otel_replay.cli._export import export_command
from otel_replay.cli._import import import_command
from otel_replay.cli._live import diff_command, fork_command, record_command, replay_command
from otel_replay.cli._report import report_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="agent-replay",
    help="Import agent traces from OpenTelemetry; replay, fork and attribute their failures.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # traces hold prompts and keys
    add_completion=False,
)
app.command("import")(import_command)
app.command("list")(list_command)
app.command("show")(show_command)
app.command("export")(export_command)
app.command("attribute")(attribute_command)
app.command("record")(record_command)
app.command("replay")(replay_command)
app.command("fork")(fork_command)
app.command("diff")(diff_command)
app.add_typer(report_app, name="report")


def main() -> None:
    app()
