"""What a resample function is given besides the recorded step."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import overload

from otel_replay.model import Step, Trajectory


def step_seed(seed: int, identity: str, rollout: int, index: int) -> int:
    """The 64-bit seed of one step of one rollout of one plan: rollout ``r`` of a plan draws from
    ``(seed, plan identity, r)`` and each step has its own stream, so holding one step never shifts
    the numbers another sees, and no result depends on execution order."""
    key = f"{seed}\x1f{identity}\x1f{rollout}\x1f{index}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


class RolloutContext:
    """The world of one rollout, as one resample function sees it. Read-only.

    Attributes:
        rng: seeded for this rollout and this step; the only randomness a resample function may use
            (results must not depend on execution order, worker count or executor). Built on first
            use: a resample function that draws nothing pays nothing for it.
        history: the counterfactual steps before this one, in order, with their new outputs.
        factual: the recorded trajectory (must not be mutated).
        plan: the `otel_replay.replay.Plan` being rolled out.
        live: the step's inputs are what a running agent (or the chat loop) just asked, so they
            are current (a conversation needs no rebuilding from ``history``); False in the walk
            over the record, whose inputs are as recorded.
    """

    __slots__ = ("_rng", "_seed", "factual", "history", "live", "plan")

    def __init__(
        self,
        seed: int | tuple[int, str, int, int],
        history: Sequence[Step],
        factual: Trajectory,
        plan: object,
        live: bool = False,
    ) -> None:
        self._seed = seed  # an int, or (run seed, plan identity, rollout, step index)
        self._rng: random.Random | None = None
        self.history = history
        self.factual = factual
        self.plan = plan
        self.live = live

    @property
    def rng(self) -> random.Random:
        if self._rng is None:
            seed = self._seed if isinstance(self._seed, int) else step_seed(*self._seed)
            self._rng = random.Random(seed)
        return self._rng

    def __repr__(self) -> str:
        return f"RolloutContext(plan={getattr(self.plan, 'identity', self.plan)!r}, history={len(self.history)} steps)"


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
