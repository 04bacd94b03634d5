"""The chat-loop driver: an imported tool-calling run re-driven as the agent it was.

No agent code is needed: the standard tool-calling loop is rebuilt from the record — the opening
messages, the tools, the model and its parameters — and runs as a built-in agent through the agent
context (`AgentContext.call`), so plans, cassette matching by op_key, divergence and per-position
randomness all apply unchanged:

    a model turn; each tool call it asks for, in order, with the arguments it asked for; their results
    back into the conversation as ``role: tool`` messages in the store's one shape
    (`otel_replay.messages.tool_message`: the result's text, the call's id, the tool's name); again,
    until a turn asks for no tool (the final answer) or the turn limit. A tool call a plan removes
    never happened: it is left out of the turn's message and has no result after it.

Until the run first departs from the record, every model call is made with its recorded inputs,
verbatim (so an unmodified run replays hash for hash, whatever instrumentation wrote the messages);
after it, the conversation is the recorded prefix plus this rollout's own turns and tool results.
Steps that are neither model turns nor the tool calls they asked for (a retrieval between turns)
keep their place after the turn they followed, with their recorded inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from otel_replay.messages import (
    assistant_message,
    conversation,
    tool_message,
    without_conversation,
)
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay._live import agent_driver
from otel_replay.replay._plan import Plan
from otel_replay.replay._rollout import Rollout
from otel_replay.replay._steps import AgentContext, StepError
from otel_replay.resamplers import Registry


@dataclass(frozen=True, slots=True)
class ChatRecord:
    """What a tool-calling run's record says about its loop."""

    model: str
    turns: tuple[Step, ...]  # the recorded model turns
    answers: tuple[tuple[Step, ...], ...]  # per turn: the recorded tool steps answering its calls
    extras: tuple[tuple[Step, ...], ...]  # per turn: the other steps that followed it
    max_turns: int
    # per turn: the recorded reply as the store's message and the tool calls it asks for, read
    # once for every rollout the record serves it to
    replies: tuple[tuple[dict[str, Any], list[dict[str, Any]]] | None, ...] = ()

    def inputs(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """A model call's inputs in the recorded shape, for a conversation off the record."""
        recorded = without_conversation(self.turns[-1].inputs)  # it is in the messages alone
        inputs: dict[str, Any] = {k: recorded[k] for k in ("model",) if k in recorded}
        inputs["messages"] = messages
        inputs.update({k: recorded[k] for k in ("tools", "parameters") if k in recorded})
        return inputs


def chat_record(trajectory: Trajectory, max_turns: int | None = None) -> ChatRecord | None:
    """The loop a run's record shows, or None when it is not a tool-calling chat (a model step
    without a conversation, no turn asking for a tool, or a tool step no turn asked for)."""
    turns = [s for s in trajectory.steps if s.kind is StepKind.LLM]
    if not turns or not all(conversation(s.inputs) for s in turns):
        return None
    if not any(_calls(s.output) for s in turns):
        return None
    answers: list[list[Step]] = [[] for _ in turns]
    extras: list[list[Step]] = [[] for _ in turns]
    turn = -1
    waiting: list[str] = []
    for step in trajectory.steps:
        if step.kind is StepKind.LLM:
            turn += 1
            waiting = [str(c.get("name")) for c in _calls(step.output)]
        elif turn < 0:
            return None  # a step before the first model turn: not this loop
        elif step.name in waiting:  # a tool call (perhaps traced as a retrieval) a turn asked for
            waiting.remove(step.name)
            answers[turn].append(step)
        elif step.kind is StepKind.TOOL:
            return None  # a tool no turn asked for
        else:
            extras[turn].append(step)
    return ChatRecord(
        model=turns[0].name,
        turns=tuple(turns),
        answers=tuple(tuple(a) for a in answers),
        extras=tuple(tuple(e) for e in extras),
        max_turns=max_turns or 2 * len(turns),
        replies=tuple(_reply(s.output) for s in turns),
    )


def chat_agent(record: ChatRecord, goes_on: bool = False) -> Callable[[AgentContext], Any]:
    """The built-in agent that runs ``record``'s loop; returns the final answer's content. A
    record that ends on a tool's result ended there, unless ``goes_on`` (resuming a run cut
    short: the model is asked the next turn)."""

    def run(ctx: AgentContext) -> Any:
        on_record = True
        # The conversation so far is the last model call's (``said``) and what followed it (its
        # reply, then each tool's result, its name and its call's id): put together as messages
        # (`_messages`) only for a turn off the record, the one turn that sends it; a turn on the
        # record sends its recorded inputs.
        said: dict[str, Any] | None = None
        after: list[Any] = []
        for turn in range(record.max_turns):
            recorded = record.turns[turn] if turn < len(record.turns) else None
            on_record = on_record and recorded is not None
            inputs = (
                recorded.inputs
                if on_record and recorded is not None
                else record.inputs(_messages(said, after))
            )
            output = ctx.call(
                StepKind.LLM,
                record.model,
                inputs,
                recorded=recorded if on_record else None,
                checked=True,
            )
            on_record = on_record and recorded is not None and output == recorded.output
            served = recorded is not None and output is recorded.output  # the record's own
            read = record.replies[turn] if served and turn < len(record.replies) else _reply(output)
            if read is None:  # not a model's reply: the loop ends on it
                return output
            reply, calls = read
            said, after = inputs, [reply]
            if not calls:
                return reply.get("content")
            answers = list(record.answers[turn]) if on_record else []
            result: Any = None
            for call in calls:
                expected = answers.pop(0) if answers else None
                as_recorded = expected is not None and expected.name == call.get("name")
                if as_recorded and expected is not None:
                    # on the record: the call as the record holds it (its kind, its inputs)
                    kind, name, call_inputs = expected.kind, expected.name, expected.inputs
                else:
                    kind, name, call_inputs = StepKind.TOOL, str(call.get("name")), _call(call)
                    on_record = False
                before = len(ctx.ledger.steps)
                try:
                    result = ctx.call(
                        kind, name, call_inputs, recorded=expected if as_recorded else None
                    )
                except StepError as failure:
                    result = {"error": str(failure)}
                    on_record = (
                        on_record and expected is not None and expected.error == str(failure)
                    )
                else:
                    if len(ctx.ledger.steps) == before:  # removed: the call never happened
                        on_record = False
                        after[0] = _without_call(after[0], call)
                        continue
                    on_record = on_record and expected is not None and result == expected.output
                after.append((result, call.get("name"), call.get("id")))
            for extra in record.extras[turn] if turn < len(record.extras) else ():
                ctx.call(extra.kind, extra.name, extra.inputs, recorded=extra)
            if on_record and turn == len(record.turns) - 1 and not goes_on:
                return result  # the run ended here: its answer was a tool's (final_answer)
        return None

    run.__qualname__ = f"chat_loop(max_turns={record.max_turns})"
    run.built_in = True  # type: ignore[attr-defined]  # see otel_replay.replay.is_built_in
    return run


class ChatDriver(NamedTuple):
    """What `chat_driver` makes: the ``drive`` that rolls a plan out, and the run as it sees it
    (``marked``: steps no resample function can run are observed-only)."""

    drive: Callable[[Plan, int], Rollout]
    marked: Trajectory


def chat_driver(
    factual: Trajectory, registry: Registry, seed: int, max_turns: int | None = None
) -> ChatDriver | None:
    """Rollouts that re-drive ``factual`` as its tool-calling loop, and the run as they see it
    (steps without a resample function marked observed-only: served from the record, never run);
    None when the run is not a tool-calling chat. ``max_turns``: model turns a rollout may take
    (default twice the recorded turns)."""
    record = chat_record(factual, max_turns)
    if record is None:
        return None
    marked = dataclasses.replace(
        factual,
        steps=tuple(
            s if registry.lookup(s) is not None else dataclasses.replace(s, resamplable=False)
            for s in factual.steps
        ),
    )
    drive = agent_driver(marked, chat_agent(record), registry, seed)
    return ChatDriver(drive, marked)


def _without_call(reply: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    """A model's reply as the conversation goes on after ``call`` was removed: without it (a copy:
    the reply may be the record's own)."""
    calls = [c for c in reply.get("tool_calls") or [] if c is not call]
    kept = {k: v for k, v in reply.items() if k != "tool_calls"}
    return {**kept, "tool_calls": calls} if calls else kept


def _call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call's inputs in the recorded shape."""
    inputs: dict[str, Any] = {"arguments": call.get("arguments")}
    if isinstance(call.get("id"), str):
        inputs["tool_call_id"] = call["id"]
    return inputs


def _messages(said: dict[str, Any] | None, after: list[Any]) -> list[dict[str, Any]]:
    """The conversation a turn off the record sends: the last call's, then its reply and the
    tools' results as `tool_message` makes them."""
    messages = conversation(said) if said is not None else []
    messages.extend(m if isinstance(m, dict) else tool_message(*m) for m in after)
    return messages


def _calls(output: Any) -> list[dict[str, Any]]:
    read = _reply(output)
    return [] if read is None else read[1]


def _reply(output: Any) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """A model turn's output as the store's assistant message and the tool calls it asks for;
    None when it is not a model's reply."""
    message = assistant_message(output)
    if message is None:
        return None
    calls = message.get("tool_calls")
    return message, [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []
