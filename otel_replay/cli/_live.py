"""``agent-replay record / replay / fork / diff``: live agents, exact replay, fault injection."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.table import Table

from otel_replay._files import write_output
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
    InstrumentOption,
    JsonOption,
    RedactCommonOption,
    StoreOption,
    console,
    load_agent,
    open_store,
    plural,
    print_json,
    printable,
    redact_patterns,
    short,
    shown,
    user_errors,
)
from otel_replay.cli._remembered import (
    agent_for,
    recorded_unless_none,
    say_raised,
    sdks_for,
    sdks_given,
    spec_given,
)
from otel_replay.cli._replayable import warn_partial
from otel_replay.cli._send import (
    OtlpCompressionOption,
    OtlpEndpointOption,
    OtlpHeaderOption,
    Sending,
    otlp_destination,
    said_sent,
    send_runs,
)
from otel_replay.errors import SettingError
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import FAULTS, Driver
from otel_replay.replayable import check_servable
from otel_replay.resamplers import judged
from otel_replay.store import outcome_source
from otel_replay.transcript import compared_output

if TYPE_CHECKING:
    from otel_replay.replay import KeptFork, Move, Recording, Replay, TrajectoryDiff

# Each command imports the part of the library it runs when it runs: `--help` and `list` load none.

AgentOption = Annotated[
    str | None,
    typer.Option("--agent", help="The agent: module:function or file.py:function, run(ctx, ...)."),
]


def _json_option(text: str | None, option: str) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise SettingError(f"{option} {text!r} is not JSON: {exc.msg}") from None


def record_command(
    agent: Annotated[str, typer.Option("--agent", help="module:function or file.py:function.")],
    instrument: InstrumentOption = None,
    redact: Annotated[
        list[str] | None,
        typer.Option(
            "--redact",
            metavar="REGEX",
            help="Replace matching text with [REDACTED] in what is recorded (repeatable).",
        ),
    ] = None,
    redact_common: RedactCommonOption = False,
    input: Annotated[
        str | None,
        typer.Option("--input", help="JSON: an object of keyword arguments, or one argument."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of ctx.rng.")] = 0,
    outcome: VerifierOption = None,
    success_if: SuccessIfOption = None,
    fail_if: FailIfOption = None,
    judge: JudgeOption = None,
    judge_model: JudgeModelOption = None,
    judge_base_url: JudgeBaseUrlOption = None,
    resamplers: Annotated[
        list[str] | None,
        typer.Option("--resamplers", help="Used for steps called without produce=."),
    ] = None,
    lax: Annotated[
        bool,
        typer.Option("--lax", help="Store a lossy copy of outputs that are not JSON, and warn."),
    ] = False,
    otlp_out: Annotated[
        Path | None, typer.Option(help="Also write the run's spans as OTLP JSON.")
    ] = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Run an agent live, store the recorded trajectory, print its id. Each step is stored as it
    completes: a run killed half-way is kept up to its last whole step (agent-replay resume
    continues it)."""
    from otel_replay.otlp_encode import request_to_otlp_json
    from otel_replay.replay import DurableLedger, record

    with user_errors():
        registry, scorer = user_code(
            resamplers=resamplers, verifier=outcome, success_if=success_if, fail_if=fail_if,
            judge=judge, judge_model=judge_model, judge_base_url=judge_base_url, entry_points=False
        ).load()  # fmt: skip
        function = load_agent(agent, instrument)
        with open_store(store, write=True, create=True) as db, DurableLedger(db) as ledger:
            recording = record(
                function,
                arguments=_json_option(input, "--input"),
                seed=seed,
                registry=registry,
                lax=lax,
                outcome=scorer,
                agent_spec=agent,
                redact=redact_patterns(redact, redact_common),
                ledger=ledger.keep,
                verifier_spec=outcome or "",
            )
            trajectory = judged(recording.trajectory, scorer)  # a judge's verdict kept with it
            ledger.finish(trajectory)
        if otlp_out is not None:
            write_output(
                otlp_out, orjson.dumps(request_to_otlp_json(recording.spans.request)) + b"\n"
            )
    _said_recorded(recording, trajectory, json)


