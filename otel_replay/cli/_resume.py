"""``agent-replay resume``: continue a recorded run that ended early, from its last whole step."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from otel_replay.cli._common import (
    InstrumentOption,
    JsonOption,
    StoreOption,
    console,
    open_store,
    plural,
    print_json,
    shown,
    user_errors,
)
from otel_replay.cli._remembered import (
    agent_for,
    say_raised,
    sdks_given,
    spec_given,
    verifier_given,
)
from otel_replay.cli._send import (
    OtlpCompressionOption,
    OtlpEndpointOption,
    OtlpHeaderOption,
    otlp_destination,
    said_sent,
    send_runs,
)
from otel_replay.resamplers import load_registry

if TYPE_CHECKING:
    from otel_replay.model import Trajectory
    from otel_replay.replay import Resumed


def resume_command(
    trajectory_id: Annotated[str, typer.Argument(metavar="ID", help="The run that ended early.")],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="module:function or file.py:function (default: an imported tool-calling run "
            "goes on as its loop, the model's resample function answering).",
        ),
    ] = None,
    instrument: InstrumentOption = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--verifier",
            "--outcome",
            help="module:function scoring the new run (default: the one the run was scored "
            "with; none: none).",
        ),
    ] = None,
    resamplers: Annotated[
        list[str] | None,
        typer.Option("--resamplers", help="Used for steps called without produce=."),
    ] = None,
    otlp_endpoint: OtlpEndpointOption = None,
    otlp_header: OtlpHeaderOption = None,
    otlp_compression: OtlpCompressionOption = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Continue a run that ended early (killed, or its agent raised): its recorded steps are
    served, nothing of them runs again, and the agent goes on live from there. Stores the result
    as a new run linked to the original (with --otlp-endpoint, also sent out as OTLP)."""
    from otel_replay.replay import DurableLedger, chat_loop, resume

    with user_errors():
        to = otlp_destination(otlp_endpoint, otlp_header, otlp_compression)
        registry = load_registry(resamplers or ())
        scorer = verifier_given(outcome)
        with open_store(store, write=True) as db, DurableLedger(db) as ledger:
            original = db.get(trajectory_id)
            function = (
                agent_for(original, agent, instrument)
                if agent
                else chat_loop(original, goes_on=True)
            )
            done = resume(
                original,
                function,
                registry=registry,
                outcome=scorer,
                ledger=ledger.keep,
                agent_spec=agent or "",
                verifier_spec=spec_given(outcome),
                instrument=sdks_given(instrument),
            )
            ledger.finish(done.trajectory)
    sending = send_runs(to, "the resumed run", [(done.trajectory, original, {})])
    _print_resumed(original, done, json)
    with said_sent(sending, json=json):
        if done.raised:  # stored (a crash is evidence), but the run did not finish
            again = " again" if "agent_error" in original.metadata else ""
            say_raised(done.raised, f"{done.trajectory.id} is stored up to there", again)
            raise typer.Exit(1)


def _print_resumed(original: Trajectory, done: Resumed, json: bool) -> None:
    run = done.trajectory
    if json:
        from otel_replay.report import resumed_record

        print_json(resumed_record(original, done))
        return
    console.print(
        f"resumed {shown(original.id)} from step {done.frontier} as {shown(run.id)}: "
        f"{plural(done.served, 'step')} served from the record, "
        f"{plural(len(run.steps) - done.served, 'step')} live; outcome {run.outcome}",
        highlight=False,
    )
