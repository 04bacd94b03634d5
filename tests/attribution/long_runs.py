"""Long runs built in code, for the adaptive search: a small state machine over many steps, with the
exact failure rate of every plan, so tests compare the search's answers with theory.

Each step's output is the whole state after it (``{"bad": bool, "lucky": bool, "wear": int}``); a
step's resample function reads the state before it from the latest step in ``ctx.history`` and
draws the next one with ``ctx.rng``. The verifier fails a run whose final state is bad or worn to
``WORN``. The rules (each step follows one; the record took the outcome in brackets):

* ``noise``: the state passes through.
* ``Break(p)``: a good run goes bad with probability p; bad stays bad [went bad].
* ``Risk(p)``: the same [stayed as it was].
* ``Luck(p)``: the run is lucky with probability p [lucky].
* ``Crash(lucky, unlucky)``: the run goes bad with probability ``lucky`` if it is lucky, else
  ``unlucky`` [went bad].
* ``Fix(p)``: a bad run is mended with probability p [mended].
* ``Miss(p)``: the same [stayed bad]: a chance to mend that the record missed.
* ``Wear(p)``: one more unit of wear with probability p [worn a unit more].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay import Registry, Step, StepKind, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

WORN = 20

State = tuple[bool, bool, int]  # bad, lucky, wear


@dataclass(frozen=True)
class Break:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(1.0, s)] if s[0] else [(self.p, (True, s[1], s[2])), (1 - self.p, s)]

    def recorded(self, s: State) -> State:
        return True, s[1], s[2]


@dataclass(frozen=True)
class Risk:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return Break(self.p).step(s)

    def recorded(self, s: State) -> State:
        return s


@dataclass(frozen=True)
class Luck:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(self.p, (s[0], True, s[2])), (1 - self.p, (s[0], False, s[2]))]

    def recorded(self, s: State) -> State:
        return s[0], True, s[2]


@dataclass(frozen=True)
class Crash:
    lucky: float
    unlucky: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return Break(self.lucky if s[1] else self.unlucky).step(s)

    def recorded(self, s: State) -> State:
        return True, s[1], s[2]


@dataclass(frozen=True)
class Fix:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(self.p, (False, s[1], s[2])), (1 - self.p, s)] if s[0] else [(1.0, s)]

    def recorded(self, s: State) -> State:
        return False, s[1], s[2]


@dataclass(frozen=True)
class Miss:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return Fix(self.p).step(s)

    def recorded(self, s: State) -> State:
        return s


@dataclass(frozen=True)
class Wear:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(self.p, (s[0], s[1], s[2] + 1)), (1 - self.p, s)]

    def recorded(self, s: State) -> State:
        return s[0], s[1], s[2] + 1


@dataclass(frozen=True)
class Noise:
    def step(self, s: State) -> list[tuple[float, State]]:
        return [(1.0, s)]

    def recorded(self, s: State) -> State:
        return s


Rule = Break | Risk | Luck | Crash | Fix | Miss | Wear | Noise
START: State = (False, False, 0)


def failed(s: State) -> bool:
    return s[0] or s[2] >= WORN


@dataclass(frozen=True)
class LongRun:
    """A run of ``len(rules)`` steps, all resamplable; step i follows ``rules[i]``."""

    name: str
    rules: tuple[Rule, ...]

    def states(self) -> list[State]:
        """The recorded state after each step."""
        states, s = [], START
        for rule in self.rules:
            s = rule.recorded(s)
            states.append(s)
        return states

    def trajectory(self) -> Trajectory:
        states = self.states()
        steps = [
            Step(StepKind.TOOL, _name(i, rule), {"i": i}, _output(states[i]))
            for i, rule in enumerate(self.rules)
        ]
        return Trajectory.build(self.name, steps, outcome=0.0 if failed(states[-1]) else 1.0)

    def registry(self) -> Registry:
        registry = Registry()
        for i, rule in enumerate(self.rules):
            registry.add_resampler(StepKind.TOOL, _resample(rule), _name(i, rule))
        registry.set_verifier(_verify)
        return registry

    def register(self) -> None:
        """Register the run's resample functions and verifier as the decorators do, so that a
        module calling it loads through ``agent-replay attribute --resamplers`` like any other."""
        for i, rule in enumerate(self.rules):
            resampler(StepKind.TOOL, name=_name(i, rule))(_resample(rule))
        verifier(_verify)

    def failure_rate(self, start: int) -> float:
        """P(fail | the steps before ``start`` kept, the rest resampled), exactly."""
        s = self.states()[start - 1] if start > 0 else START
        dist = {s: 1.0}
        for rule in self.rules[start:]:
            after: dict[State, float] = {}
            for state, p in dist.items():
                for q, nxt in rule.step(state):
                    after[nxt] = after.get(nxt, 0.0) + p * q
            dist = after
        return sum(p for state, p in dist.items() if failed(state))

    def effects(self) -> list[float]:
        """Each step's true attribution, ``F(i + 1) − F(i)``, or its rescue credit (the negation)
        when the record passed."""
        rates = [self.failure_rate(i) for i in range(len(self.rules) + 1)]
        sign = 1.0 if failed(self.states()[-1]) else -1.0
        return [sign * (rates[i + 1] - rates[i]) for i in range(len(self.rules))]

    def wrongly_named(self, named: int, margin: float = 0.1) -> bool:
        """Naming ``named`` is wrong (the error bound's sense): it has no effect, or a later step
        has an effect beyond the margin."""
        effects = self.effects()
        return effects[named] <= 0.0 or any(abs(a) > margin for a in effects[named + 1 :])


def run(name: str, n: int, rules: dict[int, Rule], default: Rule | None = None) -> LongRun:
    """``n`` steps following ``rules`` at their indices, ``default`` (noise) elsewhere."""
    return LongRun(name, tuple(rules.get(i, default or Noise()) for i in range(n)))


def _name(i: int, rule: Rule) -> str:
    return f"s{i:02d}_{type(rule).__name__.lower()}"


def _verify(t: Trajectory) -> float:
    return 0.0 if failed(_state(t.steps[-1].output)) else 1.0


def _output(s: State) -> dict[str, Any]:
    return {"bad": s[0], "lucky": s[1], "wear": s[2]}


def _state(output: Any) -> State:
    return bool(output["bad"]), bool(output["lucky"]), int(output["wear"])


def _resample(rule: Rule) -> Callable[[Step, RolloutContext], Any]:
    def resample(step: Step, ctx: RolloutContext) -> Any:
        before = _state(ctx.history[-1].output) if ctx.history else START
        draw, total = ctx.rng.random(), 0.0
        outcomes: Sequence[tuple[float, State]] = rule.step(before)
        for p, state in outcomes:
            total += p
            if draw < total:
                return _output(state)
        return _output(outcomes[-1][1])

    return resample


#: A run whose root cause comes long before its Point of Commitment (`tests/attribution/early_root.py`
#: loads it through ``--resamplers``). Step 1 broke the run (resampled, it breaks one time in ten);
#: step 12 could still have mended it and missed (resampled, it mends one time in five); the other
#: steps are noise. Step 12's attribution is 0.2, so it is the Point of Commitment, the latest step
#: that matters; step 1's is 0.9 · 0.8 = 0.72, every step before it 0, so it is the root cause, the
#: earliest: resampling from it on saves the run 1 − 0.1 · 0.8 = 92 % of the time.
EARLY_ROOT = run("early-root", 16, {1: Break(0.1), 12: Miss(0.2)})
