"""A model plays the tools: ``--tools simulate`` (and ``--tools recorded,simulate``).

A lone incident has one result for each of its calls, its own: recorded draws cannot vary them, so
a verdict would rest on steps never varied. Here the model server of ``--llm`` plays a tool the
store cannot vary. It is shown what the run's model was shown of the tool (its name, description
and parameter schema, from the recorded request), the call's arguments, and the tool's recorded
results as examples (this run's, and what the store holds for the same call), and asked for the
result this call might have returned; JSON is read as JSON, anything else kept as text.
``recorded,simulate`` takes the recorded alternatives first: a call the store holds more than one
result for (or any result, for a call the run never made) is drawn from them as ``--tools
recorded`` does, and only the rest is played.

Each simulated call is one request of the model server, noted in the rollout's log apart from
the model's own turns (`otel_replay.resamplers._draws.noted_simulation`), so the cost says what
the tools' simulation took.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

from otel_replay.hashing import canonical_json, op_key
from otel_replay.messages import message_text
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.resamplers._context import RolloutContext
from otel_replay.resamplers._draws import noted_simulation
from otel_replay.resamplers._openai import asked_in_responses
from otel_replay.resamplers._recorded import RecordedOutcomes, call_of

#: How many recorded results a tool is shown as examples, and how much of each.
EXAMPLES = 4
EXAMPLE_CHARACTERS = 1500

INSTRUCTIONS = (
    "You stand in for a tool of an AI agent's environment, so the agent can be re-run against "
    "other things the world might have answered. You are given the tool's name, description and "
    "parameter schema, the arguments of one call, and results the tool returned before. Reply "
    "with only the result this call might return now: in the form of the examples (JSON when "
    "they are JSON), plausible for these arguments, not necessarily the same as an example. No "
    "explanation, no code fence."
)


class Asker(Protocol):
    """What plays a tool: the built-in model's `ask`."""

    def ask(
        self, model: str, system: str, user: str, responses: bool = False
    ) -> tuple[str, int | None]: ...


class SimulatedTools:
    """The resample function of ``--tools simulate`` (``draws``: ``recorded,simulate``, the
    recorded alternatives first)."""

    def __init__(
        self, model: Asker, trajectory: Trajectory, draws: RecordedOutcomes | None = None
    ) -> None:
        self._model = model
        self._draws = draws
        self._tools = tool_definitions(trajectory)
        self._examples = _run_examples(trajectory)
        # the model the run's own turns asked (a server names models its own way), in the API
        # they were asked in
        first = next((s for s in trajectory.steps if s.kind is StepKind.LLM), None)
        self._asked = first.name if first is not None else ""
        self._responses = first is not None and asked_in_responses(first.inputs)
        self.__qualname__ = "simulated_tools(recorded first)" if draws else "simulated_tools"
        self.__module__ = "builtin"

    @property
    def draws(self) -> RecordedOutcomes | None:
        """The recorded draws taken first (``recorded,simulate``), if any."""
        return self._draws

    def recorded_first(self, step: Step) -> bool:
        """Whether ``step``'s call is answered from the store: it holds another result than the
        run's own (or any, for a call the run did not make)."""
        if self._draws is None or step.name not in self._draws.tools:
            return False
        found = self._draws.alternatives(step)
        return len(found) >= 2

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        if self._draws is not None:
            own = ctx.recorded is not None and _key(step) == _key(ctx.recorded)
            known = self._draws.results(_key(step)) if step.name in self._draws.tools else ()
            if (own and self.recorded_first(step)) or (not own and known):
                return self._draws(step, ctx)
        return self.play(step)

    def play(self, step: Step) -> Any:
        """The result the model makes up for ``step``'s call."""
        arguments = step.inputs.get("arguments")
        examples = list(self._examples.get(step.name, ()))
        if self._draws is not None and step.name in self._draws.tools:
            examples += [
                (arguments, r.output if r.status == StepStatus.OK.value else {"error": r.error})
                for r in self._draws.results(_key(step))
            ]
        shown: list[dict[str, Any]] = []
        seen: set[bytes] = set()
        for said, result in examples:
            mark = canonical_json([said, result])
            if mark not in seen and len(shown) < EXAMPLES:
                seen.add(mark)
                shown.append({"arguments": said, "result": _cut(result)})
        question = {
            "tool": step.name,
            **self._tools.get(step.name, {}),
            "arguments": arguments,
            "examples": shown,
        }
        try:
            text, tokens = self._model.ask(
                self._asked,
                INSTRUCTIONS,
                json.dumps(question, ensure_ascii=False),
                self._responses,
            )
        except Exception:
            noted_simulation(call_of(step), None)  # asked, and maybe paid: counted all the same
            raise
        noted_simulation(call_of(step), tokens)
        return result_of(text)


_FENCE = re.compile(r"```[a-zA-Z0-9_-]*")


def result_of(text: str) -> Any:
    """A played tool's reply as its result: JSON (inside a code fence too) as JSON, else text."""
    body = text.strip()
    # a fence and its language's name, then whatever the fence holds up to the closing fence: read
    # without a pattern around the body, which backtracked through a long run of blank lines
    fence = _FENCE.match(body)
    if fence and body.endswith("```") and fence.end() <= len(body) - 3:
        body = body[fence.end() : -3].strip()
    try:
        return json.loads(body)
    except ValueError:
        return body


def tool_definitions(trajectory: Trajectory) -> dict[str, dict[str, Any]]:
    """What the run's model turns were told of each tool: its description and parameter schema
    (from OpenAI's ``{"function": ...}``, the flat form, or Anthropic's ``input_schema``)."""
    found: dict[str, dict[str, Any]] = {}
    for step in trajectory.steps:
        if step.kind is not StepKind.LLM:
            continue
        parameters = step.inputs.get("parameters")
        kept = parameters if isinstance(parameters, dict) else {}
        tools = step.inputs.get("tools", kept.get("tools"))
        for tool in tools if isinstance(tools, list) else ():
            definition = _definition(tool)
            if definition is not None:
                name, told = definition
                found.setdefault(name, told)
    return found


def _definition(tool: Any) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(tool, Mapping):
        return None
    function = tool.get("function")
    spec: Mapping[str, Any] = function if isinstance(function, Mapping) else tool
    name = spec.get("name")
    if not isinstance(name, str):
        return None
    told: dict[str, Any] = {}
    if isinstance(spec.get("description"), str):
        told["description"] = spec["description"]
    schema = spec.get("parameters", spec.get("input_schema"))
    if isinstance(schema, Mapping):
        told["parameters"] = dict(schema)
    return name, told


def _run_examples(trajectory: Trajectory) -> dict[str, list[tuple[Any, Any]]]:
    """Each tool's calls in the run: its arguments and what it returned (a failure as
    ``{"error": …}``)."""
    found: dict[str, list[tuple[Any, Any]]] = {}
    for step in trajectory.steps:
        if step.kind is StepKind.TOOL:
            result = step.output if step.status is StepStatus.OK else {"error": step.error}
            found.setdefault(step.name, []).append((step.inputs.get("arguments"), result))
    return found


def _cut(result: Any) -> Any:
    """A long example cut short (as text): the model needs its form, not all of it."""
    text = result if isinstance(result, str) else message_text(result)
    if len(text) <= EXAMPLE_CHARACTERS:
        return result
    return text[:EXAMPLE_CHARACTERS] + "…"


def _key(step: Step) -> str:
    return step.op_key or op_key(step.kind.value, step.name, step.inputs)
