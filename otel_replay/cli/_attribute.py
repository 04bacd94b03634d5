"""``agent-replay attribute``: which step made a failure inevitable, with intervals and a repair."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from otel_replay.attribution import (
    NO_EFFECT_CONFIDENCE,
    AttributionConfig,
    AttributionResult,
    Driver,
    Method,
    Mode,
    OnResamplerError,
    OnSuccess,
    Progress,
    StepAttribution,
    attribute_stored,
    matters_confidence,
)
from otel_replay.cli._common import (
    JsonOption,
    StoreOption,
    console,
    err_console,
    open_store,
    plural,
    short,
    shown,
    user_errors,
    write_output,
)
from otel_replay.model import FAIL_THRESHOLD
from otel_replay.report import build_report, dumps_report
from otel_replay.resamplers import ChatModelOptions, ModelSource, ToolSource, UserCode


def attribute_command(
    trajectory_id: Annotated[
        str, typer.Argument(metavar="ID", help="Trajectory id or a unique prefix.")
    ],
    resamplers: Annotated[
        list[str] | None,
        typer.Option(
            "--resamplers", help="A .py file or module registering resample functions (repeatable)."
        ),
    ] = None,
    verifier: Annotated[
        str | None, typer.Option(help="module:function (or file.py:function) scoring a trajectory.")
    ] = None,
    success_if: Annotated[
        str | None, typer.Option(help="A run succeeds when its final answer matches this regex.")
    ] = None,
    fail_if: Annotated[
        str | None, typer.Option(help="A run fails when its final answer matches this regex.")
    ] = None,
    tools: Annotated[
        ToolSource | None,
        typer.Option(help="Resample tool steps from the results the store recorded for them."),
    ] = None,
    llm: Annotated[
        ModelSource | None,
        typer.Option(help="Resample model steps with an OpenAI-compatible chat server."),
    ] = None,
    llm_base_url: Annotated[
        str | None, typer.Option(help="Its /v1 URL (default $OPENAI_BASE_URL).")
    ] = None,
    llm_model: Annotated[
        str | None, typer.Option(help="Model (default: the recorded one).")
    ] = None,
    llm_temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    driver: Annotated[
        Driver, typer.Option(help="Walk the record, or re-drive a tool-calling run as its loop.")
    ] = Driver.AUTO,
    max_turns: Annotated[
        int | None, typer.Option(help="Model turns a rollout of the loop may take (default 2x).")
    ] = None,
    method: Annotated[Method, typer.Option(help="What to estimate.")] = Method.CONTRASTIVE,
    rollouts: Annotated[int, typer.Option(help="Rollouts per plan.")] = 100,
    permutations: Annotated[
        int, typer.Option(help="Shapley permutations (antithetic pairs).")
    ] = 32,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    fail_threshold: Annotated[
        float, typer.Option(help="Outcome below this is a failure.")
    ] = FAIL_THRESHOLD,
    margin: Annotated[float, typer.Option(help="Equivalence margin for 'no effect'.")] = 0.1,
    repair: Annotated[
        bool, typer.Option("--repair", help="Search the smallest saving change.")
    ] = False,
    on_success: Annotated[
        OnSuccess, typer.Option(help="What to do with a passing run.")
    ] = OnSuccess.ERROR,
    on_resampler_error: Annotated[
        OnResamplerError, typer.Option(help="Stop, or count the rollout as failed.")
    ] = OnResamplerError.FAIL,
    workers: Annotated[
        int, typer.Option(help="Threads running rollouts (same results for any).")
    ] = 1,
    entry_points: Annotated[
        bool, typer.Option(help="Also load installed otel_replay.resamplers entry points.")
    ] = True,
    json_out: Annotated[
        Path | None,
        typer.Option("--json-out", "--out", help="Write the JSON report here (- for stdout)."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Roll out by re-running this live agent (module:function)."),
    ] = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Attribute a failed run to the step where its failure became inevitable."""
    with user_errors():
        config = AttributionConfig(
            rollouts=rollouts,
            permutations=permutations,
            seed=seed,
            method=method,
            fail_threshold=fail_threshold,
            margin=margin,
            repair=repair,
            on_success=on_success,
            on_resampler_error=on_resampler_error,
            workers=workers,
            driver=driver,
            max_turns=max_turns,
        )
        model = ChatModelOptions(llm_base_url, llm_model, llm_temperature) if llm else None
        code = UserCode(
            tuple(resamplers or ()),
            verifier,
            agent,
            entry_points,
            success_if,
            fail_if,
            tools,
            model,
        )
        with open_store(store) as db, _progress() as progress:
            result = attribute_stored(db, trajectory_id, config, code, progress)
        report = dumps_report(build_report(result, config, code))
        if json_out is not None:
            write_output(json_out, report)
    for note in result.notes:
        err_console.print(f"[yellow]warning:[/] {shown(note)}")
    _print_outcome(result, config, report, json_out, json)


