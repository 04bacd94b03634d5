"""The intervention algebra's moves on a recorded run, their rules, and the plan mechanics they
come down to: what `agent-replay fork` does between reading its options and storing the fork, for a
Python caller too (`fork_move`).

* **do** on a model turn: its output (the agent's next action) is replaced: `Intervention.do`.
* **do** on a tool step: the action is the call in the model turn that asked for it, so that turn's
  output is replaced by the same message with the call's arguments changed (same call id), and the
  run goes on from there: the agent (or the tool-calling loop) now calls the tool with the new
  arguments, a call the record does not hold, so the tool runs live (`rewritten_call`). The walk
  cannot make a call anew: this move needs an agent or the chat loop.
* **mock-observe**: the recorded call kept, what came back replaced (a value, or a failure):
  `Intervention.observe`; a built-in fault (`FAULTS`) is one too.
* **output**: do on a model turn (its output is the action), observe on any other step.
* **edit-context**: the step's inputs with a JSON Patch applied, the step run again on them.
* **swap-model**: every model turn from the step on is answered by another model.
* **remove**: the step never happened: the run goes on without it (`REMOVE`). The walk leaves it
  out; a live agent's call is answered ``None`` and not recorded; the tool-calling loop leaves a
  removed tool call out of the conversation (the call dropped from the turn that asked for it, no
  result after it). A model turn removed leaves the loop nothing to go on from (its next step is
  what the turn asked for), so that is refused there.

A move that breaks a rule is an `InterventionError` naming the setting (`errors.setting`: ``do``,
or the command's ``--do``).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import orjson

from otel_replay.errors import InterventionError, preview, setting
from otel_replay.hashing import canonical_json
from otel_replay.model import StepKind, Trajectory
from otel_replay.replay._builtin import built_in_agent
from otel_replay.replay._drivers import Driver
from otel_replay.replay._faults import fault
from otel_replay.replay._live import fork
from otel_replay.replay._made import AS_RECORDED, AgentFunction, Verifying, is_built_in
from otel_replay.replay._patch import apply_patch
from otel_replay.replay._plan import REMOVE, Action, Intervention
from otel_replay.resamplers import Registry
from otel_replay.store import Store


class MoveKind(str, Enum):
    """The moves `fork` offers at a step."""

    OUTPUT = "output"  # do on a model turn, observe on any other step
    DO = "do"  # a model turn's new message, or a tool step's {"arguments": {...}}
    OBSERVE = "observe"  # what came back instead: any JSON value
    OBSERVE_ERROR = "observe-error"  # the call failed, with this text
    EDIT = "edit"  # a JSON Patch (RFC 6902) on the step's inputs
    FAULT = "fault"  # a built-in fault's name (`FAULTS`)
    SWAP_MODEL = "swap-model"  # the model that answers every model turn from the step on
    REMOVE = "remove"  # the step never happened (no value)


_JSON_KINDS = frozenset({MoveKind.OUTPUT, MoveKind.DO, MoveKind.OBSERVE, MoveKind.EDIT})


@dataclass(frozen=True, slots=True)
class Move:
    """One move asked for at a step, before its rules are applied (`injection`).

    ``value`` is the move's argument: a JSON value for output, do and observe (do on a tool step
    takes ``{"arguments": {...}}``), a JSON Patch (a list of operations) for edit, and text for the
    others: the failure of observe-error, the name of a fault, the model of swap-model; remove
    takes none. ``text`` holds the JSON of a JSON move as a command line gives it (`Move.parse`):
    it is read when the rules reach it, so of several mistakes the first in the rules' order is
    the one reported, and a value is shown as it was typed.
    """

    kind: MoveKind
    value: Any = None
    text: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", MoveKind(self.kind))
        except ValueError:
            known = ", ".join(kind.value for kind in MoveKind)
            raise InterventionError(f"{self.kind!r} is not a move; moves: {known}") from None
        if self.kind is MoveKind.REMOVE:
            if self.value is not None or self.text is not None:
                raise InterventionError(
                    f"the remove move takes no value, got {preview(self.value or self.text)}"
                )
        elif self.kind not in _JSON_KINDS and not isinstance(self.value, str):
            raise InterventionError(
                f"the {self.kind.value} move takes text, got {preview(self.value)}"
            )

    @classmethod
    def parse(cls, kind: MoveKind, text: str | None) -> Move:
        """The move as a command line gives it: JSON text for output, do, observe and edit, no
        text for remove."""
        if MoveKind(kind) is MoveKind.REMOVE and text is None:
            return cls(kind)
        return cls(kind, text=text) if MoveKind(kind) in _JSON_KINDS else cls(kind, text)

    def json_value(self) -> Any:
        """The move's JSON value: ``value``, or ``text`` read as JSON."""
        if self.text is None:
            return self.value
        try:
            return orjson.loads(self.text)
        except orjson.JSONDecodeError as exc:
            raise InterventionError(
                f"{setting(self.kind.value, self.text, quoted=True)} is not JSON: {exc.msg}"
            ) from None

    def shown(self) -> str:
        """The value as a message shows it: as typed, else its ``repr`` cut short."""
        return self.text if self.text is not None else preview(self.value)


@dataclass(frozen=True, slots=True)
class Injection:
    """What a move comes down to: the step the plan changes (``at``) and the intervention there.
    For do on a tool step, ``at`` is the model turn that asked for the call and ``asked`` the
    tool step; for every other move the two are the same step."""

    at: int
    intervention: Intervention
    asked: int

    @property
    def asks_anew(self) -> bool:
        """Whether the move makes a call anew (do on a tool step): only an agent can."""
        return self.at != self.asked

    def check_agent(self, agent: AgentFunction | None, run: Trajectory | None = None) -> None:
        """Refuse a move that makes a call anew without an agent to make it (the walk cannot), and
        the removal of a model turn of ``run`` from the tool-calling loop (nothing to go on from)."""
        if (
            run is not None
            and self.intervention.action is Action.REMOVE
            and agent is not None
            and is_built_in(agent)
            and run.steps[self.at].kind is StepKind.LLM
        ):
            raise InterventionError(
                f"{setting('remove')} on model turn {self.at}: the tool-calling loop's next step "
                f"is what that turn asked for, so it has nothing to go on from; remove a tool "
                f"step, change the turn with {setting('do')}, or walk the record "
                f"({setting('driver', Driver.TRACE.value)})"
            )
        if self.asks_anew and agent is None:
            raise InterventionError(
                f"{setting('do')} on a tool step asks the model's call anew: it needs "
                f"{setting('agent')}, or a tool-calling run re-driven as its loop (not "
                f"{setting('driver', Driver.TRACE.value)})"
            )


def injection(run: Trajectory, at: int, move: Move) -> Injection:
    """What ``move`` at step ``at`` of ``run`` comes down to, by the moves' rules: a model turn's
    output is its action (changed with do, never observe); do on a tool step changes the call in
    the turn that asked for it; an edit must apply to the step's inputs; a fault must be known.
    A move that breaks a rule is an `InterventionError`."""
    if not 0 <= at < len(run.steps):
        raise InterventionError(f"{setting('at', at)}: {run.id} has steps 0..{len(run.steps) - 1}")
    if move.kind is MoveKind.SWAP_MODEL:
        return Injection(at, Intervention.swap_model(move.value), at)
    if move.kind is MoveKind.REMOVE:
        return Injection(at, REMOVE, at)
    if move.kind is MoveKind.EDIT:
        patch = move.json_value()
        apply_patch(run.steps[at].inputs, patch)  # a patch that does not apply: say so now
        return Injection(at, Intervention.edit(patch), at)
    turn = run.steps[at].kind is StepKind.LLM
    kind = move.kind
    if kind is MoveKind.OUTPUT:  # the alias: a model turn's output is its action
        kind = MoveKind.DO if turn else MoveKind.OBSERVE
    if turn and kind in (MoveKind.OBSERVE, MoveKind.OBSERVE_ERROR):
        raise InterventionError(
            f"step {at} is a model turn: its output is the agent's action, so it is changed "
            f"with {setting('do')}, not {setting('observe')}"
        )
    if kind is MoveKind.DO:
        value = move.json_value()
        if turn:
            return Injection(at, Intervention.do(value), at)
        if not isinstance(value, dict) or set(value) != {"arguments"}:
            raise InterventionError(
                f'{setting("do")} on tool step {at} takes {{"arguments": {{...}}}}, got '
                + move.shown()
            )
        where, patched = rewritten_call(run, at, value["arguments"])
        return Injection(where, Intervention.do(patched), at)
    if kind is MoveKind.OBSERVE:
        return Injection(at, Intervention.observe(move.json_value(), None), at)
    if kind is MoveKind.OBSERVE_ERROR:
        return Injection(at, Intervention.observe(None, move.value), at)
    made = fault(move.value, run.steps[at].output)
    return Injection(at, dataclasses.replace(made, move="observe"), at)


