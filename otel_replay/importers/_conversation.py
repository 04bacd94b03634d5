"""Operations that only the conversation shows, rebuilt as steps, and tool steps completed from it.

Some agents run their tools without a span: a call exists only as a ``tool_calls`` entry of a model
turn's output, and its result only as a ``role: tool`` message in the next turn's input. Others record
one span for a whole exchange (automatic function calling), the turns between the user's message and
the final answer visible only in that span's input, or not at all. `reconstruct` rebuilds them:

* a **tool step** for every call a model turn made whose result the conversation holds and that no
  tool step records: its arguments, the result the model was given, status ``error`` when that result
  reports an error;
* an **llm step** for every model turn since the user last spoke that no llm step records, with the
  conversation up to it; in an exchange whose span shows no turns at all, one model turn before each
  group of its tool calls (calls that run back to back, without a model call between them), the
  conversation it saw built by `otel_replay.transcript` (the calls, then their results).

A tool step a span recorded is paired with the call it answers: by call id, else the first open call
of the same tool name since the last model turn. The call completes what the span left out (the call
id, arguments recorded as one bare value, a result the span did not keep).

Only an operation no span records is rebuilt. A model call whose span kept its input but not its
output (an instrumentation that reads no response for this API) recorded the turn a later history
shows all the same: that turn completes the span's step (its output, and the call ids of the tool
steps that answer its calls) rather than being rebuilt beside it. The span is the one whose input
ends where the turn begins in that history (or, with no input kept, the earliest such span).

Rebuilt steps go just before the model call whose input first shows them, and are listed in the
trajectory's ``metadata["reconstructed_steps"]``: no span recorded them, so they have no span id or
timestamps. Turns before the user's last message are history (an earlier session), never rebuilt,
nor are the calls they made.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from otel_replay.hashing import canonical_json
from otel_replay.importers._spans import maybe_json
from otel_replay.model import Step, StepKind, StepStatus
from otel_replay.transcript import calls_turn, tool_result

_ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback)\b", re.IGNORECASE)

#: Steps that answer a model's tool call (a tool may be traced as a retrieval).
_ANSWERS = frozenset({StepKind.TOOL, StepKind.RETRIEVER})

#: Tool calls that start within this long of the previous call's end ran in one model turn.
_SAME_TURN_NS = 1_000_000


def reconstruct(
    steps: Sequence[Step], exchanges: Mapping[int, Sequence[int]] | None = None
) -> tuple[list[Step], list[int], list[int]]:
    """``(steps with the rebuilt ones put in, positions of the rebuilt, new position of each given
    step)``. ``exchanges`` maps a model call that ran a whole exchange to the tool steps inside it."""
    turns = _exchange_turns(steps, exchanges or {})
    if not turns and not any(s.kind is StepKind.LLM and _messages(s) for s in steps):
        return list(steps), [], list(range(len(steps)))
    results = _AllResults(steps)
    out: list[Step] = []
    book = _Book(out, results)
    rebuilt: list[int] = []
    placed: list[int] = []
    for k, step in enumerate(steps):
        for turn in turns.get(k, ()):
            rebuilt.append(len(out))
            out.append(turn)
            book.open(turn.output)
        if step.kind is StepKind.LLM:
            for found in book.unrecorded(step):
                rebuilt.append(len(out))
                out.append(found)
            book.open(step.output)
            if step.output is None and step.status is StepStatus.OK:
                book.silent.append(len(out))  # its turn may show in a later call's input
        elif step.kind in _ANSWERS:
            step = book.pair(step, results)
        placed.append(len(out))
        out.append(step)
    return out, rebuilt, placed


class _Book:
    """Model turns met so far, the calls they made that no step has answered yet, and the calls
    steps record, so nothing is made twice."""

    def __init__(self, out: list[Step], results: Mapping[str, Any]) -> None:
        self.out = out  # the steps placed so far: a silent model call's is completed in place
        self.results = results
        self.silent: list[int] = []  # positions of recorded model calls whose output is unknown
        # Keys (canonical JSON of arguments) are made only when a history is examined: most runs
        # record every operation, and their histories are never examined.
        self.turns: set[Hashable] = set()
        self.calls: set[Hashable] = set()
        self.waiting: list[dict[str, Any]] = []  # calls of the latest model turns, not yet paired
        self.outputs: list[dict[str, Any]] = []  # the model turns met so far, in order
        self.history: list[dict[str, Any]] = []  # the previous model call's input
        self._keyed = 0  # outputs whose keys are in ``turns``
        self._answered: list[
            tuple[Any, Any, Any]
        ] = []  # (name, arguments, id) not yet in ``calls``

    def open(self, output: Any) -> None:
        """A model turn happened: remember it, and wait for its calls to be answered."""
        messages = joined_turns(_outputs(output))
        for message in messages:
            self.waiting.extend(_calls(message))
        if messages:
            self.outputs.append(messages[0])

    def pair(self, step: Step, results: Mapping[str, Any]) -> Step:
        """A tool step a span recorded: pair it with the call it answers, complete it from there."""
        step = unwrapped_response(step)
        call_id = step.inputs.get("tool_call_id")
        call = next(
            (c for c in self.waiting if isinstance(call_id, str) and c.get("id") == call_id),
            None,
        ) or next((c for c in self.waiting if c.get("name") == step.name), None)
        if call is None:
            self._remember(step.name, step.inputs.get("arguments"), call_id)
            return step
        self.waiting.remove(call)
        self._remember(call.get("name"), call.get("arguments"), call.get("id"))
        return _completed(step, call, results)

    def unrecorded(self, step: Step) -> list[Step]:
        """The model turns and tool calls ``step``'s input shows that no step records."""
        messages = joined_turns(_messages(step))
        spoke = [i for i, m in enumerate(messages) if m.get("role") == "user" and not _is_result(m)]
        last_user = spoke[-1] if spoke else -1
        turns = sum(1 for m in messages[last_user + 1 :] if _by_model(m))
        if not self.waiting and turns <= len(self.outputs):
            self.history = messages
            return []  # every call answered by a step, no turn that was not met: nothing to rebuild
        for output in self.outputs[self._keyed :]:
            self.turns.update(_turn_keys(output))
        self._keyed = len(self.outputs)
        messages = self._filled(messages)
        # an agent resends its history: what the previous call's input held was seen then
        seen = len(self.history)
        extends = 0 < seen <= len(messages) and messages[seen - 1] == self.history[-1]
        start = seen if extends else 0
        self.history = messages
        begin = max(start, last_user + 1)
        results = _results(messages, begin)
        found: list[Step] = []
        for position in range(begin, len(messages)):
            message = messages[position]
            if not _by_model(message):
                continue
            if _emptied(message):
                continue  # a turn whose text and calls were not kept: evidence of nothing
            keys = _turn_keys(message)
            if self.turns.isdisjoint(keys):
                if not self._complete(messages, position):
                    found.append(_model_turn(step, messages[:position], message))
                self.turns.update(keys)
            for call in _calls(message):
                result = results.get(_result_key(call, position))
                if result is None or self._recorded(call):
                    continue
                self._remember(call.get("name"), call.get("arguments"), call.get("id"))
                found.append(_tool_step(call, result.get("content")))
        self.waiting = [c for c in self.waiting if not self._recorded(c)]
        return found

    def _complete(self, messages: list[dict[str, Any]], position: int) -> bool:
        """Whether the model turn at ``position`` of a history is that of a recorded model call
        whose output is unknown: the first such call whose input ends where the turn begins (or
        that kept no input). Its step takes the turn as output, and each tool step after it that
        recorded one of the turn's calls without its id is completed from that call."""
        before = messages[position - 1] if position > 0 else None
        for at in self.silent:
            asked = joined_turns(_messages(self.out[at]))
            if asked and asked[-1] != before:
                continue
            turn = messages[position]
            self.silent.remove(at)
            self.out[at] = dataclasses.replace(self.out[at], output=turn)
            self.outputs.append(turn)
            calls = list(_calls(turn))
            for i in range(at + 1, len(self.out)):
                step = self.out[i]
                if step.kind is StepKind.LLM:
                    break
                call = next((c for c in calls if _answers(step, c)), None)
                if call is not None:
                    calls.remove(call)
                    self.out[i] = _completed(step, call, self.results)
            return True
        return False

    def _filled(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history with each emptied model turn (an instrumentation that kept its role but not
        its text or calls) replaced by the recorded turn it stands for: the k-th model turn since
        the user last spoke is the k-th of as many latest recorded turns."""
        spoke = [i for i, m in enumerate(messages) if m.get("role") == "user" and not _is_result(m)]
        since = [
            i for i, m in enumerate(messages) if _by_model(m) and i > (spoke[-1] if spoke else -1)
        ]
        if not any(_emptied(messages[i]) for i in since) or len(since) > len(self.outputs):
            return messages
        filled = list(messages)
        for i, output in zip(since, self.outputs[-len(since) :], strict=True):
            if _emptied(messages[i]):
                filled[i] = output
        return filled

    def _remember(self, name: Any, arguments: Any, call_id: Any) -> None:
        self._answered.append((name, arguments, call_id))

    def _recorded(self, call: dict[str, Any]) -> bool:
        for name, arguments, call_id in self._answered:
            self.calls.add(_call_key(name, arguments))
            if isinstance(call_id, str):
                self.calls.add(call_id)
        self._answered.clear()
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id in self.calls:
            return True
        return _call_key(call.get("name"), call.get("arguments")) in self.calls


def _answers(step: Step, call: dict[str, Any]) -> bool:
    """Whether a recorded tool step without a call id is the call ``call`` (the same tool, and the
    same arguments when the step kept them)."""
    if step.kind not in _ANSWERS or step.name != call.get("name"):
        return False
    if "tool_call_id" in step.inputs:
        return bool(step.inputs["tool_call_id"] == call.get("id"))
    arguments = step.inputs.get("arguments")
    return arguments is None or _call_key(step.name, arguments) == _call_key(
        call.get("name"), call.get("arguments")
    )


def _completed(step: Step, call: dict[str, Any], results: Mapping[str, Any]) -> Step:
    """A recorded tool step with what its call says and the span left out (a retrieval answering
    a call keeps its own inputs)."""
    if step.kind is not StepKind.TOOL:
        return step
    inputs = dict(step.inputs)
    arguments = maybe_json(call.get("arguments"))
    if (isinstance(arguments, dict) and not isinstance(inputs.get("arguments"), dict)) or (
        isinstance(arguments, dict) and _enveloped(inputs.get("arguments"), arguments)
    ):
        inputs["arguments"] = arguments
    call_id = call.get("id")
    if isinstance(call_id, str):
        inputs.setdefault("tool_call_id", call_id)
    output = step.output
    if output is None and step.status is StepStatus.OK and isinstance(call_id, str):
        output = maybe_json(results.get(call_id))
    if inputs == step.inputs and output is step.output:
        return step
    return dataclasses.replace(step, inputs=inputs, output=output)


def _enveloped(recorded: Any, arguments: dict[str, Any]) -> bool:
    """Whether a tool span recorded its call's arguments inside an envelope: an object holding the
    arguments the model sent as one of its values (``{"input": {...}, "options": null}``), beside
    only empty ones."""
    if not isinstance(recorded, dict) or recorded == arguments or not arguments:
        return False
    held = [key for key, value in recorded.items() if value == arguments]
    rest = [value for key, value in recorded.items() if key not in held]
    return len(held) == 1 and all(value in (None, {}, [], "") for value in rest)


def unwrapped_response(step: Step) -> Step:
    """A tool step whose result was recorded as the function response sent back to the model (an
    object naming the tool, and the call by id, around the result under ``response``) holds that
    result."""
    output = step.output
    if step.kind is not StepKind.TOOL or not isinstance(output, dict):
        return step
    if set(output) - {"id", "name", "response"} or "response" not in output:
        return step
    call_id = step.inputs.get("tool_call_id")
    if output.get("name") != step.name or ("id" in output and output["id"] != call_id):
        return step
    return dataclasses.replace(step, output=output["response"])


def _exchange_turns(
    steps: Sequence[Step], exchanges: Mapping[int, Sequence[int]]
) -> dict[int, list[Step]]:
    """For each exchange whose span shows none of its turns: a model turn to put before the first
    tool step of each group of calls, keyed by that tool step's position."""
    turns: dict[int, list[Step]] = {}
    for last, tools in exchanges.items():
        exchange = steps[last]
        if any(m.get("role") == "assistant" for m in _messages(exchange)) or not tools:
            continue  # the conversation shows the turns: rebuilt from it
        history = list(_messages(exchange))
        for group in _groups([steps[t] for t in tools], list(tools)):
            turn = calls_turn([steps[t] for t in group])
            turns.setdefault(group[0], []).append(_model_turn(exchange, list(history), turn))
            history.append(turn)
            history.extend(tool_result(steps[t]) for t in group)
    return turns


def _groups(tools: list[Step], positions: list[int]) -> list[list[int]]:
    """Tool calls that ran back to back (no model call between them) form one model turn's group."""
    groups: list[list[int]] = []
    previous_end: int | None = None
    for step, position in zip(tools, positions, strict=True):
        start = step.start_time_unix_nano
        if (
            groups
            and start is not None
            and previous_end is not None
            and start - previous_end <= _SAME_TURN_NS
        ):
            groups[-1].append(position)
            previous_end = step.end_time_unix_nano or start
            continue
        groups.append([position])
        previous_end = step.end_time_unix_nano or start
    return groups


def joined_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with each model turn recorded as one message per tool call made whole again.

    Parallel tool calls of one response are often recorded as consecutive model messages holding
    one call each and no text (a response's output items, one per call). Consecutive model
    messages that hold only tool calls are one turn: one message with all their calls (the first
    message's other keys kept)."""
    joined: list[dict[str, Any]] = []
    for message in messages:
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and _only_calls(previous)
            and _only_calls(message)
            and message.get("role") == previous.get("role")
        ):
            joined[-1] = {**previous, "tool_calls": [*_calls(previous), *_calls(message)]}
        else:
            joined.append(message)
    return joined


def _only_calls(message: dict[str, Any]) -> bool:
    return _by_model(message) and bool(_calls(message)) and not message.get("content")


#: Roles of the model's own turns in a history (``model`` is Gemini's name for it).
_MODEL_ROLES = frozenset({"assistant", "model"})


def _by_model(message: dict[str, Any]) -> bool:
    return message.get("role") in _MODEL_ROLES


def _messages(step: Step) -> list[dict[str, Any]]:
    messages = step.inputs.get("messages")
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def _outputs(output: Any) -> list[dict[str, Any]]:
    if isinstance(output, dict):
        return [output]
    if isinstance(output, list):
        return [m for m in output if isinstance(m, dict)]
    return []


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _emptied(message: dict[str, Any]) -> bool:
    return not message.get("content") and not _calls(message)


def _is_result(message: dict[str, Any]) -> bool:
    """A tool result, whatever role carries it (Anthropic sends them in user messages)."""
    return message.get("role") == "tool" or isinstance(message.get("tool_call_id"), str)


def _turn_keys(message: dict[str, Any]) -> set[Hashable]:
    """How a later history may show a model turn: by its call ids, by its calls, or (a turn without
    calls) by its text."""
    calls = _calls(message)
    keys: set[Hashable] = set()
    ids = tuple(c["id"] for c in calls if isinstance(c.get("id"), str))
    if ids:
        keys.add(("ids", ids))
    if calls:
        keys.add(("calls", tuple(_call_key(c.get("name"), c.get("arguments")) for c in calls)))
    else:
        text = message.get("content")
        keys.add(
            ("text", " ".join(text.split()) if isinstance(text, str) else canonical_json(text))
        )
    return keys


def _call_key(name: Any, arguments: Any) -> Hashable:
    return ("call", str(name), canonical_json(maybe_json(arguments)))


def _result_key(call: dict[str, Any], position: int) -> Hashable:
    call_id = call.get("id")
    return call_id if isinstance(call_id, str) else (position, str(call.get("name")))


def _results(messages: list[dict[str, Any]], begin: int = 0) -> dict[Hashable, dict[str, Any]]:
    """Tool results (from position ``begin`` on) by the call they answer: its id, else (the calling
    turn, the tool's name), else the calling turn's calls in order.

    A result answers a call of the model turn before it: the call its id names; a result without
    an id answers the first of the turn's unanswered calls of its tool's name, else the first
    unanswered one (a call with an id may be answered by a result that repeats no id)."""
    found: dict[Hashable, dict[str, Any]] = {}
    segment: list[dict[str, Any]] = []
    turn: tuple[int, dict[str, Any]] | None = None
    for position in range(begin, len(messages)):
        message = messages[position]
        if _by_model(message):
            _answer(turn, segment, found)
            turn, segment = (position, message), []
        elif _is_result(message):
            segment.append(message)
    _answer(turn, segment, found)
    return found


def _answer(
    turn: tuple[int, dict[str, Any]] | None,
    results: list[dict[str, Any]],
    found: dict[Hashable, dict[str, Any]],
) -> None:
    """Pair the results after one model turn with its calls (see `_results`)."""
    for message in results:
        call_id = message.get("tool_call_id")
        if isinstance(call_id, str):
            found[call_id] = message
    if turn is None:
        return
    position, model = turn
    open_calls = [
        (_result_key(c, position), str(c.get("name")))
        for c in _calls(model)
        if _result_key(c, position) not in found
    ]
    for message in results:
        if isinstance(message.get("tool_call_id"), str):
            continue  # it answers the call its id names (maybe one of an earlier turn)
        if not open_calls:
            break
        name = message.get("name")
        match = next((c for c in open_calls if c[1] == name), open_calls[0])
        open_calls.remove(match)
        found[match[0]] = message


class _AllResults(Mapping[str, Any]):
    """Every tool result the model calls' inputs show, by call id; gathered on first use (only a
    tool step whose span kept no result needs them)."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self._steps = steps
        self._found: dict[str, Any] | None = None

    def _gathered(self) -> dict[str, Any]:
        if self._found is None:
            self._found = {}
            for step in self._steps:
                if step.kind is StepKind.LLM:
                    for key, message in _results(_messages(step)).items():
                        if isinstance(key, str):
                            self._found.setdefault(key, message.get("content"))
        return self._found

    def __getitem__(self, key: str) -> Any:
        return self._gathered()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._gathered())

    def __len__(self) -> int:
        return len(self._gathered())


def _model_turn(call: Step, history: list[dict[str, Any]], output: dict[str, Any]) -> Step:
    inputs: dict[str, Any] = {k: call.inputs[k] for k in ("model",) if k in call.inputs}
    inputs["messages"] = history
    inputs.update({k: call.inputs[k] for k in ("tools", "parameters") if k in call.inputs})
    return Step(kind=StepKind.LLM, name=call.name, inputs=inputs, output=output)


def _tool_step(call: dict[str, Any], content: Any) -> Step:
    inputs: dict[str, Any] = {"arguments": maybe_json(call.get("arguments"))}
    if isinstance(call.get("id"), str):
        inputs["tool_call_id"] = call["id"]
    output = maybe_json(content)
    if _is_error(output):
        text = output if isinstance(output, str) else canonical_json(output).decode()
        return Step(StepKind.TOOL, str(call.get("name")), inputs, None, StepStatus.ERROR, text)
    return Step(StepKind.TOOL, str(call.get("name")), inputs, output)


def _is_error(result: Any) -> bool:
    """A result that reports a failure: an object with an ``error``, or text opening with one."""
    if isinstance(result, dict):
        return bool(result.get("error")) or result.get("is_error") is True
    return isinstance(result, str) and bool(_ERROR_TEXT.match(result))