def _said_recorded(recording: Recording, trajectory: Trajectory, json: bool) -> None:
    """The recorded run, printed; exit 1 when its agent raised (the run is stored all the same)."""
    if json:
        from otel_replay.report import recorded_record

        print_json(recorded_record(recording))
    else:
        _print_recorded(trajectory)
    if recording.raised:  # stored (a crash is evidence), but the run did not finish
        say_raised(recording.raised, "recorded up to there")
        raise typer.Exit(1)


def _print_recorded(trajectory: Trajectory) -> None:
    for index in trajectory.metadata.get("lossy_steps", []):
        console.print(
            f"[yellow]warning: step {index}'s output was not JSON; stored a lossy copy[/]"
        )
    console.print(
        f"recorded {shown(trajectory.id)}: {plural(len(trajectory.steps), 'step')}, "
        f"outcome {_outcome(trajectory)}",
        highlight=False,
    )
    _print_verdict(trajectory)
    console.print(printable(trajectory.id), highlight=False, markup=False)


def _print_verdict(run: Trajectory) -> None:
    """What ``--judge`` said of the run, when it judged it."""
    said = run.metadata.get("judge")
    if isinstance(said, dict):
        verdict = said.get("verdict") or "no verdict"
        console.print(f"judge: {shown(verdict)}: {shown(said.get('reason'))}", highlight=False)


