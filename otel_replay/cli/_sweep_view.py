"""What ``agent-replay sweep`` shows: the map as a table of steps × faults, the faults that flip
the run in a sentence each, the dry run's cost; for many runs, the rows added up by step and fault.
Every string from a trace passes `shown`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich import box
from rich.table import Table

from otel_replay._files import write_output
from otel_replay.attribution import (
    AttributionConfig,
    CellVerdict,
    SweepCost,
    SweepResult,
    sweep_cost_stored,
    sweep_stored,
)
from otel_replay.cli._attribute_view import progress_bar
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
from otel_replay.errors import AttributionError, NotFoundError
from otel_replay.fleet import Selection, fragility
from otel_replay.report import build_sweep_report, dumps_sweep_report, rerun_sweep, sweep_html
from otel_replay.resamplers import UserCode

_MARK = {CellVerdict.FAILS: "✗", CellVerdict.PASSES: "✓", CellVerdict.UNDECIDED: "?"}


def run_one(
    store: Path | None,
    run_id: str,
    faults: Sequence[str],
    steps: Sequence[str] | None,
    config: AttributionConfig,
    code: UserCode,
    outputs: tuple[Path | None, Path | None],
    running: Running,
    *,
    json: bool,
    dry_run: bool,
) -> None:
    """Sweep one run; write the report and the page where ``outputs`` say (None: nowhere)."""
    json_out, html_out = outputs
    with user_errors():
        if dry_run:
            with open_store(store) as db:
                cost, how = sweep_cost_stored(db, run_id, faults, steps, config, code)
            _print_cost(cost, how, json)
            return
        with open_store(store) as db:
            sweep_cost_stored(db, run_id, faults, steps, config, code)  # its mistakes, said first
        with (
            open_store(store) as db,
            executing(running, config.workers) as executor,
            progress_bar(config) as (progress, spending),
        ):
            result = sweep_stored(
                db, run_id, faults, steps, config, code, progress, spending, executor
            )
        report = build_sweep_report(result, rerun_sweep(result, config, code, steps))
        data = dumps_sweep_report(report)
        if json_out is not None:
            write_output(json_out, data)
        if html_out is not None:
            write_output(html_out, sweep_html(report).encode())
    if json and str(json_out) != "-":
        print_json(report)
    elif not json:
        if str(json_out) != "-":
            _render(result)
        if html_out is not None and str(html_out) != "-":
            err_console.print(f"HTML page written to {shown(str(html_out))}")


def run_many(
    store: Path | None,
    chosen: tuple[str | None, str | None, int | None, float],
    faults: Sequence[str],
    steps: Sequence[str] | None,
    config: AttributionConfig,
    code: UserCode,
    running: Running,
    *,
    json: bool,
) -> None:
    """Sweep every run the selection holds and add the maps up (`fragility`); a run whose steps
    the ``--steps`` name none of is skipped, and counted."""
    where, since, limit, threshold = chosen
    results: list[SweepResult] = []
    skipped: list[str] = []
    with user_errors():
        with (
            open_store(store) as db,
            executing(running, config.workers) as executor,
            progress_bar(config) as (progress, spending),
        ):
            selection = Selection(where=where, since=since, limit=limit, fail_threshold=threshold)
            ids = selection.runs(db)
            if not ids:
                raise NotFoundError(f"--where {where}: no stored run matches")
            for run_id in ids:
                try:
                    results.append(
                        sweep_stored(
                            db, run_id, faults, steps, config, code, progress, spending, executor
                        )
                    )
                except AttributionError as exc:  # --steps names none of this run's steps
                    skipped.append(f"{run_id[:12]}: {exc}")
        if not results:
            raise NotFoundError(f"no run could be swept: {skipped[0]}")
    rows = fragility(results)
    if json:
        print_json(
            {
                "runs": [r.trajectory_id for r in results],
                "skipped": skipped,
                "rows": [
                    {
                        "kind": r.kind,
                        "name": r.name,
                        "fault": r.fault,
                        "passed": r.passed,
                        "runs": r.runs,
                        "flipped": r.flipped,
                        "undecided": r.undecided,
                        "share": round(r.share, 6),
                        "ci_low": round(r.low, 6),
                        "ci_high": round(r.high, 6),
                        "interval_method": r.interval_method,
                    }
                    for r in rows
                ],
            }
        )
        return
    passing = sum(r.passed for r in results)
    console.print(
        f"swept {plural(len(results), 'run')} ({passing} passing, {len(results) - passing} "
        f"failing){f', skipped {len(skipped)}' if skipped else ''}",
        highlight=False,
    )
    flipping = [row for row in rows if row.flipped]
    for row in flipping:
        console.print(f"  {shown(row.sentence())}", highlight=False)
    if len(flipping) < len(rows):
        console.print(
            f"  no run flipped by the other {len(rows) - len(flipping)} (step, fault) pairs "
            "(--json lists every one)",
            highlight=False,
        )


def _render(result: SweepResult) -> None:
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        title=f"fragility map of {shown(result.trajectory_id)} (the record "
        f"{'passed' if result.passed else 'failed'})",
        caption="each cell: the failure rate with the fault injected at the step, its 95% "
        "interval below (✗ fails, ✓ passes more often than not, ? undecided)",
    )
    table.add_column("#", justify="right")
    table.add_column("step", overflow="fold", max_width=22)
    for fault in result.faults:
        table.add_column(shown(fault))
    for step in result.steps:
        row = [str(step.index), shown(f"{step.kind} {step.name}")]
        for fault in result.faults:
            cell = result.cell(step.index, fault)
            rate = "–" if cell.rate is None else f"{cell.rate:.2f}"
            row.append(f"{rate} {_MARK[cell.verdict]}\n{cell.low:.2f}–{cell.high:.2f}")
        table.add_row(*row)
    console.print(table)
    names = {s.index: f"step {s.index} ({s.kind} {s.name})" for s in result.steps}
    flips = result.flips
    if result.passed:
        head = "faults that break it" if flips else "no single fault breaks it"
    else:
        head = "faults that save it" if flips else "no single fault saves it"
    console.print(f"{head}{':' if flips else '.'}", highlight=False)
    for cell in flips:
        console.print(
            f"  {shown(names[cell.step])} with {shown(cell.fault)}: fails "
            f"{cell.failures} of {cell.n} [{cell.low:.2f}, {cell.high:.2f}]",
            highlight=False,
        )
    if not result.passed:
        same = [c for c in result.cells if c.verdict is CellVerdict.FAILS]
        console.print(
            f"faults that would not have mattered (it still fails): {len(same)} of "
            f"{len(result.cells)} cells{':' if same else ''}",
            highlight=False,
        )
        for step in result.steps:
            faults = [c.fault for c in same if c.step == step.index]
            if faults:
                console.print(f"  {shown(names[step.index])}: {shown(', '.join(faults))}")
    for note in result.notes:
        console.print(f"note: {shown(note)}", highlight=False)
    left_out = (
        f"; of which {result.left_out_spend.calls_words()} in the "
        f"{plural(result.left_out, 'rollout')} left out (unservable or crashed)"
        if result.left_out and result.left_out_spend.calls
        else ""
    )
    console.print(
        f"cost: {plural(result.rollouts, 'rollout')}, {result.calls:,} resample-function calls "
        f"(seed {result.seed}){left_out}",
        highlight=False,
    )


def _print_cost(cost: SweepCost, how: str, json: bool) -> None:
    run_id = cost.trajectory_id
    if json:
        print_json(
            {
                "trajectory_id": run_id,
                "driver": how,
                "cells": cost.cells,
                "worst_rollouts": cost.most_rollouts,
                "least_rollouts": cost.least_rollouts,
                "worst_calls": cost.most.calls,
                "least_calls": cost.least.calls,
                "calls_exact": cost.exact,
                "worst_spend": cost.most.to_record(),
                "least_spend": cost.least.to_record(),
            }
        )
        return
    about = "" if cost.exact else "about "
    console.print(
        f"dry run of {shown(run_id)} ({shown(how)}): {plural(cost.cells, 'cell')}, each stopping "
        f"once its interval decides: at least {cost.least_rollouts:,} rollouts and "
        f"{about}{cost.least.calls:,} resample-function calls, at most "
        f"{cost.most_rollouts:,} rollouts and {about}{cost.most.calls:,} calls: "
        f"{cost.most.words(about=not cost.exact)}",
        highlight=False,
    )
