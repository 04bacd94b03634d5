"""The cassette: `ReplayContext` serves a re-run agent the recorded outputs, matching each call by
``op_key`` (kind, name, canonical inputs) against the recorded steps not yet consumed — a multiset
consumed in recorded order, never by position alone — and applies a `Plan` to the recorded step
it matched. A call that matches nothing means the timeline diverged: it runs live, or stops with a
`NonDeterminismError` naming the step and the nearest recorded calls (the diagnostics below).

A step that read the environment (`Step.reads_environment`: ``ctx.now()``, an instrumented
``time.time()``) is served as recorded before the first step the plan changes, and read afresh
from there on (a fork's clock is the time it was made; tools that still match are served, but
an environment read always matches, so serving it would make the time stand still)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any

from otel_replay.errors import InterventionError, NonDeterminismError, UnservableError
from otel_replay.hashing import content_form, op_key
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.replay._diff import flat_inputs
from otel_replay.replay._patch import apply_patch
from otel_replay.replay._plan import Action, Plan
from otel_replay.replay._steps import AgentContext, _Live, _Served
from otel_replay.resamplers import Registry, RolloutSeed, current_log, ways_to_resample


class Record:
    """What a `ReplayContext` reads of the run it serves (its steps by index, by op_key, the
    operations marked observed-only), worked out once: a driver that rolls the same run out many
    times shares one, where each rollout's context used to work it out again."""

    __slots__ = ("by_index", "factual", "keyed", "marked", "steps")

    def __init__(self, recorded: Trajectory | Sequence[Step]) -> None:
        # steps alone are a run of id ``recorded``
        self.factual = (
            recorded
            if isinstance(recorded, Trajectory)
            else Trajectory("recorded", tuple(recorded))
        )
        self.steps = list(self.factual.steps)
        self.by_index = {step.index: step for step in self.steps}
        self.keyed = tuple((step.op_key or _key(step), step) for step in self.steps)
        self.marked = frozenset((s.kind, s.name) for s in self.steps if not s.resamplable)