def replay_command(
    trajectory_id: Annotated[str, typer.Argument(metavar="ID", help="A recorded trajectory.")],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="module:function or file.py:function (default: an imported tool-calling run "
            "re-driven as its loop).",
        ),
    ] = None,
    live: Annotated[
        list[StepKind] | None,
        typer.Option("--live", help="Step kinds to execute for real (repeatable)."),
    ] = None,
    instrument: InstrumentOption = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Re-run an agent with its recorded outputs served and check it does exactly the same."""
    from otel_replay.replay import chat_loop, replay

    with user_errors():
        with open_store(store) as db:
            original = db.get(trajectory_id)
        live_kinds = set(live or ())
        served = [s.index for s in original.steps if s.kind not in live_kinds]
        warn_partial(check_servable(original, served, "a replay"), original.id)
        function = agent_for(original, agent, instrument) if agent else chat_loop(original)
        sdks = sdks_for(original, instrument)
        result = replay(original, function, live_kinds=live or (), instrument=sdks)
    if json:
        from otel_replay.report import replay_record

        print_json(replay_record(result))
    else:
        _print_replay(result, agent is not None and instrument is None)
    if result.raised is not None and not result.raised_as_recorded:
        say_raised(result.raised, "the replay ends there")
    if not result.identical:
        raise typer.Exit(1)


def _print_replay(result: Replay, sdks_unsaid: bool) -> None:
    from otel_replay.replay import AgentRaised

    original = result.original
    if result.identical:
        console.print(shown(result.verdict), highlight=False)
        return
    if result.raised is not None and not result.raised_as_recorded:
        recorded = AgentRaised.of(original)
        was = f"raised {recorded.error}" if recorded else "returned"
        console.print(
            f"[bold red]diverged:[/] the agent raised at step {result.raised.step} (recorded: "
            f"{plural(len(original.steps), 'step')}, then it {shown(was)})"
        )
        if result.raised.step == 0 and original.steps and sdks_unsaid:
            console.print(
                "if the agent calls a model SDK itself, name it: --instrument openai (this run "
                "does not say which SDKs it was recorded through)",
                highlight=False,
            )
        if not result.diff.identical:
            _print_diff(result.diff)
    elif result.nondeterminism is not None:
        console.print(f"[bold red]diverged:[/] {shown(str(result.nondeterminism))}")
        if "seed" not in original.metadata:
            console.print(
                "this run was imported, not recorded by `agent-replay record`: replay it without "
                "--agent to re-drive its tool-calling loop, or record the agent to replay its code",
                highlight=False,
            )
    elif result.diff.identical and result.ending is not None:
        console.print(
            f"[bold red]diverged:[/] all {plural(len(original.steps), 'step')} identical, but "
            f"{shown(result.ending)}"
        )
    else:
        _print_diff(result.diff)


def fork_command(
    trajectory_id: Annotated[str, typer.Argument(metavar="ID", help="The run to fork.")],
    at: Annotated[
        int, typer.Option("--at", "--from", metavar="K", help="The step to change (from).")
    ],
    value: Annotated[
        str | None,
        typer.Option(
            "--value",
            metavar="JSON",
            help="The step's value: --do on a model turn, else --observe.",
        ),
    ] = None,
    do: Annotated[
        str | None,
        typer.Option(
            "--do",
            help="do(action): a model turn's new output message, or for a tool step "
            '{"arguments": {...}}: the call asked anew, the tool run on them.',
        ),
    ] = None,
    observe: Annotated[
        str | None,
        typer.Option("--observe", help="mock-observe: the call kept, this JSON returned instead."),
    ] = None,
    observe_error: Annotated[
        str | None,
        typer.Option(
            "--observe-error", metavar="TEXT", help="mock-observe: the call kept, it failed."
        ),
    ] = None,
    edit: Annotated[
        str | None,
        typer.Option(
            "--edit",
            metavar="PATCH",
            help="edit-context: a JSON Patch (RFC 6902) on the step's inputs; the step runs again "
            "on them through its resample function.",
        ),
    ] = None,
    fault_name: Annotated[
        str | None, typer.Option("--fault", help=f"A built-in fault: {', '.join(sorted(FAULTS))}.")
    ] = None,
    swap_model: Annotated[
        str | None,
        typer.Option(
            "--swap-model",
            metavar="MODEL",
            help="MODEL answers every model turn from --at K on.",
        ),
    ] = None,
    remove: Annotated[
        bool,
        typer.Option(
            "--remove",
            help="The step never happened: the run goes on without it (a removed tool call is "
            "left out of the conversation the loop sends).",
        ),
    ] = False,
    agent: AgentOption = None,
    instrument: InstrumentOption = None,
    driver: Annotated[
        Driver,
        typer.Option(
            metavar="MODE",
            help="Without --agent: auto, trace (walk the record) or chat (re-drive the loop).",
        ),
    ] = Driver.AUTO,
    max_turns: Annotated[
        int | None,
        typer.Option(metavar="N", help="Model turns the loop may take (default 2x the recorded)."),
    ] = None,
    resamplers: ResamplersOption = None,
    tools: ToolsOption = None,
    llm: LlmOption = None,
    llm_base_url: LlmBaseUrlOption = None,
    llm_model: LlmModelOption = None,
    llm_temperature: LlmTemperatureOption = 1.0,
    outcome: VerifierOption = None,
    success_if: SuccessIfOption = None,
    fail_if: FailIfOption = None,
    judge: JudgeOption = None,
    judge_model: JudgeModelOption = None,
    judge_base_url: JudgeBaseUrlOption = None,
    seed: Annotated[
        int | None,
        typer.Option(help="New randomness where the run diverges (default: the recorded seed)."),
    ] = None,
    otlp_endpoint: OtlpEndpointOption = None,
    otlp_header: OtlpHeaderOption = None,
    otlp_compression: OtlpCompressionOption = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Hold the steps before --at, change it (--do, --observe, --fault, --remove), continue, store
    the fork;
    with --otlp-endpoint, also send it out as OTLP, linked to the run it forks."""
    from otel_replay.replay import built_in_agent, fork_injection, injection, keep_fork
    from otel_replay.resamplers import rollout_code

    with user_errors():
        to = otlp_destination(otlp_endpoint, otlp_header, otlp_compression)
        code = user_code(
            resamplers=resamplers, verifier=spec_given(outcome) or None, success_if=success_if,
            fail_if=fail_if, judge=judge, judge_model=judge_model, judge_base_url=judge_base_url,
            tools=tools, llm=llm, llm_base_url=llm_base_url, llm_model=llm_model,
            llm_temperature=llm_temperature, entry_points=False,
        )  # fmt: skip
        with open_store(store, write=True) as db:
            original = db.get(trajectory_id)
            held = range(min(max(at, 0), len(original.steps)))
            warn_partial(check_servable(original, held, "a fork"), original.id)
            move = _move(value, do, observe, observe_error, edit, fault_name, swap_model, remove)
            injected = injection(original, at, move)
            runner = (
                agent_for(original, agent, instrument)
                if agent
                else built_in_agent(original, driver, max_turns)
            )
            injected.check_agent(runner, original)  # before the resample functions load
            with rollout_code(code, db, original, swap_model) as (registry, scorer):
                forked = fork_injection(
                    original, injected, agent=runner, registry=registry,
                    outcome=scorer if scorer is not None else recorded_unless_none(outcome),
                    verifier_spec=spec_given(outcome), seed=seed,
                    instrument=sdks_given(instrument),
                )  # fmt: skip
            forked = judged(forked, scorer)  # a judge's verdict kept with the fork
            kept = keep_fork(db, forked)  # a fork made the same way before is kept
    sending = send_runs(to, "the fork", [(kept.run, original, {})])
    _said_fork(original, kept, json, remembered=outcome is None, sending=sending)


