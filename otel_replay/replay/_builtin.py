"""The built-in agent a run is re-driven by when no agent code is given: its tool-calling loop,
rebuilt from the record (`_chat`), or none, and the record is walked."""

from __future__ import annotations

from otel_replay.errors import AgentError, setting
from otel_replay.model import Trajectory
from otel_replay.replay._chat import chat_agent, chat_record
from otel_replay.replay._drivers import Driver
from otel_replay.replay._made import AgentFunction


def chat_loop(
    run: Trajectory, max_turns: int | None = None, goes_on: bool = False
) -> AgentFunction:
    """The built-in agent that runs ``run``'s tool-calling loop (at most ``max_turns`` model turns;
    by default twice the recorded). ``goes_on``: a record that ends on a tool's result asks the
    model the next turn (resuming a run cut short). A run that is not a tool-calling chat is an
    `AgentError`: it needs the agent that ran it."""
    if max_turns is not None and max_turns < 1:
        raise AgentError(f"{setting('max_turns', max_turns)} must be at least 1")
    record = chat_record(run, max_turns)
    if record is None:
        raise AgentError(
            f"{run.id} is not a tool-calling chat (model steps with messages whose turns ask for "
            "the tool steps that follow them); give the agent that ran it: "
            + setting("agent", "module:function")
        )
    return chat_agent(record, goes_on)


def built_in_agent(
    run: Trajectory, driver: Driver = Driver.AUTO, max_turns: int | None = None
) -> AgentFunction | None:
    """The agent ``driver`` asks for when no agent code is given: the chat loop for
    `Driver.CHAT` (a run that is not a tool-calling chat is an `AgentError`), and for `Driver.AUTO`
    on a tool-calling chat; None where the record is walked (`Driver.TRACE`, or ``AUTO`` on any
    other run)."""
    if driver is Driver.CHAT or (driver is Driver.AUTO and chat_record(run) is not None):
        return chat_loop(run, max_turns)
    return None
