"""The write-once agent contract: one function runs live (recording) and under replay, unchanged.

An agent is ``def run(ctx, ...) -> answer`` that performs every nondeterministic operation through the
context: ``ctx.llm / ctx.tool / ctx.retrieve(name, *, produce=None, **inputs)`` or the general
``ctx.step(kind, name, ...)``, and draws randomness only from ``ctx.rng``. ``produce`` is a
zero-argument callable doing the real operation; without it the registered resample function is used.

* `RecordingContext` executes ``produce`` and records a `Step` per call, checking the output survives
  a JSON round trip (`record` then emits the run as real OpenTelemetry spans with OpenInference
  attributes, through the SDK).
* `ReplayContext` matches each call by ``op_key`` (kind, name, canonical inputs) against the recorded
  steps not yet consumed — a multiset consumed in recorded order, never by position alone — and applies
  a `Plan` to the recorded step it matched: hold (serve the record), resample (run it live), force an
  output, or remove it. A call that matches nothing means the timeline diverged: it runs live
  (``on_miss="resample"``, the run is marked diverged) or raises `NonDeterminismError` naming the step
  and the nearest recorded calls.

``ctx.rng`` is a separate stream per step position, derived from the run's seed: holding a step (its
``produce`` not called, its draws not taken) never shifts the numbers the rest of the run sees, so a
seeded run records and replays draw for draw. A failing operation reaches the agent as `StepError` in
both contexts, so its error handling replays too.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import random
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

import orjson

from otel_replay.errors import (
    CanonicalJSONError,
    InterventionError,
    NonDeterminismError,
    ReplayError,
    RolloutError,
)
from otel_replay.hashing import check_json_value, op_key
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.replay._diff import flat_inputs
from otel_replay.replay._patch import apply_patch
from otel_replay.replay._plan import Action, Plan
from otel_replay.resamplers import (
    Registry,
    RolloutContext,
    RolloutSeed,
    StepFailed,
    describe,
    standing_in,
    step_seed,
    unrecorded,
)

Produce = Callable[[], Any]

# Errors of agent-replay itself raised during the current `run_agent` (per thread of execution).
_FATAL: ContextVar[list[ReplayError] | None] = ContextVar("otel_replay_fatal", default=None)
# The context of the run under way: what instrumented SDK calls and decorated tools record through.
# A ContextVar, so it follows the agent across `await` (asyncio tasks copy it when created); a thread
# the agent starts sees it when started with ``contextvars.copy_context().run``.
_CURRENT: ContextVar[AgentContext | None] = ContextVar("otel_replay_context", default=None)


def current_context() -> AgentContext | None:
    """The recording or replay context of the run under way here (None outside one)."""
    return _CURRENT.get()


REDACTED = "[REDACTED]"
_SAME = object()  # `AgentContext._record`: the recorded output is the one the agent gets


class Redactor:
    """Replaces text matching any of ``patterns`` (regular expressions) with ``[REDACTED]`` in every
    string of a JSON value; with no patterns, returns the value itself."""

    def __init__(self, patterns: Sequence[str]) -> None:
        try:
            self._patterns = [re.compile(p) for p in patterns]
        except re.error as exc:
            raise ReplayError(
                f"--redact {exc.pattern!r} is not a regular expression: {exc}"
            ) from None

    def __call__(self, value: Any) -> Any:
        if not self._patterns:
            return value
        if isinstance(value, str):
            for pattern in self._patterns:
                value = pattern.sub(REDACTED, value)
            return value
        if isinstance(value, dict):
            return {key: self(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self(item) for item in value]
        return value


@dataclass(frozen=True, slots=True)
class _Served:
    """An operation the context answered without running it (its output, or None if removed)."""

    output: Any


@dataclass(frozen=True, slots=True)
class _Live:
    """An operation to run live: when it started, the recorded step it matched (if any), and for
    an edited step the inputs it runs on (through its resample function: the agent's ``produce``
    closes over the inputs it was given)."""

    started: int
    matched: int | None
    edited: dict[str, Any] | None = None


class StepError(Exception):
    """An operation failed (live, or as recorded). Agents catch this to handle tool errors."""

    def __init__(self, message: str, step_index: int) -> None:
        super().__init__(message)
        self.step_index = step_index


@dataclass
class Ledger:
    """What an agent run did: its steps in call order, and what else a person needs to know."""

    steps: list[Step] = field(default_factory=list)
    matched: list[int | None] = field(default_factory=list)  # recorded step each call matched
    lossy: list[int] = field(default_factory=list)  # steps whose output was coerced (--lax)
    diverged_at: int | None = None  # first call the record did not hold


class AgentContext:
    """What both contexts share: the step API, the per-position RNG and the ledger."""

    def __init__(
        self,
        seed: int,
        registry: Registry | None = None,
        *,
        fresh_seed: int | None = None,
        holds: Callable[[int], bool] | None = None,
        redact: Sequence[str] = (),
        rollout: RolloutSeed | None = None,
    ) -> None:
        self.seed = seed
        self.registry = registry or Registry()
        #: the plan being rolled out (None while an agent is recorded): what ``ctx.plan`` is
        self.plan: Plan | None = None
        #: the rollout this run is, for the streams of the resample functions it calls
        self.rollout = rollout or RolloutSeed(seed)
        self.ledger = Ledger()
        #: Called with the ledger's steps each time one is added (the durable ledger of `record`).
        self.on_step: Callable[[Sequence[Step]], None] | None = None
        self.redact = tuple(redact)
        self._scrub = Redactor(self.redact)
        self.lax = False  # outputs that are not JSON: an error, or (lax) a lossy copy
        # Common random numbers: a position the plan holds draws from the recorded seed, so a
        # rollout replays its held steps draw for draw; positions it resamples, and every position
        # once the run has diverged from the record, draw from ``fresh_seed`` (when given).
        self._fresh_seed = fresh_seed
        self._holds = holds
        self._rng: random.Random | None = None
        self._rng_position = -1

    def _seed_at(self, position: int) -> int:
        if self._fresh_seed is None:
            return self.seed
        diverged = self.ledger.diverged_at
        if diverged is not None and position >= diverged:
            return self._fresh_seed
        if self._holds is not None and self._holds(position):
            return self.seed
        return self._fresh_seed

    @property
    def rng(self) -> random.Random:
        """The random stream of the current step position (the only randomness an agent may use)."""
        position = len(self.ledger.steps)
        if self._rng is None or self._rng_position != position:
            self._rng = random.Random(step_seed(self._seed_at(position), "agent", 0, position))
            self._rng_position = position
        return self._rng

    # ``kind`` and ``name`` are positional-only so an operation may take inputs with those names.

    def llm(self, name: str, /, *, produce: Produce | None = None, **inputs: Any) -> Any:
        return self.step(StepKind.LLM, name, produce=produce, **inputs)

    def tool(self, name: str, /, *, produce: Produce | None = None, **inputs: Any) -> Any:
        return self.step(StepKind.TOOL, name, produce=produce, **inputs)

    def retrieve(self, name: str, /, *, produce: Produce | None = None, **inputs: Any) -> Any:
        return self.step(StepKind.RETRIEVER, name, produce=produce, **inputs)

    def step(
        self, kind: StepKind | str, name: str, /, *, produce: Produce | None = None, **inputs: Any
    ) -> Any:
        """Perform (or replay) one operation and return its output."""
        step_kind = StepKind(kind)
        return self.call(step_kind, name, _shape(step_kind, name, inputs), produce=produce)

    def call(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        *,
        produce: Produce | None = None,
        recorded: Step | None = None,
        checked: bool = False,
    ) -> Any:
        """`step` with its inputs already in the recorded shape (``{"arguments", "tool_call_id"}``
        for tools; ``{"model", "messages", "tools", "parameters"}`` for model calls): what a driver
        re-driving a recorded run passes. ``recorded``: the inputs are that recorded step's, plain
        JSON already and not to be changed, with its op_key (checking and hashing them again
        would cost more than the rest of the call). ``checked``: the inputs are made of values
        already checked (recorded, or returned by steps), and the caller will not change them."""
        if recorded is not None:
            return self._execute(kind, name, recorded.inputs, produce, recorded.op_key or None)
        if checked:  # made of values already checked, and not to be changed
            return self._execute(kind, name, inputs, produce)
        return self._execute(kind, name, self._snapshot(kind, name, inputs), produce)

    def _snapshot(self, kind: StepKind, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        """The inputs as recorded: a plain-JSON copy (agents keep appending to the message list
        they pass in), redacted; inputs that are not JSON stop the run, naming the step."""
        try:
            return cast(dict[str, Any], self._scrub(_plain_json(inputs, "inputs")))
        except CanonicalJSONError as exc:
            index = len(self.ledger.steps)
            raise self._fatal(
                CanonicalJSONError(f"step {index} ({kind.value} {name!r}): {exc}")
            ) from None

    def _fatal(self, error: ReplayError) -> ReplayError:
        """Remember an error of agent-replay itself: an agent's ``except Exception`` must not hide it
        (`run_agent` raises it when the agent returns)."""
        pending = _FATAL.get()
        if pending is not None and not pending:
            pending.append(error)
        return error

    def factual(self) -> Trajectory:
        """What resample functions see as ``ctx.factual``: while recording, the run so far (id
        ``live``); under replay, the recorded run."""
        return Trajectory("live", tuple(self.ledger.steps))

    def recorded_step(self, index: int | None) -> Step | None:
        """The recorded step of that index (None: no record, or no index)."""
        return None

    def _execute(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        produce: Produce | None,
        key: str | None = None,
    ) -> Any:
        """Perform the operation; ``key`` is its op_key when the caller knows it already."""
        decided = self._decide(kind, name, inputs, produce is not None, key)
        if not isinstance(decided, _Live):
            return decided.output
        if decided.edited is not None:
            inputs, produce = decided.edited, None
        try:
            output = self._produce(kind, name, inputs, produce, decided.matched)
        except ReplayError:
            raise
        except Exception as exc:
            return self._done(decided, kind, name, inputs, None, exc)
        return self._done(decided, kind, name, inputs, output, None)

    async def acall(
        self,
        kind: StepKind | str,
        name: str,
        inputs: dict[str, Any],
        *,
        produce: Callable[[], Awaitable[Any]] | None = None,
    ) -> Any:
        """`call` for an operation that is awaited: the record serves it without awaiting anything
        (no network under replay); only a live run awaits ``produce()``."""
        step_kind = StepKind(kind)
        stored = self._snapshot(step_kind, name, inputs)
        decided = self._decide(step_kind, name, stored, produce is not None, None)
        if not isinstance(decided, _Live):
            return decided.output
        if decided.edited is not None:
            stored, produce = decided.edited, None
        try:
            if produce is not None:
                output = await produce()
            else:
                output = self._produce(step_kind, name, stored, None, decided.matched)
        except ReplayError:
            raise
        except Exception as exc:
            return self._done(decided, step_kind, name, stored, None, exc)
        return self._done(decided, step_kind, name, stored, output, None)

    async def allm(
        self, name: str, /, *, produce: Callable[[], Awaitable[Any]] | None = None, **inputs: Any
    ) -> Any:
        """`llm`, awaited: ``await ctx.allm("model", produce=lambda: client.chat(...), ...)``."""
        return await self.acall(
            StepKind.LLM, name, _shape(StepKind.LLM, name, inputs), produce=produce
        )

    async def atool(
        self, name: str, /, *, produce: Callable[[], Awaitable[Any]] | None = None, **inputs: Any
    ) -> Any:
        """`tool`, awaited."""
        return await self.acall(
            StepKind.TOOL, name, _shape(StepKind.TOOL, name, inputs), produce=produce
        )

    def _decide(
        self, kind: StepKind, name: str, inputs: dict[str, Any], runnable: bool, key: str | None
    ) -> _Served | _Live:
        """Serve the operation without running it (recorded), or say it must run live."""
        raise NotImplementedError

    def _done(
        self,
        live: _Live,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        output: Any,
        failure: Exception | None,
    ) -> Any:
        """Record what a live run of the operation returned or raised."""
        if failure is not None:
            error = self._scrub(_error_text(failure))
            return self._record(kind, name, inputs, None, error, live.started, live.matched)
        return self._record(
            kind, name, inputs, output, None, live.started, live.matched, self.lax, scrub=True
        )

    # --- shared machinery --------------------------------------------------------------------------

    def _produce(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        produce: Produce | None,
        matched: int | None,
    ) -> Any:
        """Run the operation live: ``produce``, else the registered resample function, called
        with the recorded step it stands in for (``matched``) as the rollout contract says
        (`otel_replay.resamplers.RolloutContext`)."""
        if produce is not None:
            return produce()
        position = len(self.ledger.steps)
        registration = self.registry.lookup(Step(kind, name, inputs))
        if registration is None:
            raise self._fatal(
                ReplayError(
                    f"step {position} ({kind.value} {name!r}) has no produce= callable and no "
                    f"resample function is registered for it; pass produce=... or register "
                    f"@resampler({kind.value!r}, name={name!r})"
                )
            )
        recorded = self.recorded_step(matched)
        if recorded is not None:
            probe = standing_in(recorded, inputs)
        else:
            probe = unrecorded(kind, name, inputs, position)
        history = tuple(self.ledger.steps)
        ctx = RolloutContext.for_step(
            self.rollout, recorded, position, history, self.factual(), self.plan, live=True
        )
        # the resample function's own SDK calls (the built-in model one's) are its business, not
        # steps of the agent: instrumented clients see no context while it runs
        outside = _CURRENT.set(None)
        try:
            return registration.function(probe, ctx)
        except StepFailed:
            raise  # the operation failed: recorded as an error step, raised to the agent
        except Exception as exc:  # a bug in the resample function stops the run
            function = describe(registration.function)
            raise self._fatal(
                RolloutError(
                    f"step {position} ({kind.value} {name!r}): resample function {function} "
                    f"raised {type(exc).__name__}: {exc}",
                    step_index=position,
                    function=function,
                )
            ) from exc
        finally:
            _CURRENT.reset(outside)

    def _record(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        output: Any,
        error: str | None,
        started: int,
        matched: int | None,
        lax: bool = False,
        checked: bool = False,
        scrub: bool = False,
    ) -> Any:
        """Append the step; return its output to the agent (a live output as the operation
        returned it: ``scrub`` redacts only the copy that is recorded)."""
        index = len(self.ledger.steps)
        if error is None and not checked:
            output = self._checked_output(index, kind, name, output, lax)
        stored = self._scrub(output) if scrub and self.redact else _SAME
        self.ledger.steps.append(
            Step(
                kind=kind,
                name=name,
                inputs=inputs,
                output=output if stored is _SAME else stored,
                status=StepStatus.OK if error is None else StepStatus.ERROR,
                error=error,
                start_time_unix_nano=started,
                end_time_unix_nano=time.time_ns(),
                index=index,
            )
        )
        self.ledger.matched.append(matched)
        if self.on_step is not None:
            self.on_step(self.ledger.steps)
        if error is not None:
            raise StepError(error, index)
        return output

    def _checked_output(self, index: int, kind: StepKind, name: str, output: Any, lax: bool) -> Any:
        """A copy of ``output`` as plain JSON; not JSON: an error, or with ``lax`` a lossy copy."""
        try:
            return _plain_json(output, "output")
        except CanonicalJSONError as exc:
            if not lax:
                raise self._fatal(
                    CanonicalJSONError(
                        f"step {index} ({kind.value} {name!r}): {exc}; return plain JSON values, "
                        "or record with --lax to store a lossy copy"
                    )
                ) from None
        self.ledger.lossy.append(index)
        return lossy(output)


def _plain_json(value: Any, where: str) -> Any:
    """A deep copy of ``value`` through JSON, or `CanonicalJSONError` if it is not plain JSON."""
    check_json_value(value, where)
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONDecodeError) as exc:  # beyond 64 bits, lone surrogates
        raise CanonicalJSONError(f"{where} cannot be stored as JSON: {exc}") from None


def lossy(value: Any) -> Any:
    """The closest plain-JSON value: containers converted, sets sorted (stable across processes),
    non-finite floats and oversized integers as text, dates and the like as orjson writes them,
    anything else as its ``repr``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 64) else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_lossy_key(k): lossy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [lossy(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((lossy(v) for v in value), key=repr)
    try:  # dates, UUIDs, enums, dataclasses: orjson knows a JSON form
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        return repr(value)


def _lossy_key(key: Any) -> str:
    return lossy(key) if isinstance(key, str) else repr(key)


def _shape(kind: StepKind, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    """Store a call's inputs in the shape importers give the same kind of step, so resample
    functions and an exported-then-imported recording see the same thing: tools
    ``{"arguments": {...}}``; model calls ``{"model", "messages", "tools", "parameters"}``."""
    if kind is StepKind.TOOL:
        return {"arguments": inputs}
    if kind is not StepKind.LLM:
        return dict(inputs)
    shaped: dict[str, Any] = {"model": name}
    if "messages" in inputs:
        shaped["messages"] = inputs["messages"]
    if "tools" in inputs:
        shaped["tools"] = inputs["tools"]
    parameters = {k: v for k, v in inputs.items() if k not in ("messages", "tools")}
    if parameters:
        shaped["parameters"] = parameters
    return shaped


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, StepFailed):
        return str(exc) or "failed"
    return f"{type(exc).__name__}: {exc}"


class RecordingContext(AgentContext):
    """Runs every operation for real and records it (`otel_replay.replay.record` then emits the run's
    OpenTelemetry spans)."""

    def __init__(
        self,
        seed: int = 0,
        registry: Registry | None = None,
        *,
        lax: bool = False,
        redact: Sequence[str] = (),
    ) -> None:
        super().__init__(seed, registry, redact=redact)
        self.lax = lax

    def _decide(
        self, kind: StepKind, name: str, inputs: dict[str, Any], runnable: bool, key: str | None
    ) -> _Served | _Live:
        return _Live(time.time_ns(), None)


class ReplayContext(AgentContext):
    """Serves recorded outputs to a re-run agent, applying a plan to the recorded steps it matches."""

    def __init__(
        self,
        recorded: Trajectory | Sequence[Step],
        seed: int,
        *,
        plan: Plan | None = None,
        registry: Registry | None = None,
        on_miss: str = "resample",
        live_kinds: Collection[StepKind] = (),
        fresh_seed: int | None = None,
        holds: Callable[[int], bool] | None = None,
        lax: bool = False,
        shares_record: bool = False,
        holds_observed_only: bool = False,
        redact: Sequence[str] = (),
        rollout: RolloutSeed | None = None,
    ) -> None:
        super().__init__(
            seed,
            registry,
            fresh_seed=fresh_seed,
            holds=holds,
            redact=redact,
            rollout=rollout or RolloutSeed.of(seed, plan),
        )
        self.lax = lax  # outputs run live that are not JSON: an error, or (lax) a lossy copy
        # an agent that never changes what it is served (the chat loop) is served the recorded
        # outputs themselves: a copy each would cost more than the rest of the call
        self.shares_record = shares_record
        # a call the record does not hold, of an operation nothing can run (no produce, no resample
        # function) or whose next recorded step is marked ``resamplable: false``: served the next
        # recorded step of that operation instead of stopping the run (a built-in driver asking a
        # model without a resample function a changed conversation) or of re-running it
        self.holds_observed_only = holds_observed_only
        if on_miss not in ("resample", "error"):
            raise InterventionError(f"on_miss={on_miss!r}; expected 'resample' or 'error'")
        # what resample functions see as ``ctx.factual``: the recorded run, its own id kept (steps
        # alone are a run of id ``recorded``)
        self._factual = (
            recorded
            if isinstance(recorded, Trajectory)
            else Trajectory("recorded", tuple(recorded))
        )
        self.recorded = list(self._factual.steps)
        self._by_index = {step.index: step for step in self.recorded}
        self.plan = plan
        self.on_miss = on_miss
        self.live_kinds = frozenset(live_kinds)
        self._cassette: dict[str, deque[Step]] = {}
        for step in self.recorded:
            self._cassette.setdefault(step.op_key or _key(step), deque()).append(step)
        # operations with a recorded step marked ``resamplable: false`` (see `_observed_only`)
        self._marked = {(s.kind, s.name) for s in self.recorded if not s.resamplable}

    def factual(self) -> Trajectory:
        return self._factual

    def recorded_step(self, index: int | None) -> Step | None:
        return None if index is None else self._by_index.get(index)

    def unconsumed(self) -> list[Step]:
        """Recorded steps no call has matched (in recorded order)."""
        left = {id(s) for queue in self._cassette.values() for s in queue}
        return [s for s in self.recorded if id(s) in left]

    def _decide(
        self, kind: StepKind, name: str, inputs: dict[str, Any], runnable: bool, key: str | None
    ) -> _Served | _Live:
        started = time.time_ns()
        key = key or op_key(kind.value, name, inputs)
        queue = self._cassette.get(key)
        recorded = queue.popleft() if queue else None
        swap = self.plan.model_from if self.plan is not None else None
        swapped = swap is not None and kind is StepKind.LLM and len(self.ledger.steps) >= swap[0]
        if recorded is None and swap is not None and swapped:
            # a new model turn where the model is swapped: asked of the other model
            if self.ledger.diverged_at is None:
                self.ledger.diverged_at = len(self.ledger.steps)
            return _Live(started, None, {**inputs, "model": swap[1]})
        if recorded is None:
            if self.on_miss == "error":
                raise self._fatal(self._miss(kind, name, inputs))
            if self.ledger.diverged_at is None:
                self.ledger.diverged_at = len(self.ledger.steps)
            stale = self._observed_only(kind, name, inputs, runnable)
            if stale is not None:  # nothing can run it: served as recorded, though asked anew
                error = _recorded_error(stale)
                return _Served(
                    self._record(
                        kind,
                        name,
                        inputs,
                        stale.output,
                        error,
                        started,
                        stale.index,
                        checked=self.shares_record,
                    )
                )
            return _Live(started, None)
        if recorded.index != len(self.ledger.steps) and self.ledger.diverged_at is None:
            self.ledger.diverged_at = len(self.ledger.steps)  # matched, but out of recorded order
        action = self.plan.at(recorded.index).action if self.plan is not None else Action.HOLD
        if action is Action.RESAMPLE and not recorded.resamplable:
            action = Action.HOLD  # observed-only: always served from the record, as in trace mode
        if action is Action.HOLD and kind in self.live_kinds:
            action = Action.RESAMPLE
        if action is Action.HOLD:
            return _Served(
                self._record(
                    kind,
                    name,
                    inputs,
                    recorded.output,
                    _recorded_error(recorded),
                    started,
                    recorded.index,
                    checked=self.shares_record,
                )
            )
        if action is Action.FORCE:
            assert self.plan is not None
            forced = self.plan.at(recorded.index)
            output = None if forced.error is not None else forced.output
            return _Served(
                self._record(kind, name, inputs, output, forced.error, started, recorded.index)
            )
        if action is Action.REMOVE:
            return _Served(None)
        edited = None
        if action is Action.EDIT:
            assert self.plan is not None
            edited = apply_patch(inputs, self.plan.at(recorded.index).output)
        if swap is not None and swapped:  # a model turn run again, asked of the other model
            return _Live(started, recorded.index, {**(edited or inputs), "model": swap[1]})
        return _Live(started, recorded.index, edited)

    def _observed_only(
        self, kind: StepKind, name: str, inputs: dict[str, Any], runnable_here: bool
    ) -> Step | None:
        """With ``holds_observed_only``: the next unconsumed recorded step of the operation, taken
        off the cassette, when nothing can run the operation (no ``produce``, no resample function)
        or that recorded step is marked ``resamplable: false`` (the call asked anew stands in its
        place, and a marked step is never re-run, whatever is registered for its kind); else None."""
        if not self.holds_observed_only or runnable_here:
            return None
        runnable = self.registry.lookup(Step(kind, name, inputs)) is not None
        if runnable and (kind, name) not in self._marked:
            return None
        left = {id(s) for queue in self._cassette.values() for s in queue}
        for step in self.recorded:
            if id(step) in left and step.kind is kind and step.name == name:
                if runnable and step.resamplable:
                    return None
                self._cassette[step.op_key or _key(step)].remove(step)
                return step
        return None

    def _miss(self, kind: StepKind, name: str, inputs: dict[str, Any]) -> NonDeterminismError:
        index = len(self.ledger.steps)
        nearest = sorted(self.unconsumed(), key=lambda s: -_closeness(s, kind, name, inputs))[:3]
        lines = [
            f"  step {s.index} ({s.kind.value} {s.name!r}): {_difference(s, kind, name, inputs)}"
            for s in nearest
        ]
        listing = "\n".join(lines) if lines else "  (every recorded call has been consumed)"
        return NonDeterminismError(
            f"non-determinism at step {index}: the agent called {kind.value} {name!r} with inputs "
            f"the record does not hold; nearest recorded calls:\n{listing}",
            step_index=index,
        )


def _recorded_error(step: Step) -> str | None:
    return (step.error or "failed") if step.status is StepStatus.ERROR else None


def _key(step: Step) -> str:
    return op_key(step.kind.value, step.name, step.inputs)


def _closeness(step: Step, kind: StepKind, name: str, inputs: dict[str, Any]) -> int:
    mine, theirs = flat_inputs(inputs), flat_inputs(step.inputs)
    same = sum(1 for k in mine if k in theirs and theirs[k] == mine[k])
    return 4 * (step.kind is kind) + 2 * (step.name == name) + same


def _difference(step: Step, kind: StepKind, name: str, inputs: dict[str, Any]) -> str:
    what = []
    if step.kind is not kind:
        what.append(f"kind {step.kind.value} vs {kind.value}")
    if step.name != name:
        what.append(f"name {step.name!r} vs {name!r}")
    mine, theirs = flat_inputs(inputs), flat_inputs(step.inputs)
    keys = sorted(
        k for k in set(mine) | set(theirs) if mine.get(k, _ABSENT) != theirs.get(k, _ABSENT)
    )
    if keys:
        what.append("inputs differ in " + ", ".join(repr(k) for k in keys))
    return "; ".join(what) or "same call (already consumed by an earlier match)"


_ABSENT = object()


async def _awaited(answer: Awaitable[Any]) -> Any:
    return await answer


def _takes_context(agent: Callable[..., Any]) -> bool:
    """Whether the agent is written for agent-replay: its first parameter is ``ctx``. An agent
    that is not (its model calls recorded by `otel_replay.instrument`) is called without it."""
    try:
        parameters = list(inspect.signature(agent).parameters.values())
    except (TypeError, ValueError):
        return True
    return bool(parameters) and parameters[0].name == "ctx"


def run_agent(
    agent: Callable[..., Any], ctx: AgentContext, arguments: Any
) -> tuple[Any, str | None]:
    """Call ``agent(ctx, ...)`` (``agent(...)`` when its first parameter is not named ``ctx``); an
    ``async def`` agent runs on an event loop of its own (`arun_agent` runs it on the caller's).
    Return ``(answer, None)``, or ``(None, "Type: message")`` if it raised.

    ``arguments``: a JSON object becomes keyword arguments, anything else one positional argument,
    ``None`` none. While the agent runs, `current_context` is ``ctx``. Errors of agent-replay itself
    (non-determinism, invalid output) propagate.
    """
    with _running(ctx) as pending:
        try:
            answer = _call(agent, ctx, arguments)
            if inspect.isawaitable(answer):  # an async agent: run on a loop of its own
                answer = asyncio.run(_awaited(answer))
        except Exception as exc:
            return _failed(exc, pending)
    return _returned(answer, pending)


async def arun_agent(
    agent: Callable[..., Any], ctx: AgentContext, arguments: Any
) -> tuple[Any, str | None]:
    """`run_agent` on the running event loop: an ``async def`` agent is awaited there, so many
    rollouts share one loop (each task has its own `current_context`)."""
    with _running(ctx) as pending:
        try:
            answer = _call(agent, ctx, arguments)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:
            return _failed(exc, pending)
    return _returned(answer, pending)


@contextmanager
def _running(ctx: AgentContext) -> Iterator[list[ReplayError]]:
    """``ctx`` is the current context, and agent-replay's own errors are collected, meanwhile."""
    pending: list[ReplayError] = []
    token = _FATAL.set(pending)
    current = _CURRENT.set(ctx)
    try:
        yield pending
    finally:
        _CURRENT.reset(current)
        _FATAL.reset(token)


def _call(agent: Callable[..., Any], ctx: AgentContext, arguments: Any) -> Any:
    head = (ctx,) if _takes_context(agent) else ()
    if arguments is None:
        return agent(*head)
    if isinstance(arguments, dict):
        return agent(*head, **arguments)
    return agent(*head, arguments)


def _failed(exc: Exception, pending: list[ReplayError]) -> tuple[Any, str | None]:
    """The agent raised: agent-replay's own errors propagate, the agent's is the run's end."""
    if isinstance(exc, ReplayError):
        raise exc
    if pending:
        raise pending[0] from exc
    return None, f"{type(exc).__name__}: {exc}"


def _returned(answer: Any, pending: list[ReplayError]) -> tuple[Any, str | None]:
    if pending:  # the agent caught it, but the run is not what it seems
        raise pending[0]
    return answer, None