def _said_fork(
    original: Trajectory,
    kept: KeptFork,
    json: bool,
    *,
    remembered: bool,
    sending: Sending | None = None,
) -> None:
    """The fork and its diff, printed, then what was sent of it; exit 1 when its agent raised, or
    it was not sent (the fork is stored)."""
    from otel_replay.replay import AgentRaised, diff

    forked = kept.run
    result = diff(original, forked)
    if json:
        from otel_replay.report import fork_record

        print_json(fork_record(forked, result, kept))
    else:
        _print_fork(kept, result, remembered=remembered)
    with said_sent(sending, json=json):
        raised = AgentRaised.of(forked)
        if raised is not None:  # stored (a crash is evidence), but the fork did not finish
            say_raised(raised, f"the fork is stored as {forked.id}, up to there")
            raise typer.Exit(1)


def _move(
    output: str | None,
    do: str | None,
    observe: str | None,
    observe_error: str | None,
    edit: str | None,
    fault_name: str | None,
    swap_model: str | None,
    remove: bool = False,
) -> Move:
    """The one move the options ask for."""
    from otel_replay.replay import Move, MoveKind

    given: list[tuple[MoveKind, str | None]] = [
        (kind, text)
        for kind, text in (
            (MoveKind.OUTPUT, output),
            (MoveKind.DO, do),
            (MoveKind.OBSERVE, observe),
            (MoveKind.OBSERVE_ERROR, observe_error),
            (MoveKind.EDIT, edit),
            (MoveKind.FAULT, fault_name),
            (MoveKind.SWAP_MODEL, swap_model),
        )
        if text is not None
    ]
    if remove:
        given.append((MoveKind.REMOVE, None))
    if len(given) != 1:
        raise SettingError(
            "give exactly one of --do, --observe, --observe-error, --edit, --swap-model, "
            "--value, --fault, --remove"
        )
    return Move.parse(*given[0])


