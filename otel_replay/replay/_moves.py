"""The intervention algebra's moves on a recorded run, as the plan mechanics they come down to.

* **do** on a model turn: its output (the agent's next action) is replaced: `Intervention.do`.
* **do** on a tool step: the action is the call in the model turn that asked for it, so that turn's
  output is replaced by the same message with the call's arguments changed (same call id), and the
  run goes on from there: the agent (or the tool-calling loop) now calls the tool with the new
  arguments, a call the record does not hold, so the tool runs live (`rewritten_call`).
* **mock-observe**: the recorded call kept, what came back replaced: `Intervention.observe`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from otel_replay.errors import InterventionError
from otel_replay.model import StepKind, Trajectory


def rewritten_call(run: Trajectory, at: int, arguments: Any) -> tuple[int, Any]:
    """For do(arguments) on tool step ``at``: the model turn that asked for it, and that turn's
    output with the call's arguments replaced."""
    step = run.steps[at]
    if step.kind is not StepKind.TOOL:
        raise InterventionError(f"step {at} is {step.kind.value} {step.name!r}, not a tool call")
    if not isinstance(arguments, dict):
        raise InterventionError(
            f'--do on a tool step takes {{"arguments": {{...}}}}, got {arguments!r}'
        )
    call_id = step.inputs.get("tool_call_id")
    for turn in reversed(run.steps[:at]):
        if turn.kind is not StepKind.LLM:
            continue
        patched = copy.deepcopy(turn.output)
        if _patch(patched, step.name, call_id, arguments):
            return turn.index, patched
    raise InterventionError(
        f"no model turn before step {at} asked for {step.name!r}"
        + (f" (call {call_id})" if call_id else "")
        + ": --do changes a call the model made; use --observe to change what came back"
    )


def _patch(output: Any, name: str, call_id: Any, arguments: dict[str, Any]) -> bool:
    """Replace the arguments of the call to ``name`` (``call_id`` when known) in a model turn's
    output, in any of the shapes turns are recorded in; whether one was found."""
    for message in _messages(output):
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            function = call.get("function") if isinstance(call.get("function"), dict) else None
            called = (function or call).get("name")
            if called != name or (call_id and call.get("id") not in (None, call_id)):
                continue
            if function is not None:  # OpenAI's wire shape: arguments as a JSON string
                function["arguments"] = json.dumps(arguments)
            else:
                call["arguments"] = arguments
            return True
    return False


def _messages(output: Any) -> list[dict[str, Any]]:
    if isinstance(output, dict) and isinstance(output.get("choices"), list):
        return [
            c["message"]
            for c in output["choices"]
            if isinstance(c, dict) and isinstance(c.get("message"), dict)
        ]
    if isinstance(output, dict):
        return [output]
    if isinstance(output, list):
        return [m for m in output if isinstance(m, dict)]
    return []
