"""``agent-replay lint``: trace files checked for replayability, nothing imported; or stored runs,
named by id or chosen by ``--where``.

A target that exists as a path is a file or a directory; anything else is the id (or a unique
prefix) of a stored run. The store is opened, read-only, only when a run is looked up in it.

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
    StoreOption,
    console,
    display_path,
    open_store,
    plural,
    print_json,
    printable,
    trajectory_table,
    user_errors,
)
from otel_replay.errors import NotFoundError, SettingError
from otel_replay.importers import Format, LintedRun, ReadOptions, lint_file, lint_stored
from otel_replay.replayable import ReplayabilityVerdict
from otel_replay.store import default_store_path

#: How many reasons are listed under each run that has some (``--json`` lists them all).
_REASONS = 10


def lint_command(
    targets: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[PATHS|IDS]...",
            help="Trace files or directories (searched with their subfolders), or the ids (or "
            "unique prefixes) of stored runs: a path that exists is read as a file, anything "
            "else is looked up in the store.",
            show_default=False,
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            metavar="FILTER",
            help="Also check the stored runs that meet this filter, as list --where reads it "
            "(failed, 'format = otlp-json', id^ef28, ...).",
        ),
    ] = None,
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
    store: StoreOption = None,
) -> None:
    """Check trace files, or stored runs, for what replay and attribution need (model calls' input
    messages, tool calls' arguments and results, values not cut by a length limit), without
    importing anything. Exit 1 when a run cannot be attributed.

    A PATH that exists is a trace file or a folder of them; any other argument is a stored run's
    id or unique prefix, and --where checks the stored runs a filter chooses."""
    from otel_replay.cli._import_run import expand

    with user_errors():
        gate = _gate(fail_on)
        paths = [Path(t) for t in targets or () if Path(t).exists()]
        ids = [t for t in targets or () if not Path(t).exists()]
        if not paths and not ids and where is None:
            raise SettingError("lint needs trace files, stored run ids or --where FILTER")
        files = expand(paths) if paths else []
        runs = [run for path in files for run in lint_file(path, format, ReadOptions())]
        if ids or where is not None:
            runs += _stored(store, ids, where)
    if json:
        print_json([run.to_record() for run in runs])
    else:
        _render(runs)
    if any(run.fails(gate) for run in runs):
        raise typer.Exit(1)


def _stored(store: Path | None, ids: list[str], where: str | None) -> list[LintedRun]:
    """The stored runs ``ids`` names and ``where`` chooses, linted; an id that is neither a path
    nor a stored run says both."""
    path = store if store is not None else default_store_path()
    if ids and not path.exists():
        raise NotFoundError(
            f"{ids[0]} is no file or directory, and there is no store at {path} to look it up in"
        )
    with open_store(store) as db:
        for run_id in ids:
            try:
                db.resolve(run_id)
            except NotFoundError as error:
                if "ambiguous" in str(error):  # a prefix of several runs: say which
                    raise
                raise NotFoundError(
                    f"{run_id} is no file or directory, and no run in {db.path} has an id that "
                    "starts with it"
                ) from None
        return list(lint_stored(db, ids, where))


def _gate(text: str) -> ReplayabilityVerdict:
    gates = (ReplayabilityVerdict.NOT_REPLAYABLE, ReplayabilityVerdict.PARTIAL)
    for gate in gates:
        if text == gate.value:
            return gate
    raise SettingError(
        f"--fail-on {text}: the verdicts a run can fail on are {', '.join(g.value for g in gates)}"
    )


def _render(runs: list[LintedRun]) -> None:
    stored = next((run for run in runs if run.path is None), None)
    table = trajectory_table(
        f"{plural(len(runs), 'run')} checked",
        ("trajectory id", "steps", "replayability", "file" if stored is None else "from"),
    )
    for run in runs:
        verdict = run.replayability.verdict
        style = {"partial": "yellow", "not-replayable": "red"}.get(verdict.value)
        table.add_row(
            Text(printable(run.trajectory_id)),
            str(run.n_steps),
            Text(verdict.value, style=style or ""),
            Text(
                "store" if run.path is None else printable(display_path(str(run.path), spare=-40))
            ),
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
        for (name, setting), steps in run.closed_by().items():
            said = f"  to capture it ({name}, {plural(len(steps), 'step')}): {setting}"
            console.print(Text(printable(said)), highlight=False)
    counts = {v: sum(1 for r in runs if r.replayability.verdict is v) for v in ReplayabilityVerdict}
    console.print(", ".join(f"{n} {v.value}" for v, n in counts.items()), highlight=False)
