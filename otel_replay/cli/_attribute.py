"""``agent-replay attribute``: which step made a failure inevitable, with intervals and a repair;
for one run, or for many (ids, ``--where``, ``--all-failing``) spread over an executor."""

from __future__ import annotations

from pathlib import Path
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
    JsonOption,
    StoreOption,
    user_errors,
)
from otel_replay.cli._send import (
    OtlpCompressionOption,
    OtlpEndpointOption,
    OtlpHeaderOption,
    rollouts_destination,
)
from otel_replay.errors import ReplayError
from otel_replay.executors import ExecutorKind
from otel_replay.fleet import Selection
from otel_replay.model import FAIL_THRESHOLD

#: Rollouts per plan of the sweep, and of each repair trial, when --rollouts is not given.
DEFAULT_ROLLOUTS = 100


def attribute_command(
    ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[ID]...",
            help="Runs (an id or a unique prefix); several, or none with --where.",
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
        str | None, typer.Option(help="Runs started since: 2026-03-14, or an age (24h, 7d).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many runs, newest first.")] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Attribute runs already answered for this question.")
    ] = False,
    executor: Annotated[
        ExecutorKind,
        typer.Option(
            metavar="EXECUTOR",  # the help names the choices, and the column stays narrow
            help="Where rollouts (or, for many runs, runs) go: threads, process, ray.",
        ),
    ] = ExecutorKind.THREADS,
    ray_address: Annotated[
        str | None,
        typer.Option(
            help="--executor ray: a cluster's address (auto, HOST:PORT, ray://HOST:PORT: "
            "see 'ray start --head'); default: a local Ray for the run."
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
            help="Ask from which step MODEL would have saved the run: every model turn a plan "
            "runs again is asked of MODEL through the model's resample function.",
        ),
    ] = None,
    swap_from: Annotated[
        int,
        typer.Option(
            "--from", metavar="K", help="With --swap-model: MODEL answers the turns from step K on."
        ),
    ] = 0,
    driver: Annotated[
        Driver, typer.Option(help="Walk the record, or re-drive a tool-calling run as its loop.")
    ] = Driver.AUTO,
    max_turns: Annotated[
        int | None, typer.Option(help="Model turns a rollout of the loop may take (default 2x).")
    ] = None,
    method: Annotated[
        Method,
        typer.Option(
            metavar="METHOD",  # the choices, in the help: as a metavar they break mid-word
            help=f"What to estimate: {', '.join(m.value for m in Method)}.",
        ),
    ] = Method.CONTRASTIVE,
    rollouts: Annotated[
        int | None,
        typer.Option(
            help="Rollouts per plan: the fixed sweep (default: the adaptive scan).",
            show_default=False,
        ),
    ] = None,
    strategy: Annotated[
        Strategy | None,
        typer.Option(
            metavar="STRATEGY",  # the help names the choices, and the column stays narrow
            help="adaptive (the default): search the run's suffixes for the commitment, then "
            "scan back from it, in growing batches until the tests decide; scan: every step from "
            "the last back (no assumption behind the error bound); sweep: every step at "
            "--rollouts (100 unless given).",
            show_default=False,
        ),
    ] = None,
    max_rollouts: Annotated[int, typer.Option(help="Adaptive: the most rollouts per plan.")] = 640,
    budget: Annotated[
        str | None,
        typer.Option(
            metavar="N[:UNIT]",
            help="Adaptive: stop before a batch that would spend more than N, with the best "
            "verdict the steps seen allow; UNIT: calls (resample-function calls, the default), "
            "model-calls, or tokens (from the usage recorded on the model steps), e.g. "
            "500:model-calls, 1e6:tokens.",
        ),
    ] = None,
    permutations: Annotated[
        int, typer.Option(help="Shapley permutations (antithetic pairs).")
    ] = 32,
    shapley_se: Annotated[
        float | None,
        typer.Option(
            "--shapley-se",
            metavar="TARGET",
            help=f"Add antithetic pairs until every Shapley SE is below TARGET (at most "
            f"{MAX_PERMUTATIONS} permutations).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of every random draw.")] = 0,
    fail_threshold: Annotated[
        float, typer.Option(help="Outcome below this is a failure.")
    ] = FAIL_THRESHOLD,
    margin: Annotated[float, typer.Option(help="Equivalence margin for 'no effect'.")] = 0.1,
    repair: Annotated[
        bool, typer.Option("--repair", help="Search the smallest saving change.")
    ] = False,
    root_cause: Annotated[
        bool,
        typer.Option(
            "--root-cause",
            help="Adaptive and scan: also look for the root cause, the earliest step that "
            "matters, at a cost shown apart (the sweep always reports it).",
        ),
    ] = False,
    on_success: Annotated[
        OnSuccess, typer.Option(help="What to do with a passing run.")
    ] = OnSuccess.ERROR,
    on_resampler_error: Annotated[
        OnResamplerError, typer.Option(help="Stop, or count the rollout as failed.")
    ] = OnResamplerError.FAIL,
    workers: Annotated[
        int, typer.Option(help="Threads, processes or Ray CPUs at work (same results for any).")
    ] = 1,
    concurrency: Annotated[
        int,
        typer.Option(
            help="Rollouts of an async --agent at once, on one event loop (same results)."
        ),
    ] = 1,
    entry_points: Annotated[
        bool, typer.Option(help="Also load installed otel_replay.resamplers entry points.")
    ] = True,
    json_out: Annotated[
        Path | None,
        typer.Option("--json-out", "--out", help="Write the JSON report here (- for stdout)."),
    ] = None,
    html_out: Annotated[
        Path | None,
        typer.Option("--html", help="Write the report as one self-contained HTML page here."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Roll out by re-running this live agent (module:function)."),
    ] = None,
    instrument: Annotated[
        str | None,
        typer.Option(
            "--instrument",
            metavar="SDKS",
            help="The agent's model calls go through these SDKs (openai, anthropic), unmodified.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the rollouts and resample-function calls it would take, then stop.",
        ),
    ] = False,
    keep_rollouts: Annotated[
        int,
        typer.Option(
            "--keep-rollouts",
            metavar="N",
            help="Keep the first N rollouts of each plan in the store, each a run naming the run "
            "and the plan it rolled out (diff ID ROLLOUT shows what changed); with "
            "--otlp-endpoint also sent, each its own trace linked to the run (one run only).",
        ),
    ] = 0,
    otlp_endpoint: OtlpEndpointOption = None,
    otlp_header: OtlpHeaderOption = None,
    otlp_compression: OtlpCompressionOption = None,
    annotate: Annotated[
        str | None,
        typer.Option(
            "--annotate",
            metavar="phoenix://HOST:PORT|mlflow://HOST:PORT",
            help="Write the verdict to this Phoenix as span annotations, or to this MLflow as "
            "assessments: on the Point of Commitment's span and on the run's root span or trace "
            "(the run's trace must be there).",
        ),
    ] = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Attribute a failed run to the step where its failure became inevitable; or many runs."""
    with user_errors():
        to = rollouts_destination(keep_rollouts, otlp_endpoint, otlp_header, otlp_compression)
        config = AttributionConfig(
            rollouts=rollouts or DEFAULT_ROLLOUTS, permutations=permutations, seed=seed,
            shapley_se=shapley_se, max_rollouts=max_rollouts, **budget_settings(budget),
            strategy=strategy or (Strategy.ADAPTIVE if rollouts is None else Strategy.SWEEP),
            method=method, fail_threshold=fail_threshold, margin=margin, repair=repair,
            on_success=on_success, on_resampler_error=on_resampler_error, workers=workers,
            concurrency=concurrency, driver=driver, max_turns=max_turns, swap_model=swap_model,
            swap_from=swap_from, keep_rollouts=keep_rollouts, root_cause=root_cause,
        )  # fmt: skip
        code = user_code(
            resamplers=resamplers, verifier=verifier, success_if=success_if, fail_if=fail_if,
            judge=judge, judge_model=judge_model, judge_base_url=judge_base_url, tools=tools,
            llm=llm, llm_base_url=llm_base_url, llm_model=llm_model,
            llm_temperature=llm_temperature, agent=agent, instrument=instrument,
            entry_points=entry_points,
        )  # fmt: skip
        chosen = Selection(
            ids=tuple(ids or ()), where=where, failing=all_failing, since=since, limit=limit,
            fail_threshold=fail_threshold,
        )  # fmt: skip
        if not (chosen.ids or where or all_failing or since):
            raise ReplayError("name a run (ID), or choose runs with --where or --all-failing")
        if chosen.many and keep_rollouts:
            raise ReplayError("--keep-rollouts keeps the rollouts of one run: name one run")
    # the engine, the report and the table load here, not for `--help` or another command
    from otel_replay.cli._attribute_many import run_many
    from otel_replay.cli._attribute_view import run
    from otel_replay.cli._executing import Running

    running = Running(executor, ray_address, force)
    if chosen.many:
        single_only = (json_out, html_out, dry_run, annotate)
        run_many(store, chosen, config, code, running, single_only, json=json)
    else:
        outputs = (json_out, html_out, annotate)
        run(store, chosen.ids[0], config, code, outputs, running, json=json, dry_run=dry_run, to=to)
