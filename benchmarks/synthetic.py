"""Synthetic agent runs with exact answers, for the attribution benchmarks.

A model is a Markov chain over a small hashable state. A resamplable step has a transition (state ->
distribution over next states); its resample function reads the state from the counterfactual
``ctx.history`` and draws the next state with ``ctx.rng``. Observed-only steps (a tool with no
resample function) carry no state. The verifier fails a run whose final state is "bad". Because the
chains are small, ``P(fail | ablate_from(i))`` is computed exactly, and so is the true attribution of
every step (`true_attributions`). ``attribution_bench.py`` and ``adaptive_bench.py`` build their
families from these parts.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.resamplers import Registry, RolloutContext

State = tuple[int, ...]
Transition = Callable[[State], list[tuple[float, State]]]


@dataclass(frozen=True, slots=True)
class StepSpec:
    kind: StepKind
    name: str
    transition: Transition | None  # None: observed-only (no resample function registered)
    factual: State | None  # the recorded state after this step; None for observed-only steps


@dataclass(frozen=True, slots=True)
class Model:
    family: str
    initial: State
    steps: tuple[StepSpec, ...]
    bad: Callable[[State], bool]
    planted: int  # index of the planted Point of Commitment


def identity(state: State) -> list[tuple[float, State]]:
    return [(1.0, state)]


def flip(position: int, p: float) -> Transition:
    """Set ``state[position]`` to 1 with probability ``p`` (once set, it stays set)."""

    def transition(state: State) -> list[tuple[float, State]]:
        if state[position]:
            return [(1.0, state)]
        on = (*state[:position], 1, *state[position + 1 :])
        return [(p, on), (1.0 - p, state)]

    return transition


class Builder:
    """Appends key steps and random fillers, tracking the factual state."""

    def __init__(self, rng: random.Random, initial: State) -> None:
        self.rng = rng
        self.initial = initial
        self.state = initial
        self.steps: list[StepSpec] = []

    def key(self, name: str, transition: Transition, factual: State) -> int:
        self.steps.append(StepSpec(StepKind.LLM, name, transition, factual))
        self.state = factual
        return len(self.steps) - 1

    def fillers(self, low: int, high: int) -> None:
        """``low..high`` filler steps that keep the factual state; a quarter are observed-only."""
        for _ in range(self.rng.randint(low, high)):
            roll = self.rng.random()
            if roll < 0.25:
                self.steps.append(StepSpec(StepKind.TOOL, "audit_log", None, None))
            elif roll < 0.6:
                self.steps.append(StepSpec(StepKind.TOOL, "search", identity, self.state))
            else:
                self.steps.append(StepSpec(StepKind.LLM, "think", identity, self.state))

    def model(self, family: str, bad: Callable[[State], bool], planted: int) -> Model:
        return Model(family, self.initial, tuple(self.steps), bad, planted)


def current_state(history: Sequence[Step], initial: State) -> State:
    """The state after ``history``: carried by the latest output that has one."""
    for step in reversed(history):
        output = step.output
        if isinstance(output, dict) and "state" in output:
            return tuple(output["state"])
    return initial


def draw(options: list[tuple[float, State]], u: float) -> State:
    for p, state in options:
        if u < p:
            return state
        u -= p
    return options[-1][1]


def trajectory_of(model: Model, name: str) -> Trajectory:
    steps = []
    for i, spec in enumerate(model.steps):
        output: dict[str, Any] = (
            {"logged": True}
            if spec.factual is None
            else {"state": list(spec.factual), "text": "as recorded"}
        )
        steps.append(Step(spec.kind, spec.name, {"turn": i}, output))
    return Trajectory.build(name, steps)


def registry_of(model: Model, calls: Counter[str] | None = None) -> Registry:
    """The model's resample functions and verifier; each call counted in ``calls`` by step kind
    (``llm``: a model call, the rest tool calls), when given."""

    def resample(step: Step, ctx: RolloutContext) -> dict[str, Any]:
        if calls is not None:
            calls[step.kind.value] += 1
        transition = model.steps[step.index].transition
        assert transition is not None, "observed-only steps are never resampled"
        state = draw(transition(current_state(ctx.history, model.initial)), ctx.rng.random())
        return {"state": list(state), "text": f"draft {ctx.rng.getrandbits(32):08x}"}

    def outcome(trajectory: Trajectory) -> float:
        return 0.0 if model.bad(current_state(trajectory.steps, model.initial)) else 1.0

    registry = Registry()
    registry.add_resampler("llm", resample)  # every llm step
    registry.add_resampler("tool", resample, name="search")  # "audit_log" stays observed-only
    registry.set_verifier(outcome)
    return registry


def p_fail_ablated(model: Model, start: int) -> float:
    """Exact ``P(fail | ablate_from(start))``: hold steps before ``start``, resample the rest."""
    state = model.initial
    for spec in model.steps[:start]:
        if spec.factual is not None:
            state = spec.factual
    dist: dict[State, float] = {state: 1.0}
    for spec in model.steps[start:]:
        if spec.transition is None:
            continue
        following: dict[State, float] = defaultdict(float)
        for s, p in dist.items():
            for q, t in spec.transition(s):
                following[t] += p * q
        dist = following
    return sum(p for s, p in dist.items() if model.bad(s))


def true_attributions(model: Model) -> dict[int, float]:
    """Exact ``P(fail | kept_i) − P(fail | ablate_from(i))`` for every resamplable step."""
    resamplable = [i for i, s in enumerate(model.steps) if s.transition is not None]
    fail = {i: p_fail_ablated(model, i) for i in resamplable}
    fail[len(model.steps)] = p_fail_ablated(model, len(model.steps))
    following = [*resamplable[1:], len(model.steps)]
    return {i: fail[j] - fail[i] for i, j in zip(resamplable, following, strict=True)}