def fork_injection(
    run: Trajectory,
    injected: Injection,
    *,
    agent: AgentFunction | None = None,
    registry: Registry | None = None,
    outcome: Verifying = AS_RECORDED,
    seed: int | None = None,
    instrument: Sequence[str] | None = None,
    verifier_spec: str = "",
) -> Trajectory:
    """`fork` ``run`` with ``injected``: the fork of a call made anew names the tool step it was
    asked at in ``metadata["do_step"]``."""
    injected.check_agent(agent, run)
    forked = fork(
        run,
        injected.at,
        injected.intervention,
        agent=agent,
        registry=registry,
        outcome=outcome,
        seed=seed,
        instrument=instrument,
        verifier_spec=verifier_spec,
    )
    if injected.asks_anew:
        forked = dataclasses.replace(
            forked, metadata={**forked.metadata, "do_step": injected.asked}
        )
    return forked


def fork_move(
    run: Trajectory,
    at: int,
    move: Move,
    *,
    agent: AgentFunction | None = None,
    driver: Driver = Driver.AUTO,
    max_turns: int | None = None,
    registry: Registry | None = None,
    outcome: Verifying = AS_RECORDED,
    seed: int | None = None,
    instrument: Sequence[str] | None = None,
) -> Trajectory:
    """Fork ``run`` with ``move`` at step ``at``, as `agent-replay fork` does: the steps before
    held, the move's rules applied (`injection`), the run continued by ``agent``, or without one
    by the built-in agent ``driver`` chooses (`built_in_agent`: the chat loop of a tool-calling
    run, at most ``max_turns`` model turns) or the walk, later steps resampled by ``registry``.
    Scored, and ``agent`` served through the SDKs, as `fork` says (by default as the run was
    recorded). The fork is not stored (`keep_fork` stores it)."""
    injected = injection(run, at, move)
    runner = agent if agent is not None else built_in_agent(run, driver, max_turns)
    return fork_injection(
        run,
        injected,
        agent=runner,
        registry=registry,
        outcome=outcome,
        seed=seed,
        instrument=instrument,
    )


@dataclass(frozen=True, slots=True)
class KeptFork:
    """A fork as the store keeps it: ``run`` (its stored id), and ``earlier``, a fork made the same
    way before (same run, step, move, driver and seed), kept: ``same`` when this one came out
    the same (then ``run`` is that one, not stored twice)."""

    run: Trajectory
    earlier: str | None = None
    same: bool = False


def keep_fork(db: Store, forked: Trajectory) -> KeptFork:
    """Store ``forked`` without replacing any fork stored before. Its id names what made it
    (`fork_id`); a fork made the same way again (the agent's code changed, a live model answered
    otherwise, another verifier scored it) is stored beside the earlier ones as ``<id>-2``,
    ``<id>-3``…; one that came out the same as an earlier one (the same content,
    `Trajectory.identity`: response and tool-call ids aside; the same outcome and metadata) is
    that run, not stored again."""
    base, ordinal = forked.id, 1
    earlier: str | None = None
    while db.summary(candidate := base if ordinal == 1 else f"{base}-{ordinal}") is not None:
        stored = db.get(candidate)
        if (stored.identity, stored.outcome, canonical_json(stored.metadata)) == (
            forked.identity,
            forked.outcome,
            canonical_json(forked.metadata),
        ):
            return KeptFork(stored, candidate, same=True)
        earlier, ordinal = candidate, ordinal + 1
    kept = forked if candidate == base else dataclasses.replace(forked, id=candidate)
    db.put(kept)
    return KeptFork(kept, earlier)


def rewritten_call(run: Trajectory, at: int, arguments: Any) -> tuple[int, Any]:
    """For do(arguments) on tool step ``at``: the model turn that asked for it, and that turn's
    output with the call's arguments replaced."""
    step = run.steps[at]
    if step.kind is not StepKind.TOOL:
        raise InterventionError(f"step {at} is {step.kind.value} {step.name!r}, not a tool call")
    if not isinstance(arguments, dict):
        raise InterventionError(
            f'{setting("do")} on a tool step takes {{"arguments": {{...}}}}, got {arguments!r}'
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
        + f": {setting('do')} changes a call the model made; use {setting('observe')} to change "
        "what came back"
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
