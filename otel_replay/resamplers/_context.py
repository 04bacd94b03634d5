"""What a resample function is given besides the recorded step."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from otel_replay.hashing import op_key
from otel_replay.model import Step, StepKind, Trajectory


def step_seed(seed: int, identity: str, rollout: int, index: int) -> int:
    """The 64-bit seed of one step of one rollout of one plan: rollout ``r`` of a plan draws from
    ``(seed, the plan's stream, r)`` (`otel_replay.replay.Plan.randomness`) and each step has its
    own stream, so holding one step never shifts
    the numbers another sees, and no result depends on execution order."""
    key = f"{seed}\x1f{identity}\x1f{rollout}\x1f{index}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


#: Where the streams of calls the record does not hold come from: a namespace of their own, so an
#: unrecorded call at position ``p`` never shares a stream with the recorded step ``p``.
_UNRECORDED = "\x1eunrecorded"


@dataclass(frozen=True, slots=True)
class RolloutSeed:
    """Which rollout is being made, as far as randomness goes: rollout number ``rollout`` of the plan
    whose identity is ``plan``, under the run's ``seed``. Every random stream of the rollout is
    derived from it here, whichever driver makes the rollout (the walk, the chat loop, a live
    agent), so the same step of the same rollout draws the same numbers under all of them."""

    seed: int
    plan: str = ""
    rollout: int = 0

    @classmethod
    def of(cls, seed: int, plan: object, rollout: int = 0) -> RolloutSeed:
        """The rollout of ``plan`` (a `otel_replay.replay.Plan`, or None outside a plan)."""
        return cls(seed, str(getattr(plan, "randomness", "")), rollout)

    def of_step(self, index: int) -> int:
        """The stream of recorded step ``index`` (its index in the recorded run)."""
        return step_seed(self.seed, self.plan, self.rollout, index)

    def of_unrecorded(self, position: int) -> int:
        """The stream of a call the record does not hold, made at ``position`` in this rollout."""
        return step_seed(self.seed, self.plan + _UNRECORDED, self.rollout, position)

    def of_agent(self) -> int:
        """The seed a live agent's own ``ctx.rng`` draws from where this rollout departs from the
        record (the positions it holds replay the recorded seed)."""
        return step_seed(self.seed, self.plan, self.rollout, -1)


class RolloutContext:
    """The world of one rollout, as one resample function sees it. Read-only.

    Every driver makes it with `RolloutContext.for_step`, so a resample function is handed the same
    thing whether the rollout walks the record, re-drives a tool-calling loop or re-runs a live
    agent. The ``step`` it is called with is the recorded step the call stands in for, with this
    rollout's inputs (its ``output``, ``status`` and ``index`` are the record's); for a call the
    record does not hold (the rollout took another path), ``step`` is the call as this rollout made
    it (kind, name, inputs), with ``output=None``, ``index`` its position in the rollout, and
    ``ctx.recorded`` None.

    Attributes:
        rng: seeded for this rollout and this step (`RolloutSeed`); the only randomness a resample
            function may use (results must not depend on execution order, worker count or
            executor). Built on first use: a resample function that draws nothing pays nothing.
        history: the counterfactual steps before this one, in order, with their new outputs.
        factual: the recorded trajectory (must not be mutated), with its own id.
        plan: the `otel_replay.replay.Plan` being rolled out (None while an agent is recorded).
        recorded: the recorded step this call stands in for; None for a call the record does not
            hold.
        live: the step's inputs are what a running agent (or the chat loop) just asked, so they
            are current (a conversation needs no rebuilding from ``history``); False in the walk
            over the record, whose inputs are as recorded.
    """

    __slots__ = ("_rng", "_seed", "factual", "history", "live", "plan", "recorded")

    def __init__(
        self,
        seed: int | tuple[int, str, int, int],
        history: Sequence[Step],
        factual: Trajectory,
        plan: object,
        live: bool = False,
        recorded: Step | None = None,
    ) -> None:
        self._seed = seed  # an int, or (run seed, plan identity, rollout, step index)
        self._rng: random.Random | None = None
        self.history = history
        self.factual = factual
        self.plan = plan
        self.live = live
        self.recorded = recorded

    @classmethod
    def for_step(
        cls,
        rollout: RolloutSeed,
        recorded: Step | None,
        position: int,
        history: Sequence[Step],
        factual: Trajectory,
        plan: object,
        *,
        live: bool,
    ) -> RolloutContext:
        """The context of the call at ``position`` of ``rollout``, standing in for ``recorded``
        (None: a call the record does not hold). Its stream is the recorded step's own, whatever
        the position the call came at."""
        if recorded is not None:
            seed = (rollout.seed, rollout.plan, rollout.rollout, recorded.index)
        else:
            seed = (rollout.seed, rollout.plan + _UNRECORDED, rollout.rollout, position)
        return cls(seed, history, factual, plan, live, recorded)

    @property
    def rng(self) -> random.Random:
        if self._rng is None:
            seed = self._seed if isinstance(self._seed, int) else step_seed(*self._seed)
            self._rng = random.Random(seed)
        return self._rng

    def __repr__(self) -> str:
        return f"RolloutContext(plan={getattr(self.plan, 'identity', self.plan)!r}, history={len(self.history)} steps)"


def standing_in(recorded: Step, inputs: dict[str, Any], *, same_call: bool = False) -> Step:
    """What a resample function is called with for ``recorded`` when this rollout asks it with
    ``inputs``: the recorded step with those inputs. Its op_key is made anew when they are another
    call's (an edited or model-swapped step); ``same_call``: they matched the record by op_key
    (they differ at most in correlation ids), so the recorded key stands."""
    if inputs is recorded.inputs:
        return recorded
    key = recorded.op_key if same_call else op_key(recorded.kind.value, recorded.name, inputs)
    return dataclasses.replace(recorded, inputs=inputs, op_key=key)


def unrecorded(
    kind: StepKind, name: str, inputs: dict[str, Any], position: int, key: str | None = None
) -> Step:
    """What a resample function is called with for a call the record does not hold (``key``:
    the inputs' op_key, when the caller worked it out already)."""
    return Step(kind, name, inputs, index=position, op_key=key or op_key(kind.value, name, inputs))


class History(Sequence[Step]):
    """The first ``length`` steps of a growing list, without copying them (a rollout would otherwise
    copy its history once per step: quadratic in its length)."""

    __slots__ = ("_length", "_steps")

    def __init__(self, steps: list[Step], length: int) -> None:
        self._steps = steps
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Step: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Step]: ...
    def __getitem__(self, index: int | slice) -> Step | Sequence[Step]:
        if isinstance(index, slice):
            return self._steps[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("history index out of range")
        return self._steps[index]

    def __repr__(self) -> str:
        return f"History({list(self)!r})"


class StepFailed(Exception):
    """Raise from a resample function to make the step fail (status ``error``) in this rollout.

    A tool that times out is an outcome to sample, not a bug: anything else a resample function raises
    stops the run (or fails the rollout, with ``--on-resampler-error fail-rollout``).
    """
