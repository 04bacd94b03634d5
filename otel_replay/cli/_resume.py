"""``agent-replay resume``: continue a recorded run that ended early, from its last whole step."""

from __future__ import annotations

from typing import Annotated

import typer

from otel_replay.cli._common import (
    InstrumentOption,
    JsonOption,
    StoreOption,
    console,
    load_agent,
    open_store,
    plural,
    print_error,
    print_json,
    shown,
    user_errors,
)
from otel_replay.resamplers import load_registry
from otel_replay.resamplers._loading import load_object


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
        typer.Option("--verifier", "--outcome", help="module:function scoring the new run."),
    ] = None,
    resamplers: Annotated[
        list[str] | None,
        typer.Option("--resamplers", help="Used for steps called without produce=."),
    ] = None,
    json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Continue a run that ended early (killed, or its agent raised): its recorded steps are
    served, nothing of them runs again, and the agent goes on live from there. Stores the result
    as a new run linked to the original."""
    from otel_replay.replay import resume
    from otel_replay.replay._builtin import chat_loop
    from otel_replay.replay._durable import DurableLedger

    with user_errors():
        registry = load_registry(resamplers or ())
        scorer = load_object(outcome, "--verifier") if outcome else None
        with open_store(store, write=True) as db, DurableLedger(db) as ledger:
            original = db.get(trajectory_id)
            function = load_agent(agent, instrument) if agent else chat_loop(original, goes_on=True)
            done = resume(
                original,
                function,
                registry=registry,
                outcome=scorer,
                ledger=ledger.keep,
                agent_spec=agent or "",
            )
            ledger.finish(done.trajectory)
    run = done.trajectory
    if json:
        from otel_replay.report._runs import resumed_record

        print_json(resumed_record(original, done))
    else:
        console.print(
            f"resumed {shown(original.id)} from step {done.frontier} as {shown(run.id)}: "
            f"{plural(done.served, 'step')} served from the record, "
            f"{plural(len(run.steps) - done.served, 'step')} live; outcome {run.outcome}",
            highlight=False,
        )
    if done.error:
        print_error(f"the agent raised {done.error} again; recorded up to there")
        raise typer.Exit(1)
