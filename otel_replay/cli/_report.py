"""``agent-replay report ...``: the report's JSON Schema, and a JSON report as an HTML page."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from otel_replay._files import write_output
from otel_replay.cli._common import (
    StoreOption,
    err_console,
    open_store,
    print_json,
    shown,
    user_errors,
)
from otel_replay.cli._values import PlainValuesCommand, PlainValuesGroup
from otel_replay.errors import NotFoundError, StoreError

report_app = typer.Typer(
    cls=PlainValuesGroup,
    help="The attribution report: its format, and as a page.",
    no_args_is_help=True,
)


@report_app.command("schema", cls=PlainValuesCommand)
def schema_command(
    sweep: Annotated[
        bool,
        typer.Option("--sweep", help="The sweep report's (agent-replay sweep --out) instead."),
    ] = False,
) -> None:
    """Print the JSON Schema of the attribution report."""
    if sweep:
        from otel_replay.report import SWEEP_SCHEMA

        print_json(SWEEP_SCHEMA)
        return
    from otel_replay.report import REPORT_SCHEMA

    print_json(REPORT_SCHEMA)


@report_app.command("html", cls=PlainValuesCommand)
def html_command(
    report: Annotated[Path, typer.Argument(help="A JSON report (attribute --out).")],
    out: Annotated[Path, typer.Option("--out", help="Write the page here (- for stdout).")] = Path(
        "report.html"
    ),
    store: StoreOption = None,
) -> None:
    """Write a JSON report as one self-contained HTML page, with its run's steps from the store."""
    from otel_replay.report import html_report, read_report

    with user_errors():
        data = read_report(report.read_bytes(), str(report))
        run = None
        try:
            with open_store(store) as db:
                run = db.get(data["trajectory_id"])
        except (StoreError, NotFoundError) as exc:
            err_console.print(
                f"[yellow]warning:[/] the run's steps are not shown ({shown(str(exc))}); "
                "the page holds the report alone"
            )
        write_output(out, html_report(data, run).encode())
    if str(out) != "-":
        err_console.print(f"HTML report written to {shown(str(out))}")