def _print_fork(kept: KeptFork, result: TrajectoryDiff, *, remembered: bool) -> None:
    forked = kept.run
    console.print(f"forked {shown(forked.id)}", highlight=False)
    if kept.same:
        console.print(
            "the same as the fork made this way before: kept, not stored again", highlight=False
        )
    elif kept.earlier is not None:
        console.print(
            f"again: the earlier fork {shown(kept.earlier)}, made the same way, is kept",
            highlight=False,
        )
    spec = forked.metadata.get("verifier")
    if remembered and spec and spec == result.left.metadata.get("verifier"):
        console.print(
            f"scored with {shown(spec)}, as {shown(result.left.id)} was",
            highlight=False,
        )
    _print_verdict(forked)
    stale = forked.metadata.get("stale_steps")
    if stale:
        console.print(
            f"[yellow]steps {stale} had no resample function: held, and may be stale[/] "
            "(--resamplers FILE, or --tools recorded --llm openai, would run them again)"
        )
    served = forked.metadata.get("served_after_fork")
    if served:
        console.print(
            f"steps {served} after the fork still matched a recorded call and were served from the "
            "record (a stateful tool might answer differently now)"
        )
    _print_diff(result)


def diff_command(
    left: Annotated[str, typer.Argument(metavar="A", help="A trajectory id or prefix.")],
    right: Annotated[str, typer.Argument(metavar="B", help="Another trajectory id or prefix.")],
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Where two runs first part, what each returned there, and how each ended."""
    from otel_replay.replay import diff

    with user_errors(), open_store(store) as db:
        result = diff(db.get(left), db.get(right))
    if json:
        from otel_replay.report import diff_record

        print_json(diff_record(result))
    else:
        _print_diff(result)


def _outcome(trajectory: Trajectory) -> str:
    return "unknown" if trajectory.outcome is None else f"{trajectory.outcome:g}"


def _outcome_from(trajectory: Trajectory) -> str:
    """The outcome and where it came from (``0 (verifier:builtin.success_if('v841'))``)."""
    source = outcome_source(trajectory.outcome, trajectory.metadata)
    return _outcome(trajectory) + (f" ({source})" if source else "")


def _print_diff(result: TrajectoryDiff) -> None:
    left, right = result.left, result.right
    if result.identical:
        console.print(f"identical: {plural(len(left.steps), 'step')}, same hashes", highlight=False)
        return
    k = result.common
    prefix = f"steps 0..{k - 1} identical" if k else "no step in common"
    console.print(
        f"{prefix}; first divergence at step {k} ({', '.join(result.differences)})"
        + (f": {result.change}" if result.change else ""),
        highlight=False,
    )
    a, b = result.step_pair()
    table = Table(show_lines=True)
    table.add_column("")
    table.add_column(shown(left.id), overflow="fold")
    table.add_column(shown(right.id), overflow="fold")
    rows = [
        ("step", _label(a), _label(b)),
        ("inputs", _value(a, "inputs"), _value(b, "inputs")),
        ("returned", _value(a, "output"), _value(b, "output")),
    ]
    for name, x, y in rows:
        table.add_row(name, shown(x), shown(y))
    table.add_row("steps", str(len(left.steps)), str(len(right.steps)))
    table.add_row("outcome", *(_outcome_from(run) for run in (left, right)))
    console.print(table)
    for only in result.structure:
        run = left if only.side == "left" else right
        span = (
            f"step {only.start}"
            if only.stop - only.start == 1
            else f"steps {only.start}..{only.stop - 1}"
        )
        console.print(
            f"only {shown(run.id)} has {span}: {shown(', '.join(only.operations))}",
            highlight=False,
        )


def _label(step: Step | None) -> str:
    return "(run ended)" if step is None else f"{step.kind.value} {step.name}"


def _value(step: Step | None, what: str) -> str:
    if step is None:
        return ""
    if what == "output" and step.status.value == "error":
        return f"error: {step.error}"
    # a model turn's output as its message: an SDK's response and a resampled message read alike
    return short(step.inputs if what == "inputs" else compared_output(step.kind, step.output), 160)
