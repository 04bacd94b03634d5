"""A run's steps as the conversation they make, in the store's message shape.

Wherever a conversation is built from steps — the model turns the importers rebuild for an exchange
its span did not show, the conversation the built-in model resampler sends for a walked rollout, the
prompt and answers of an exported preference pair — it is built here, so every builder says a step
the same way:

* a model step says its turn (`model_turn`): its reply read by `otel_replay.messages.assistant_message`,
  or a bare answer (text, a structured value) as an assistant message whose ``content`` is its text;
* a tool step says its result (`tool_result`): `otel_replay.messages.tool_message` of its output, or of
  ``{"error": its error}`` when it failed, with the step's name and the id of the call it answers.

The chat loop, which builds its conversation from live results rather than steps, gives them the same
shape through `tool_message` itself.

Wherever a step's output is compared with, or shown beside, another output of the same step (the
repair against the record, the two runs of a diff at their divergence), a model step's output is
read as its message first (`compared_output`): a run recorded with ``--instrument`` keeps the
response its SDK returned, while a resample function answers a message, and the two are compared as
messages, not as a response against a message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from otel_replay.messages import (
    Message,
    assistant_message,
    conversation,
    message_text,
    tool_message,
)
from otel_replay.model import Step, StepKind, StepStatus

__all__ = [
    "call_of",
    "calls_turn",
    "compared_output",
    "model_turn",
    "rebuilt",
    "said",
    "task",
    "tool_result",
]


def model_turn(output: Any) -> Message:
    """A model's output as its turn in the conversation: the reply it holds, else the output as an
    assistant message whose ``content`` is its text (`message_text`)."""
    return assistant_message(output) or {"role": "assistant", "content": message_text(output)}


def compared_output(kind: StepKind, output: Any) -> Any:
    """What the output of a step of ``kind`` is compared and shown as beside another output of the
    step: a model step's reply as the store's message (`assistant_message`: the response an SDK
    returned and a message a resample function answered read alike); any other output, and a
    model's bare answer (text, a list, a value that is no reply), as it is."""
    if kind is StepKind.LLM and isinstance(output, dict):
        message = assistant_message(output)
        if message is not None:
            return message
    return output


def tool_result(step: Step, call_id: Any = None) -> Message:
    """A tool step's result as the message the model is sent: its output, or ``{"error": ...}``
    when it failed; ``call_id`` (else the step's own ``tool_call_id``) as the call it answers."""
    answer = step.output if step.status is StepStatus.OK else {"error": step.error}
    own = step.inputs.get("tool_call_id")
    return tool_message(answer, step.name, call_id if isinstance(call_id, str) and call_id else own)


def said(step: Step) -> Message:
    """What ``step`` adds to the conversation: a model step its `model_turn`, any other its
    `tool_result`."""
    return model_turn(step.output) if step.kind is StepKind.LLM else tool_result(step)


def call_of(step: Step) -> dict[str, Any]:
    """The tool call a tool step answers, in the store's shape (``id`` when it records one)."""
    call: dict[str, Any] = {}
    if isinstance(step.inputs.get("tool_call_id"), str):
        call["id"] = step.inputs["tool_call_id"]
    call["name"] = step.name
    call["arguments"] = step.inputs.get("arguments")
    return call


def calls_turn(tools: Sequence[Step]) -> Message:
    """The model turn that asked for ``tools``' calls, and nothing else."""
    return {"role": "assistant", "tool_calls": [call_of(step) for step in tools]}


def rebuilt(opening: Iterable[Message], steps: Iterable[Step]) -> list[Message]:
    """``opening`` followed by what ``steps`` said: each model step's turn (one without an output
    said nothing) and each tool step's result, answering the first call of its name the latest turn
    made that no result answered yet (its id, else the step's own). Other steps say nothing."""
    messages = list(opening)
    pending: list[dict[str, Any]] = []
    for step in steps:
        if step.kind is StepKind.LLM and step.output is not None:
            reply = model_turn(step.output)
            messages.append(reply)
            pending = [c for c in reply.get("tool_calls") or [] if isinstance(c, dict)]
        elif step.kind is StepKind.TOOL:
            call = next((c for c in pending if c.get("name") == step.name), None)
            if call is not None:
                pending.remove(call)
            messages.append(tool_result(step, (call or {}).get("id")))
    return messages


def previous_response(inputs: Mapping[str, Any]) -> str | None:
    """The response a Responses API call continues (``previous_response_id``, at the top of its
    inputs or under ``parameters``), or None: its input is the whole conversation."""
    parameters = inputs.get("parameters")
    kept: Mapping[str, Any] = parameters if isinstance(parameters, Mapping) else {}
    found = inputs.get("previous_response_id", kept.get("previous_response_id"))
    return found if isinstance(found, str) and found else None


def chained(step: Step, earlier: Sequence[Step]) -> list[Message] | None:
    """The whole conversation of a model call: its own (`conversation`), after, for a Responses
    API call that continues an earlier response, the conversation of the call in ``earlier`` that
    made that response and its reply (the chain the server kept). None when the chain leads to a
    response ``earlier`` does not hold."""
    said = conversation(step.inputs)
    previous = previous_response(step.inputs)
    seen: set[str] = set()
    while previous is not None and previous not in seen:
        seen.add(previous)
        made = next(
            (
                s
                for s in reversed(earlier)
                if s.kind is StepKind.LLM
                and isinstance(s.output, Mapping)
                and s.output.get("id") == previous
            ),
            None,
        )
        if made is None:
            return None
        said = [*conversation(made.inputs), model_turn(made.output), *said]
        previous = previous_response(made.inputs)
    # each call of the chain restates its instructions: the conversation says them once
    told: list[Any] = []
    kept: list[Message] = []
    for message in said:
        if message.get("role") == "system":
            if message.get("content") in told:
                continue
            told.append(message.get("content"))
        kept.append(message)
    return kept


def task(steps: Iterable[Step], metadata: Mapping[str, Any]) -> str | None:
    """What the agent was asked: the text of the first user message of its first model turn that
    has one (a message's text parts joined), else its recorded input (``metadata["input"]``, what
    ``record`` keeps), else None. The judge shows it, the store keeps it in the run's row."""
    for step in steps:
        if step.kind is not StepKind.LLM:
            continue
        for message in conversation(step.inputs):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
    recorded = metadata.get("input")
    return None if recorded is None else message_text(recorded)


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ) or message_text(content)
    return message_text(content if content is not None else "")