class ReplayContext(AgentContext):
    """Serves recorded outputs to a re-run agent, applying a plan to the recorded steps it matches."""

    def __init__(
        self,
        recorded: Trajectory | Sequence[Step] | Record,
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
        known = recorded if isinstance(recorded, Record) else Record(recorded)
        # what resample functions see as ``ctx.factual``: the recorded run, its own id kept
        self._factual = known.factual
        self.recorded = known.steps  # read, never changed
        self._by_index = known.by_index
        self.plan = plan
        # where the plan first changes the record: the environment's reads from there on (a
        # clock, a fresh id) are read afresh, the world's state now, never served stale
        self._changes_from = _first_change(plan)
        self.on_miss = on_miss
        self.live_kinds = frozenset(live_kinds)
        self._cassette: dict[str, deque[Step]] = {}
        for key, step in known.keyed:
            self._cassette.setdefault(key, deque()).append(step)
        # operations with a recorded step marked ``resamplable: false`` (see `_observed_only`)
        self._marked = known.marked
        # the log of the rollout this context runs (attribution's), if any: every call it makes
        # is noted there, from whichever thread the agent makes it (see `_decide`)
        self._log = current_log()

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
        decided = self._deciding(kind, name, inputs, runnable, key)
        if self._log is not None and isinstance(decided, _Live) and self._resampled(decided):
            # a call the rollout makes, noted before it is made: paid even if the rollout ends
            self._log.called(kind is StepKind.LLM, decided.matched)
        return decided

    def _produce(
        self,
        kind: StepKind,
        name: str,
        inputs: dict[str, Any],
        produce: Callable[[], Any] | None,
        live: _Live,
    ) -> Any:
        try:
            return super()._produce(kind, name, inputs, produce, live)
        except UnservableError:
            if self._log is not None and self._resampled(live):  # nothing was called for it
                self._log.unanswered(kind is StepKind.LLM, live.matched)
            raise

    def _resampled(self, live: _Live) -> bool:
        """Whether a call run live is one the plan resamples (or one the record does not hold):
        what a rollout counts as run (`otel_replay.replay.AgentDriver`)."""
        if live.matched is None:
            return True
        return self.plan is not None and self.plan.at(live.matched).action is Action.RESAMPLE

    def _deciding(
        self, kind: StepKind, name: str, inputs: dict[str, Any], runnable: bool, key: str | None
    ) -> _Served | _Live:
        started = time.time_ns()
        worked_out = key is None  # a key worked out here is the key of these very inputs
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
            return _Live(started, None, key=key if worked_out else None)
        if recorded.index != len(self.ledger.steps) and self.ledger.diverged_at is None:
            self.ledger.diverged_at = len(self.ledger.steps)  # matched, but out of recorded order
        action = self.plan.at(recorded.index).action if self.plan is not None else Action.HOLD
        if action is Action.RESAMPLE and not recorded.resamplable:
            action = Action.HOLD  # observed-only: always served from the record, as in trace mode
        if action is Action.HOLD and kind in self.live_kinds:
            action = Action.RESAMPLE
        if (
            action is Action.HOLD
            and runnable
            and self._changes_from is not None
            and recorded.index >= self._changes_from
            and recorded.reads_environment
        ):
            action = Action.RESAMPLE  # the clock after the change: read now, as the world is
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
                if kind is StepKind.LLM and step.resamplable:
                    raise self._fatal(self._stale_answer(step, name))
                self._cassette[step.op_key or _key(step)].remove(step)
                return step
        return None

    def _stale_answer(self, recorded: Step, name: str) -> UnservableError:
        """A model turn asked a conversation the record does not hold (a step before it changed)
        with nothing to ask the model again: its recorded answer answers another question, so it
        is never served as this one's (the rollout is unservable, a fork says so)."""
        position = len(self.ledger.steps)
        return UnservableError(
            f"model turn {position} ({name!r}) is asked a conversation the record does not hold "
            f"(a step before it changed), and nothing can ask the model again: its recorded "
            f"answer (step {recorded.index}) answers another question; to re-ask it, "
            f"{ways_to_resample(StepKind.LLM, name)}",
            step_index=position,
            function="(none: the model is not re-asked)",
            tool=name,
            arguments="",
        )

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


def _first_change(plan: Plan | None) -> int | None:
    """The first step ``plan`` does not hold (its swapped model's first, if earlier); None: it
    holds every step (a replay, a resumed run's prefix)."""
    if plan is None:
        return None
    first = next(
        (i for i, done in enumerate(plan.interventions) if done.action is not Action.HOLD), None
    )
    if plan.model_from is not None:
        first = plan.model_from[0] if first is None else min(first, plan.model_from[0])
    return first


def _recorded_error(step: Step) -> str | None:
    return (step.error or "failed") if step.status is StepStatus.ERROR else None


def _key(step: Step) -> str:
    return op_key(step.kind.value, step.name, step.inputs)


def _compared(kind: StepKind, inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs as a miss's diagnostics compare them: flat, a model call's up to its ids (what
    differs is never only a fresh tool-call id)."""
    flat = flat_inputs(inputs)
    return content_form(flat) if kind is StepKind.LLM else flat


def _closeness(step: Step, kind: StepKind, name: str, inputs: dict[str, Any]) -> int:
    mine, theirs = _compared(kind, inputs), _compared(step.kind, step.inputs)
    same = sum(1 for k in mine if k in theirs and theirs[k] == mine[k])
    return 4 * (step.kind is kind) + 2 * (step.name == name) + same


def _difference(step: Step, kind: StepKind, name: str, inputs: dict[str, Any]) -> str:
    what = []
    if step.kind is not kind:
        what.append(f"kind {step.kind.value} vs {kind.value}")
    if step.name != name:
        what.append(f"name {step.name!r} vs {name!r}")
    mine, theirs = _compared(kind, inputs), _compared(step.kind, step.inputs)
    keys = sorted(
        k for k in set(mine) | set(theirs) if mine.get(k, _ABSENT) != theirs.get(k, _ABSENT)
    )
    if keys:
        what.append("inputs differ in " + ", ".join(repr(k) for k in keys))
    return "; ".join(what) or "same call (already consumed by an earlier match)"


_ABSENT = object()
