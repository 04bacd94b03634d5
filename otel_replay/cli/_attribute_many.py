"""``agent-replay attribute`` of many runs: the selection, the runs spread over the executor, each
report kept in the store as it comes back, a table of verdicts at the end (or ``--json``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from otel_replay.attribution import AttributionConfig, OnSuccess, config_digest
from otel_replay.cli._common import (
    console,
    err_console,
    open_store,
    plural,
    print_json,
    shown,
    user_errors,
)
from otel_replay.cli._executing import Running, executing
from otel_replay.errors import NotFoundError, SettingError
from otel_replay.fleet import Attributed, Selection, attribute_runs, keep, pending, triage
from otel_replay.resamplers import UserCode


def run_many(
    store: Path | None,
    chosen: Selection,
    config: AttributionConfig,
    code: UserCode,
    running: Running,
    single_only: tuple[Path | None, Path | None, bool, str | None],
    *,
    json: bool,
) -> None:
    """``single_only``: ``--out`` (the report, the page), ``--dry-run``, ``--annotate``, which
    are for one run."""
    rows: list[dict[str, Any]] = []
    with user_errors():
        if any(single_only):
            raise SettingError(
                "--out, --dry-run and --annotate are for one run; the reports of many "
                "runs are kept in the store (agent-replay ui shows them, agent-replay blame adds "
                "them up)"
            )
        with open_store(store, write=True) as db:
            # the verifier scores the selection first: runs that came without an outcome are
            # scored (and keep it), and a passing run is set aside rather than failing its row
            skip_passing = config.on_success is OnSuccess.ERROR or config.swap_model is not None
            chose = triage(db, chosen, code, skip_passing=skip_passing)
            runs = chose.runs
            if not runs and not chose.passing:
                raise NotFoundError("no stored run matches the selection")
            if chose.scored:
                err_console.print(
                    f"scored {plural(len(chose.scored), 'run')} that had no outcome "
                    f"({sum(bool(s.failed) for s in chose.scored)} failing); the store keeps "
                    "their outcomes",
                    highlight=False,
                )
            rows += [{"id": run, "status": "skipped: passing"} for run in chose.passing]
            todo, skipped = pending(db, runs, config, code, running.force)
            rows += [{"id": run, "status": "skipped: already answered"} for run in skipped]
            try:
                _attribute(db, todo, config, code, running, rows)
            except KeyboardInterrupt:
                done = sum(row["status"] == "done" for row in rows)
                err_console.print(
                    f"interrupted: {plural(done, 'report')} kept of {len(todo)} runs to do; the "
                    "same command goes on from there"
                )
                raise typer.Exit(130) from None
    _show(rows, json)


def _attribute(
    db: Any,
    todo: list[str],
    config: AttributionConfig,
    code: UserCode,
    running: Running,
    rows: list[dict[str, Any]],
) -> None:
    from otel_replay.report import build_report, dumps_report

    question = config_digest(config, code)
    with executing(running, config.workers) as executor, _bar(len(todo)) as advance:
        for done in attribute_runs(db, todo, config, code, executor):
            if done.result is not None:
                report = dumps_report(build_report(done.result, config, code))
                keep(db, report, done.job.trajectory, question)
            rows.append(_row(done))
            advance()


def _row(done: Attributed) -> dict[str, Any]:
    run = done.job.trajectory
    if done.result is None:
        return {"id": run.id, "status": f"error: {done.error}"}
    located = done.result.point_of_commitment
    step = run.steps[located] if located is not None else None
    return {
        "id": run.id,
        "status": "done",
        "verdict": done.result.verdict.value,
        "point_of_commitment": located,
        "step": None if step is None else f"{step.kind.value} {step.name}",
        "calls": done.result.step_executions,
    }


@contextmanager
def _bar(total: int) -> Iterator[Any]:
    columns = (TextColumn("runs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with RichProgress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("runs", total=total)
        yield lambda: bar.advance(task)


def _show(rows: list[dict[str, Any]], json: bool) -> None:
    if json:
        print_json(rows)
        return
    table = Table(box=box.SIMPLE_HEAD, title="attribution of many runs")
    # the step the verdict names: the commitment (culprit), or where a swapped model saves it
    for column in ("run", "verdict", "step", "calls", "status"):
        table.add_column(column)
    for row in rows:
        at = row.get("point_of_commitment")
        table.add_row(
            shown(row["id"][:16]),
            shown(row.get("verdict", "")),
            "" if at is None else shown(f"#{at} {row['step']}"),
            f"{row['calls']:,}" if "calls" in row else "",
            shown(row["status"]),
        )
    console.print(table)
    done = sum(row["status"] == "done" for row in rows)
    failed = sum(row["status"].startswith("error") for row in rows)
    lacking = sum(row.get("verdict") == "no-evidence" for row in rows)
    without = f" ({lacking} of them without evidence: see each report)" if lacking else ""
    passing = sum(row["status"] == "skipped: passing" for row in rows)
    passed = f" ({passing} passing: there is no failure to attribute)" if passing else ""
    console.print(
        f"{plural(done, 'report')} kept in the store{without}, {len(rows) - done - failed} "
        f"skipped{passed}, {failed} failed; `agent-replay blame` adds them up"
    )
    if failed or lacking:
        sys.exit(1)
