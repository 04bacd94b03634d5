"""``agent-replay sweep``: the fragility map of a run (each fault at each chosen step, the failure
rate it leaves), or of many runs added up by step and fault (``--where``)."""

from __future__ import annotations

from typing import Annotated

import typer

from otel_replay.attribution import AttributionConfig, Driver, budget_settings
from otel_replay.cli._code import (
    FailIfOption,
    JudgeBaseUrlOption,
    JudgeModelOption,
    JudgeOption,
    LlmBaseUrlOption,
    LlmModelOption,
    LlmOption,
    LlmTemperatureOption,
    ResamplersOption,
    SuccessIfOption,
    ToolsOption,
    VerifierOption,
    user_code,
)
from otel_replay.cli._common import (
    HtmlOption,
    JsonOption,
    OutOption,
    StoreOption,
    report_files,
    user_errors,
)
from otel_replay.errors import SettingError
from otel_replay.executors import ExecutorKind
from otel_replay.model import FAIL_THRESHOLD

#: The most rollouts per cell when --max-rollouts is not given.
DEFAULT_CELL_ROLLOUTS = 64


def sweep_command(
    run_id: Annotated[
        str | None,
        typer.Argument(
            metavar="[ID]", help="The run (an id or a unique prefix); none with --where."
        ),
    ] = None,
    faults: Annotated[
        str,
        typer.Option(
            metavar="NAMES",
            help="Faults to inject, comma-separated (yours: @fault(NAME) in --resamplers).",
        ),
    ] = "error,timeout,empty,truncate",
    steps: Annotated[
        list[str] | None,
        typer.Option(
            "--steps",
            metavar="STEPS",
            help="Steps to inject at: kinds, names or indexes (default: every tool step).",
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            help="Sweep every run matching this (as for attribute --where) and add the maps up "
            "by step and fault."
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Runs started since a date or an age (24h, 7d).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many runs, newest first.")] = None,
    resamplers: ResamplersOption = None,
    verifier: VerifierOption = None,
    success_if: SuccessIfOption = None,
    fail_if: FailIfOption = None,
    judge: JudgeOption = None,
    judge_model: JudgeModelOption = None,
    judge_base_url: JudgeBaseUrlOption = None,
    tools: ToolsOption = None,
    llm: LlmOption = None,
    llm_base_url: LlmBaseUrlOption = None,
    llm_model: LlmModelOption = None,
    llm_temperature: LlmTemperatureOption = 1.0,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", metavar="FUNCTION", help="Roll out by running this agent (module:function)."
        ),
    ] = None,
    driver: Annotated[
        Driver,
        typer.Option(
            metavar="MODE", help="auto, trace (walk the record) or chat (re-drive the loop)."
        ),
    ] = Driver.AUTO,
    max_turns: Annotated[
        int | None, typer.Option(metavar="N", help="Model turns of a chat rollout (default 2x).")
    ] = None,
    max_rollouts: Annotated[
        int,
        typer.Option(
            metavar="N", help="The most rollouts per cell (fewer once its interval decides)."
        ),
    ] = DEFAULT_CELL_ROLLOUTS,
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="N[:UNIT]",
            help="Stop before spending N calls (UNIT: model-calls, tokens).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of every random draw.")] = 0,
    fail_threshold: Annotated[
        float, typer.Option(metavar="X", help="Outcomes below X fail.")
    ] = FAIL_THRESHOLD,
    executor: Annotated[
        ExecutorKind, typer.Option(metavar="EXECUTOR", help="threads, process or ray.")
    ] = ExecutorKind.THREADS,
    ray_address: Annotated[
        str | None,
        typer.Option(metavar="ADDRESS", help="--executor ray: auto, HOST:PORT or ray://HOST:PORT."),
    ] = None,
    workers: Annotated[int, typer.Option(metavar="N", help="Threads, processes or Ray CPUs.")] = 1,
    entry_points: Annotated[
        bool,
        typer.Option(help="Load installed resampler entry points.", show_default=False),
    ] = True,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print what it would run, then stop.")
    ] = False,
    out: OutOption = None,
    html: HtmlOption = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Inject each fault at each chosen step of a run and estimate how often the run then
    fails: which single fault breaks a passing run, which would not have mattered to a failing
    one."""
    with user_errors():
        if max(0, max_rollouts) < 1:
            raise SettingError(f"--max-rollouts {max_rollouts}: a cell needs at least one rollout")
        json_out, html_out = report_files(out, html)
        config = AttributionConfig(
            seed=seed, max_rollouts=max_rollouts, **budget_settings(budget),
            fail_threshold=fail_threshold, workers=workers, driver=driver, max_turns=max_turns,
        )  # fmt: skip
        code = user_code(
            resamplers=resamplers, verifier=verifier, success_if=success_if, fail_if=fail_if,
            judge=judge, judge_model=judge_model, judge_base_url=judge_base_url, tools=tools,
            llm=llm, llm_base_url=llm_base_url, llm_model=llm_model,
            llm_temperature=llm_temperature, agent=agent, entry_points=entry_points,
        )  # fmt: skip
        fault_names = [f.strip() for f in faults.split(",") if f.strip()]
        step_words = [w.strip() for s in steps or () for w in s.split(",") if w.strip()] or None
        if (run_id is None) == (where is None and since is None):
            raise SettingError("name one run (ID), or choose runs with --where")
    from otel_replay.cli._executing import Running
    from otel_replay.cli._sweep_view import run_many, run_one

    running = Running(executor, ray_address)
    if run_id is not None:
        run_one(store, run_id, fault_names, step_words, config, code,
                (json_out, html_out), running, json=json, dry_run=dry_run)  # fmt: skip
    else:
        if json_out is not None or html_out is not None or dry_run:
            with user_errors():
                raise SettingError("--out and --dry-run take one run: name it (ID)")
        run_many(store, (where, since, limit, fail_threshold), fault_names, step_words,
                 config, code, running, json=json)  # fmt: skip
