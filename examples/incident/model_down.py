"""The incident investigator on the night its model server went down: the third model call is
refused, and the agent, which does not catch that, raises. Recorded, this is a run that ended early;
``examples/docs/model-down.jsonl`` holds one such recording, made and exported with::

    agent-replay record --agent examples/incident/model_down.py:investigate \
        --verifier examples/incident/agent.py:outcome     # exit 1: the agent raised
    agent-replay export ID --out examples/docs/model-down.jsonl

``agent-replay resume d16af222 --agent examples/incident/agent.py:investigate`` serves its four
recorded steps to the investigator as usual (the server is back), which asks the model again from the
refused call on.
"""

from __future__ import annotations

from typing import Any

from otel_replay.replay import AgentContext

from .agent import investigate as investigate_as_usual

REFUSED_TURN = 3


class _ModelDownAtTurn:
    """The agent's context, with the model server refusing the ``turn``-th model call."""

    def __init__(self, ctx: AgentContext, turn: int) -> None:
        self._ctx = ctx
        self._turn = turn
        self._turns = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)

    def llm(self, name: str, produce: Any, **inputs: Any) -> Any:
        self._turns += 1
        if self._turns == self._turn:

            def produce() -> Any:
                raise ConnectionRefusedError("the model server at 127.0.0.1:8000 refused the call")

        return self._ctx.llm(name, produce=produce, **inputs)


def investigate(ctx: AgentContext) -> str:
    """`examples.incident.agent.investigate`, with the model down at its third turn."""
    return investigate_as_usual(_ModelDownAtTurn(ctx, REFUSED_TURN))  # type: ignore[arg-type]
