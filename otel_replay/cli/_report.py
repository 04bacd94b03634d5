"""``agent-replay report ...``: the report's JSON Schema."""

from __future__ import annotations

import typer

from otel_replay.cli._common import print_json

report_app = typer.Typer(help="The attribution report format.", no_args_is_help=True)


@report_app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the attribution report."""
    from otel_replay.report import REPORT_SCHEMA

    print_json(REPORT_SCHEMA)
