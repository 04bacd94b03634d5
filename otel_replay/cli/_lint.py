"""``agent-replay lint``: trace files checked for replayability, nothing imported.

Exit 1 when a run cannot be attributed (``not-replayable``; with ``--fail-on partial``, also when a
run lacks anything), so a team can gate its instrumentation in CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from otel_replay.cli._common import (
    JsonOption,
    console,
    display_path,
    plural,
    print_json,
    printable,
    trajectory_table,
    user_errors,
)
from otel_replay.importers import Format, ReadOptions
from otel_replay.importers._lint import LintedRun, lint_file
from otel_replay.replayable import ReplayabilityVerdict

#: How many reasons are listed under each run that has some (``--json`` lists them all).
_REASONS = 10


def lint_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATHS...",
            help="Trace files or directories (searched with their subfolders).",
            exists=True,
            show_default=False,
        ),
    ],
    format: Annotated[
        Format,
        typer.Option(
            "--format",
            metavar="FORMAT",
            help=f"Input format: {', '.join(f.value for f in Format)}.",
        ),
    ] = Format.AUTO,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            metavar="VERDICT",
            help="Exit 1 when a run is not-replayable (the default: it cannot be attributed), or "
            "with partial, when a run lacks anything.",
        ),
    ] = ReplayabilityVerdict.NOT_REPLAYABLE.value,
    json: JsonOption = False,
) -> None:
    """Check trace files for what replay and attribution need (model calls' input messages, tool
    calls' arguments and results, values not cut by a length limit), without importing them. Exit
    1 when a run cannot be attributed."""
    from otel_replay.cli._import_run import expand

    with user_errors():
        gate = _gate(fail_on)
        runs = [run for path in expand(paths) for run in lint_file(path, format, ReadOptions())]
    if json:
        print_json([run.to_record() for run in runs])
    else:
        _render(runs)
    if any(run.fails(gate) for run in runs):
        raise typer.Exit(1)


def _gate(text: str) -> ReplayabilityVerdict:
    from otel_replay.errors import ReplayError

    gates = (ReplayabilityVerdict.NOT_REPLAYABLE, ReplayabilityVerdict.PARTIAL)
    for gate in gates:
        if text == gate.value:
            return gate
    raise ReplayError(
        f"--fail-on {text}: the verdicts a run can fail on are {', '.join(g.value for g in gates)}"
    )


def _render(runs: list[LintedRun]) -> None:
    table = trajectory_table(
        f"{plural(len(runs), 'run')} checked", ("trajectory id", "steps", "replayability", "file")
    )
    for run in runs:
        verdict = run.replayability.verdict
        style = {"partial": "yellow", "not-replayable": "red"}.get(verdict.value)
        table.add_row(
            Text(printable(run.trajectory_id)),
            str(run.n_steps),
            Text(verdict.value, style=style or ""),
            Text(printable(display_path(str(run.path), spare=-40))),
        )
    console.print(table)
    for run in runs:
        reasons = run.replayability.reasons
        if not reasons:
            continue
        head = f"{printable(run.trajectory_id)} ({run.replayability.verdict.value}):"
        console.print(Text(head), highlight=False)
        for reason in reasons[:_REASONS]:
            console.print(Text(f"  {printable(str(reason))}"), highlight=False)
        if len(reasons) > _REASONS:
            console.print(Text(f"  … and {len(reasons) - _REASONS} more (--json lists them all)"))
    counts = {v: sum(1 for r in runs if r.replayability.verdict is v) for v in ReplayabilityVerdict}
    console.print(", ".join(f"{n} {v.value}" for v, n in counts.items()), highlight=False)
