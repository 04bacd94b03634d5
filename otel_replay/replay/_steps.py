"""The write-once agent contract: one function runs live (recording) and under replay, unchanged.

An agent is ``def run(ctx, ...) -> answer`` that performs every nondeterministic operation through the
context: ``ctx.llm / ctx.tool / ctx.retrieve(name, *, produce=None, **inputs)`` or the general
``ctx.step(kind, name, ...)``, and draws randomness only from ``ctx.rng``. ``produce`` is a
zero-argument callable doing the real operation; without it the registered resample function is used.

* `RecordingContext` (here) executes ``produce`` and records a `Step` per call, checking the output
  survives a JSON round trip (`record` then emits the run as real OpenTelemetry spans with
  OpenInference attributes, through the SDK).
* `ReplayContext` (`otel_replay.replay._cassette`) matches each call by ``op_key`` (kind, name,
  canonical inputs) against the recorded steps not yet consumed and applies a `Plan` to the recorded
  step it matched: hold (serve the record), resample (run it live), force an output, or remove it.
  A call that matches nothing means the timeline diverged: it runs live (``on_miss="resample"``, the
  run is marked diverged) or raises `NonDeterminismError` naming the step and the nearest recorded
  calls.

``ctx.now()``, ``ctx.uuid()`` and ``ctx.random()`` (``anow`` / ``auuid`` / ``arandom`` awaited) read
the agent's environment, a clock, a fresh id, a random number from outside the run, as one
``other`` step each: recorded live, served on replay (`otel_replay.model.ENVIRONMENT_STEPS`).

``ctx.rng`` is a separate stream per step position, derived from the run's seed: holding a step (its
``produce`` not called, its draws not taken) never shifts the numbers the rest of the run sees, so a
seeded run records and replays draw for draw. A failing operation reaches the agent as `StepError` in
both contexts, so its error handling replays too.

A framework may call the agent's tools from any thread, several at once (the parallel tool calls
of one model turn): a context takes calls from every thread, matching and appending under one
lock, so each step is appended whole, in the order the calls completed, and handed to ``on_step``
(the durable ledger) in that order. A failure of the recording itself (its own bookkeeping, or
``on_step``) never reaches the agent's code: the agent gets what the operation returned, and the
run ends with that failure (`AgentContext.failed`, raised by `run_agent` when the agent is done).
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from otel_replay.errors import (
    AgentError,
    CanonicalJSONError,
    RecorderError,
    ReplayError,
    RolloutError,
    UnservableError,
    setting,
)
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.redaction import Redactor
from otel_replay.replay._current import inside_a_step, outside_the_agent, remember_fatal
from otel_replay.replay._plan import Plan
from otel_replay.replay._values import lossy, plain_json
from otel_replay.resamplers import (
    Registry,
    RolloutContext,
    RolloutSeed,
    StepFailed,
    describe,
    standing_in,
    step_seed,
    unrecorded,
    ways_to_resample,
)

Produce = Callable[[], Any]

_SAME = object()  # `AgentContext._record`: the recorded output is the one the agent gets
_SYSTEM_RANDOM = random.SystemRandom()  # `AgentContext.random`: the world's, never a seeded stream


@dataclass(frozen=True, slots=True)
class _Served:
    """An operation the context answered without running it (its output, or None if removed)."""

    output: Any


@dataclass(frozen=True, slots=True)
class _Live:
    """An operation to run live: when it started, the recorded step it matched (if any), for
    an edited step the inputs it runs on (through its resample function: the agent's ``produce``
    closes over the inputs it was given), and the op_key of the inputs it was called with when
    it was worked out already (a call the record does not hold: hashing them again cost as much
    as the rest of its step)."""

    started: int
    matched: int | None
    edited: dict[str, Any] | None = None
    key: str | None = None


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
        #: Called with the ledger's steps each time one is added (the durable ledger of `record`),
        #: from the thread that completed the step, one call at a time.
        self.on_step: Callable[[Sequence[Step]], None] | None = None
        #: The recording's own failure, once it failed (see the module's docstring).
        self.failed: ReplayError | None = None
        # calls come from any thread: matching against the record and appending happen under it
        self._lock = threading.RLock()
        self._closed = False  # the agent returned: a thread it left running calls unrecorded
        #: the process the run is kept in (a process forked from it calls unrecorded)
        self.pid = os.getpid()
        #: What the agent raised, once `run_agent` has run it (None: it returned).
        self.raised: Exception | None = None
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
        return self.call(step_kind, name, shaped_inputs(step_kind, name, inputs), produce=produce)

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
            return cast(dict[str, Any], self._scrub(plain_json(inputs, "inputs")))
        except CanonicalJSONError as exc:
            index = len(self.ledger.steps)
            raise self._fatal(
                CanonicalJSONError(f"step {index} ({kind.value} {name!r}): {exc}")
            ) from None

    def _fatal(self, error: ReplayError) -> ReplayError:
        """Remember an error of agent-replay itself: an agent's ``except Exception`` must not hide it
        (`run_agent` raises it when the agent returns)."""
        return remember_fatal(error)

    def factual(self) -> Trajectory:
        """What resample functions see as ``ctx.factual``: while recording, the run so far (id
        ``live``); under replay, the recorded run."""
        return Trajectory("live", tuple(self.ledger.steps))

    def recorded_step(self, index: int | None) -> Step | None:
        """The recorded step of that index (None: no record, or no index)."""
        return None

    def close(self) -> None:
        """The agent returned: what a thread it left running calls later is no step of the run
        (it runs as it would without agent-replay), and nothing more reaches ``on_step``."""
        with self._lock:
            self._closed, self.on_step = True, None

    def _execute(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        produce: Produce | None,
        key: str | None = None,
    ) -> Any:
        """Perform the operation; ``key`` is its op_key when the caller knows it already."""
        if self._closed and produce is not None:
            return produce()
        with inside_a_step():  # the clock reads meanwhile are this step's (`_environment`)
            return self._perform(kind, name, inputs, produce, key)

    def _perform(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        produce: Produce | None,
        key: str | None,
    ) -> Any:
        with self._lock:
            decided = self._decide(kind, name, inputs, produce is not None, key)
        if not isinstance(decided, _Live):
            return decided.output
        if decided.edited is not None:
            inputs, produce = decided.edited, None
        try:
            output = self._produce(kind, name, inputs, produce, decided)
        except ReplayError:
            raise
        except Exception as exc:
            return self._finish(decided, kind, name, inputs, None, exc)
        return self._finish(decided, kind, name, inputs, output, None)

    def _finish(
        self,
        live: _Live,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        output: Any,
        failure: Exception | None,
    ) -> Any:
        """`_done` under the lock; a failure of the recording itself stops the recording, and the
        agent gets what the operation gave (its output, or its own exception) as if unrecorded."""
        try:
            with self._lock:
                return self._done(live, kind, name, inputs, output, failure)
        except (ReplayError, StepError):
            raise
        except Exception as exc:
            self._stop(kind, name, exc, len(self.ledger.steps))
            if failure is not None:
                raise failure from None
            return output

    def _stop(self, kind: StepKind, name: str, exc: BaseException, index: int) -> None:
        """The recording failed at step ``index``: remember the first failure, keep nothing more
        durable."""
        self.on_step = None
        if self.failed is not None:
            return
        if isinstance(exc, ReplayError):
            self.failed = exc
            return
        self.failed = RecorderError(
            f"agent-replay's recorder failed at step {index} ({kind.value} {name!r}): "
            f"{type(exc).__name__}: {exc}; the agent ran on, but the run is not kept as what it did"
        )

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
        if self._closed and produce is not None:
            return await produce()
        with inside_a_step():  # the clock reads meanwhile are this step's (`_environment`)
            stored = self._snapshot(step_kind, name, inputs)
            with self._lock:
                decided = self._decide(step_kind, name, stored, produce is not None, None)
            if not isinstance(decided, _Live):
                return decided.output
            if decided.edited is not None:
                stored, produce = decided.edited, None
            try:
                if produce is not None:
                    output = await produce()
                else:
                    output = self._produce(step_kind, name, stored, None, decided)
            except ReplayError:
                raise
            except Exception as exc:
                return self._finish(decided, step_kind, name, stored, None, exc)
            return self._finish(decided, step_kind, name, stored, output, None)

    async def allm(
        self, name: str, /, *, produce: Callable[[], Awaitable[Any]] | None = None, **inputs: Any
    ) -> Any:
        """`llm`, awaited: ``await ctx.allm("model", produce=lambda: client.chat(...), ...)``."""
        return await self.acall(
            StepKind.LLM, name, shaped_inputs(StepKind.LLM, name, inputs), produce=produce
        )

    async def atool(
        self, name: str, /, *, produce: Callable[[], Awaitable[Any]] | None = None, **inputs: Any
    ) -> Any:
        """`tool`, awaited."""
        return await self.acall(
            StepKind.TOOL, name, shaped_inputs(StepKind.TOOL, name, inputs), produce=produce
        )

    # --- the environment: a clock, fresh ids, randomness from outside the run ----------------

    def now(self) -> float:
        """The time, in seconds since the epoch (``time.time()``), as one ``other`` step named
        ``ctx.now``: recorded live, served on replay (`otel_replay.model.ENVIRONMENT_STEPS`)."""
        return float(self._environment("ctx.now", time.time))

    def uuid(self) -> str:
        """A fresh random id (``str(uuid.uuid4())``), as one ``other`` step named ``ctx.uuid``:
        recorded live, served on replay."""
        return str(self._environment("ctx.uuid", lambda: str(uuid.uuid4())))

    def random(self) -> float:
        """A random number in [0, 1) from outside the run (not `rng`'s seeded stream: a value the
        world chose, like a clock's), as one ``other`` step named ``ctx.random``: recorded live,
        served on replay."""
        return float(self._environment("ctx.random", _SYSTEM_RANDOM.random))

    async def anow(self) -> float:
        """`now`, awaited (nothing is awaited: for agents that await every step)."""
        return self.now()

    async def auuid(self) -> str:
        """`uuid`, awaited."""
        return self.uuid()

    async def arandom(self) -> float:
        """`random`, awaited."""
        return self.random()

    def _environment(self, name: str, produce: Produce) -> Any:
        return self.call(StepKind.OTHER, name, {}, produce=produce, checked=True)

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
        live: _Live,
    ) -> Any:
        """Run the operation live: ``produce``, else the registered resample function, called
        with the recorded step it stands in for (the one ``live`` matched) as the rollout contract
        says (`otel_replay.resamplers.RolloutContext`)."""
        if produce is not None:
            return produce()
        position = len(self.ledger.steps)
        registration = self.registry.lookup(Step(kind, name, inputs))
        if registration is None:
            raise self._fatal(
                AgentError(
                    f"step {position} ({kind.value} {name!r}) has no produce= callable and no "
                    f"resample function is registered for it: pass produce=..., or "
                    f"{ways_to_resample(kind, name)}"
                )
            )
        recorded = self.recorded_step(live.matched)
        if recorded is not None:  # matched by op_key, unless edited: the recorded key stands
            probe = standing_in(recorded, inputs, same_call=live.edited is None)
        else:
            probe = unrecorded(kind, name, inputs, position, key=live.key)
        history = tuple(self.ledger.steps)
        ctx = RolloutContext.for_step(
            self.rollout, recorded, position, history, self.factual(), self.plan, live=True
        )
        try:
            with outside_the_agent():
                return registration.function(probe, ctx)
        except StepFailed:
            raise  # the operation failed: recorded as an error step, raised to the agent
        except UnservableError as exc:  # nothing can answer the call: the rollout ends here
            raise self._fatal(exc) from None
        except Exception as exc:  # a bug in the resample function stops the run
            function = describe(registration.function)
            raise self._fatal(
                RolloutError(
                    f"step {position} ({kind.value} {name!r}): resample function {function} "
                    f"raised {type(exc).__name__}: {self._scrub.text(str(exc))}",
                    step_index=position,
                    function=function,
                )
            ) from exc

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
            try:
                self.on_step(self.ledger.steps)
            except Exception as exc:  # the ledger failed: the agent is not told (module docstring)
                self._stop(kind, name, exc, index)
        if error is not None:
            raise StepError(error, index)
        return output

    def _checked_output(self, index: int, kind: StepKind, name: str, output: Any, lax: bool) -> Any:
        """A copy of ``output`` as plain JSON; not JSON: an error, or with ``lax`` a lossy copy."""
        try:
            return plain_json(output, "output")
        except CanonicalJSONError as exc:
            if not lax:
                raise self._fatal(
                    CanonicalJSONError(
                        f"step {index} ({kind.value} {name!r}): {exc}; return plain JSON values, "
                        f"or record with {setting('lax')} to store a lossy copy"
                    )
                ) from None
        self.ledger.lossy.append(index)
        return lossy(output)


def shaped_inputs(kind: StepKind, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
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
