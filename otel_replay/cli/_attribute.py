"""``agent-replay attribute``: which step made a failure inevitable, with intervals and a repair;
for one run, or for many (ids, ``--where``, ``--all-failing``) spread over an executor."""

from __future__ import annotations

from typing import Annotated

import typer

from otel_replay.attribution import (
    MAX_PERMUTATIONS,
    AttributionConfig,
    Driver,
    Method,
    OnResamplerError,
    OnSuccess,
    Strategy,
    budget_settings,
    suspect_setting,
)
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
from otel_replay.cli._send import (
    OtlpCompressionOption,
    OtlpEndpointOption,
    OtlpHeaderOption,
    rollouts_destination,
)
from otel_replay.errors import SettingError
from otel_replay.executors import ExecutorKind
from otel_replay.fleet import Selection
from otel_replay.model import FAIL_THRESHOLD

#: Rollouts per plan of the fixed strategy, and of each repair trial, when --rollouts is not given.
DEFAULT_ROLLOUTS = 100


def attribute_command(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[ID]...",
            help="Runs (ids or unique prefixes); none with --where or --all-failing.",
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            help="Runs matching this, e.g. 'outcome < 0.5 and steps > 3' (the filter language: docs/many-runs.md)."
        ),
    ] = None,
    all_failing: Annotated[
        bool, typer.Option("--all-failing", help="Every run whose outcome is a failure.")
    ] = False,
    since: Annotated[
        str | None, typer.Option(help="Runs started since a date or an age (24h, 7d).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many runs, newest first.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Redo runs already answered for this question.")
    ] = False,
    executor: Annotated[
        ExecutorKind,
        typer.Option(
            metavar="EXECUTOR",
            help="threads, process or ray.",
        ),
    ] = ExecutorKind.THREADS,
    ray_address: Annotated[
        str | None,
        typer.Option(
            metavar="ADDRESS",
            help="--executor ray: auto, HOST:PORT or ray://HOST:PORT.",
        ),
    ] = None,
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
    swap_model: Annotated[
        str | None,
        typer.Option(
            "--swap-model",
            metavar="MODEL",
            help="From which step would MODEL have saved the run?",
        ),
    ] = None,
    swap_from: Annotated[
        int,
        typer.Option(
            "--from", metavar="K", help="With --swap-model: from step K on.", show_default=False
        ),
    ] = 0,
    driver: Annotated[
        Driver,
        typer.Option(
            metavar="MODE", help="auto, trace (walk the record) or chat (re-drive the loop)."
        ),
    ] = Driver.AUTO,
    max_turns: Annotated[
        int | None, typer.Option(metavar="N", help="Model turns of a chat rollout (default 2x).")
    ] = None,
    method: Annotated[
        Method,
        typer.Option(
            metavar="METHOD",
            help="contrastive, shapley or all.",
        ),
    ] = Method.CONTRASTIVE,
    rollouts: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="N rollouts per plan at every step (fixed).",
            show_default=False,
        ),
    ] = None,
    strategy: Annotated[
        Strategy | None,
        typer.Option(
            metavar="STRATEGY",
            help="adaptive (default), scan, or fixed (every step at --rollouts).",
            show_default=False,
        ),
    ] = None,
    max_rollouts: Annotated[
        int, typer.Option(metavar="N", help="The most rollouts per plan.")
    ] = 640,
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="N[:UNIT]",
            help="Stop before spending N calls (UNIT: model-calls, tokens).",
        ),
    ] = None,
    permutations: Annotated[int, typer.Option(metavar="N", help="Shapley permutations.")] = 32,
    shapley_se: Annotated[
        float | None,
        typer.Option(
            "--shapley-se",
            metavar="TARGET",
            help=f"More permutations until each Shapley SE < TARGET (<= {MAX_PERMUTATIONS}).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of every random draw.")] = 0,
    fail_threshold: Annotated[
        float, typer.Option(metavar="X", help="Outcomes below X fail.")
    ] = FAIL_THRESHOLD,
    margin: Annotated[float, typer.Option(metavar="X", help="Margin of 'no effect'.")] = 0.1,
    repair: Annotated[
        bool, typer.Option("--repair", help="Search the smallest saving change.")
    ] = False,
    root_cause: Annotated[
        bool,
        typer.Option(
            "--root-cause",
            help="Also find the earliest step that matters.",
        ),
    ] = False,
    suspect: Annotated[
        str | None,
        typer.Option(
            metavar="K|judge",
            help="Test step K first (judge: a model names it).",
            show_default=False,
        ),
    ] = None,
    on_success: Annotated[
        OnSuccess,
        typer.Option(metavar="ACTION", help="A passing run: error, or credit the step saving it."),
    ] = OnSuccess.ERROR,
    on_resampler_error: Annotated[
        OnResamplerError,
        typer.Option(metavar="ACTION", help="A resampler raising: fail, or fail-rollout."),
    ] = OnResamplerError.FAIL,
    workers: Annotated[int, typer.Option(metavar="N", help="Threads, processes or Ray CPUs.")] = 1,
    concurrency: Annotated[
        int,
        typer.Option(metavar="N", help="Rollouts of an async --agent at once."),
    ] = 1,
    entry_points: Annotated[
        bool,
        typer.Option(help="Load installed resampler entry points.", show_default=False),
    ] = True,
    out: OutOption = None,
    html: HtmlOption = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", metavar="FUNCTION", help="Roll out by running this agent (module:function)."
        ),
    ] = None,
    instrument: Annotated[
        str | None,
        typer.Option(
            "--instrument",
            metavar="SDKS",
            help="SDKs its model calls go through (openai, anthropic).",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print what it would run, then stop.",
        ),
    ] = False,
    keep_rollouts: Annotated[
        int,
        typer.Option(
            "--keep-rollouts",
            metavar="N",
            help="Store the first N rollouts of each plan.",
            show_default=False,
        ),
    ] = 0,
    otlp_endpoint: OtlpEndpointOption = None,
    otlp_header: OtlpHeaderOption = None,
    otlp_compression: OtlpCompressionOption = None,
    annotate: Annotated[
        str | None,
        typer.Option(
            "--annotate",
            metavar="URL",
            help="Write the verdict to phoenix:// or mlflow://.",
        ),
    ] = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Attribute a failed run to the step where its failure became inevitable; or many runs."""
    with user_errors():
        to = rollouts_destination(keep_rollouts, otlp_endpoint, otlp_header, otlp_compression)
        files = report_files(out, html)  # the JSON report's, the page's
        config = AttributionConfig(
            strategy=strategy or (Strategy.ADAPTIVE if rollouts is None else Strategy.FIXED),
            rollouts=rollouts or DEFAULT_ROLLOUTS, on_resampler_error=on_resampler_error, seed=seed,
            suspect=suspect_setting(suspect), fail_threshold=fail_threshold, shapley_se=shapley_se,
            keep_rollouts=keep_rollouts, permutations=permutations, max_rollouts=max_rollouts,
            **budget_settings(budget), concurrency=concurrency, on_success=on_success,
            swap_model=swap_model, root_cause=root_cause, max_turns=max_turns, swap_from=swap_from,
            workers=workers, method=method, margin=margin, repair=repair, driver=driver,
        )  # fmt: skip
        code = user_code(
            resamplers=resamplers, verifier=verifier, success_if=success_if, fail_if=fail_if,
            judge=judge, judge_model=judge_model, judge_base_url=judge_base_url, tools=tools,
            llm=llm, llm_base_url=llm_base_url, llm_model=llm_model,
            llm_temperature=llm_temperature, agent=agent, instrument=instrument,
            entry_points=entry_points, suspect_judge=config.suspect == "judge",
        )  # fmt: skip
        chosen = Selection(
            ids=tuple(ids or ()), where=where, failing=all_failing, since=since, limit=limit,
            fail_threshold=fail_threshold,
        )  # fmt: skip
        if not (chosen.ids or where or all_failing or since):
            raise SettingError("name a run (ID), or choose runs with --where or --all-failing")
        if chosen.many and keep_rollouts:
            raise SettingError("--keep-rollouts keeps the rollouts of one run: name one run")
    # the engine, the report and the table load here, not for `--help` or another command
    from otel_replay.cli._attribute_many import run_many
    from otel_replay.cli._attribute_view import run
    from otel_replay.cli._executing import Running

    running = Running(executor, ray_address, force)
    if chosen.many:
        run_many(store, chosen, config, code, running, (*files, dry_run, annotate), json=json)
    else:
        outputs = (*files, annotate)
        run(store, chosen.ids[0], config, code, outputs, running, json=json, dry_run=dry_run, to=to)