def _print_outcome(
    result: AttributionResult,
    config: AttributionConfig,
    report: bytes,
    json_out: Path | None,
    json: bool,
) -> None:
    """The table, or the report for programs: standard output holds one or the other, never both."""
    to_stdout = json_out is not None and str(json_out) == "-"
    if json and not to_stdout:
        sys.stdout.buffer.write(report)
        sys.stdout.buffer.flush()
    if not (json or to_stdout):
        _render(result, config)
    if json_out is not None and not to_stdout:
        (err_console if json else console).print(f"report written to {shown(str(json_out))}")


@contextmanager
def _progress() -> Iterator[Progress]:
    """A rollouts bar on stderr that follows the engine's count of what ran and what is planned."""
    columns = (TextColumn("rollouts"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with RichProgress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("rollouts", total=None)
        yield lambda completed, total: bar.update(task, completed=completed, total=total)


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:+.2f}, {high:+.2f}]"


def _decision(step: StepAttribution) -> str:
    """Which test the step passed, with the bound it read."""
    if step.significant and step.matters_bound is not None:
        return f"matters >{step.matters_bound:+.2f}"
    if step.no_effect and step.no_effect_interval is not None:
        return f"no effect {_interval(*step.no_effect_interval)}"
    return "undecided"


def _render(result: AttributionResult, config: AttributionConfig) -> None:
    credit = result.mode is Mode.CREDIT
    resamplable = sum(s.resamplable for s in result.steps)
    title = "rescue credit" if credit else "failure attribution"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=f"{title} of {shown(result.trajectory_id)}",
        caption=(
            f"{config.rollouts} rollouts per plan, seed {config.seed}; 95% intervals; "
            f"P(fail) with the step kept / resampled; test: 'matters' when the one-sided "
            f"{matters_confidence(resamplable):.2%} bound is above 0, 'no effect' when the "
            f"{NO_EFFECT_CONFIDENCE:.0%} interval is inside ±{config.margin:g}; "
            f"◀ {'save point' if credit else 'point of commitment'}"
        ),
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column(
        "name",
        overflow="ellipsis",
        max_width=max(12 if result.shapley else 18, console.width - (88 if result.shapley else 76)),
        no_wrap=True,
    )
    table.add_column("credit" if credit else "attribution", justify="right", no_wrap=True)
    table.add_column("P(fail)", justify="right", no_wrap=True)
    table.add_column("test", no_wrap=True)
    shapley = result.shapley is not None
    if shapley:
        table.add_column("shapley", justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for step in result.steps:
        marker = ""
        if step.index == result.point_of_commitment:
            marker = "◀"
        if not step.resamplable:
            cells = [str(step.index), step.kind, shown(step.name), "observed-only", "", ""]
            table.add_row(*cells, *([""] if shapley else []), "", style="dim")
            continue
        estimate = ""
        if step.attribution is not None:
            estimate = f"{step.attribution:+.2f} {_interval(step.ci_low, step.ci_high)}"
        rates = (
            f"{step.kept.value:.2f}/{step.ablated.value:.2f}" if step.kept and step.ablated else ""
        )
        cells = [str(step.index), step.kind, shown(step.name), estimate, rates, _decision(step)]
        if shapley:
            if step.shapley is not None and step.shapley_se is not None:
                differs = " ≠" if step.shapley_disagrees else ""
                cells.append(f"{step.shapley:+.2f}±{step.shapley_se:.2f}{differs}")
            else:
                cells.append("")
        style = ("bold green" if credit else "bold red") if marker else None
        table.add_row(*cells, marker, style=style)
    console.print(table)
    console.print(f"[bold]{result.verdict.value}[/]: {shown(result.explanation)}")
    if result.shapley is not None:
        s = result.shapley
        console.print(
            f"Shapley: Σφ = {s.total:+.2f} ± {s.total_se:.2f} vs "
            f"{'v(all) − v(∅)' if s.mode is Mode.FAILURE else 'v(∅) − v(all)'} = "
            f"{s.expected_total:+.2f} estimated apart (gap {s.efficiency_gap:+.2f}, "
            f"{s.permutations} permutations)"
        )
        disagree = [step.index for step in result.steps if step.shapley_disagrees]
        if disagree:
            console.print(
                f"≠ Shapley and the attribution differ beyond their intervals at "
                f"{plural(len(disagree), 'step')} {', '.join(map(str, disagree))}: Shapley "
                "averages a step's effect over which other steps are kept, the attribution holds "
                "the recorded prefix; such a step matters only together with others (README: "
                "'Two estimates, two questions')"
            )
    if result.repair is not None:
        r = result.repair
        console.print(
            f"repair: step {r.step_index} returning {shown(short(r.output, 80))} saves the run "
            f"{r.success_rate:.0%} of the time [{r.success_low:.2f}, {r.success_high:.2f}] "
            f"(similarity to the record {r.similarity:.2f}; from {shown(r.source)})"
        )
    elif result.repair_note:
        console.print(f"repair: {shown(result.repair_note)}")
    if result.resampler_errors:
        console.print(
            f"[yellow]{result.resampler_errors} rollout(s) failed on a resampler error[/]"
        )
