"""Long runs built in code, for the adaptive search: a small state machine over many steps, with the
exact failure rate of every plan, so tests compare the search's answers with theory.

Each step's output is the whole state after it (``{"bad": bool, "lucky": bool, "wear": int}``,
and ``"armed": true`` once armed); a step's resample function reads the state before it from the
latest step in ``ctx.history`` and draws the next one with ``ctx.rng``. The verifier fails a run whose final state is bad or worn to
``WORN``. The rules (each step follows one; the record took the outcome in brackets):

* ``noise``: the state passes through.
* ``Break(p)``: a good run goes bad with probability p; bad stays bad [went bad].
* ``Risk(p)``: the same [stayed as it was].
* ``Luck(p)``: the run is lucky with probability p [lucky].
* ``Arm(p)``: the run is armed with probability p [armed]: only an armed run can crash at an
  ``armed_only`` crash.
* ``Crash(lucky, unlucky, armed_only=False)``: the run goes bad with probability ``lucky`` if it is
  lucky, else ``unlucky`` [went bad]; with ``armed_only``, an unarmed run passes untouched.
* ``Fix(p)``: a bad run is mended with probability p [mended].
* ``Miss(p)``: the same [stayed bad]: a chance to mend that the record missed.
* ``Wear(p)``: one more unit of wear with probability p [worn a unit more].
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay import Registry, Step, StepKind, Trajectory, resampler, verifier
from otel_replay.resamplers import RolloutContext

WORN = 20

State = tuple[bool, bool, int, bool]  # bad, lucky, wear, armed


@dataclass(frozen=True)
class Break:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(1.0, s)] if s[0] else [(self.p, (True, *s[1:])), (1 - self.p, s)]

    def recorded(self, s: State) -> State:
        return True, *s[1:]


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
        return [(self.p, (s[0], True, *s[2:])), (1 - self.p, (s[0], False, *s[2:]))]

    def recorded(self, s: State) -> State:
        return s[0], True, *s[2:]


@dataclass(frozen=True)
class Arm:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(self.p, (*s[:3], True)), (1 - self.p, (*s[:3], False))]

    def recorded(self, s: State) -> State:
        return *s[:3], True


@dataclass(frozen=True)
class Crash:
    lucky: float
    unlucky: float
    armed_only: bool = False

    def step(self, s: State) -> list[tuple[float, State]]:
        if self.armed_only and not s[3]:
            return [(1.0, s)]
        return Break(self.lucky if s[1] else self.unlucky).step(s)

    def recorded(self, s: State) -> State:
        return True, *s[1:]


@dataclass(frozen=True)
class Fix:
    p: float

    def step(self, s: State) -> list[tuple[float, State]]:
        return [(self.p, (False, *s[1:])), (1 - self.p, s)] if s[0] else [(1.0, s)]

    def recorded(self, s: State) -> State:
        return False, *s[1:]


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
        return [(self.p, (s[0], s[1], s[2] + 1, s[3])), (1 - self.p, s)]

    def recorded(self, s: State) -> State:
        return s[0], s[1], s[2] + 1, s[3]


@dataclass(frozen=True)
class Noise:
    def step(self, s: State) -> list[tuple[float, State]]:
        return [(1.0, s)]

    def recorded(self, s: State) -> State:
        return s


Rule = Break | Risk | Luck | Arm | Crash | Fix | Miss | Wear | Noise
START: State = (False, False, 0, False)


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
    output: dict[str, Any] = {"bad": s[0], "lucky": s[1], "wear": s[2]}
    if s[3]:  # only where it is: a run with no Arm step records what it recorded before
        output["armed"] = True
    return output


def _state(output: Any) -> State:
    armed = bool(output.get("armed", False))
    return bool(output["bad"]), bool(output["lucky"]), int(output["wear"]), armed


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


#: Issue 42's case (item 1): step 4 arms the run (effect +0.65), step 20 was a 1-in-100 luck that
#: made the crash all but impossible (−0.98), and step 22 crashed anyway, as it does one time in a
#: hundred when lucky and always when armed and unlucky (+0.99): the Point of Commitment. A search
#: that clears the steps after the early culprit together, without looking inside the dip at steps
#: 21–22, names step 4.
LUCKY_BEHIND = run(
    "lucky-behind", 32, {4: Arm(0.34), 20: Luck(0.01), 22: Crash(0.01, 1.0, armed_only=True)}
)
#: The same at 48 steps, the dip at steps 34–36 (between the positions a gallop from the end
#: screens: 47, 46, 44, 40, 32).
LUCKY_BEHIND_48 = run(
    "lucky-behind-48", 48, {4: Arm(0.34), 33: Luck(0.01), 36: Crash(0.01, 1.0, armed_only=True)}
)


# The families issue 42 adds to ``benchmarks/adaptive_bench.py``, drawn here so tests can run the
# same models. Each takes the run's length, where its planted step goes and a random source; the
# steps before the family's key steps only spoil a run (0-3 % of the time) or are quiet, those after
# its first key step are quiet (noise after them would shrink the planted effects as the run grows).


@dataclass(frozen=True)
class Planted:
    """A run of a family, the step theory names (-1: none, the answer is that no step matters) and,
    in ``lowered``, the step that lowered the failure rate."""

    model: LongRun
    planted: int
    lowered: int | None = None


def _noise(rng: random.Random) -> Rule:
    """A step that only spoils a run (0-3 % of the time), or a quiet one."""
    return Risk(rng.uniform(0.0, 0.03)) if rng.random() < 0.7 else Noise()


def _with_noise(
    name: str, n: int, rules: dict[int, Rule], rng: random.Random, quiet: range = range(0)
) -> LongRun:
    """``rules`` at their steps, quiet steps in ``quiet`` (so the effects there are exact), noise
    elsewhere."""
    return LongRun(
        name,
        tuple(rules[i] if i in rules else Noise() if i in quiet else _noise(rng) for i in range(n)),
    )


def lucky_behind(n: int, crash_at: int, rng: random.Random) -> Planted:
    """An early culprit (``Arm``, effect 0.3-0.7), a lucky record 1-4 steps before the crash (a
    1-in-1,000 or 1-in-50 draw: effect about −0.98 or −1), and the crash, which fires only when the
    run is armed and unlucky (effect 0.99 or 1): the Point of Commitment. ``crash_at`` >= 2."""
    luck_at = rng.randrange(max(1, crash_at - 4), crash_at)
    arm_at = rng.randrange(0, max(1, luck_at // 2))
    rules: dict[int, Rule] = {
        arm_at: Arm(1.0 - rng.uniform(0.3, 0.7)),
        luck_at: Luck(rng.choice([0.001, 0.02])),
        crash_at: Crash(rng.choice([0.0, 0.01]), 1.0, armed_only=True),
    }
    quiet = range(arm_at + 1, n)
    return Planted(_with_noise("lucky-behind", n, rules, rng, quiet), crash_at)


def settled(n: int, at: int, rng: random.Random) -> Planted:
    """The run went bad at step ``at``, which fails it however it is drawn, among steps that only
    spoil: every plan fails every time, so no step matters and the answer is "settled"."""
    return Planted(_with_noise("settled", n, {at: Break(1.0)}, rng), -1)


def lowered(n: int, crash_at: int, rng: random.Random) -> Planted:
    """A lucky record (``Luck``) some steps before the crash it made less likely, lowering the
    failure rate by 0.38-0.48 (issue 42, item 3: −0.43), and the crash (effect 0.7-0.95), the Point
    of Commitment. ``crash_at`` >= 1."""
    luck_at = rng.randrange(crash_at // 2, crash_at)
    while True:
        effect, lucky, when_lucky = (
            rng.uniform(0.38, 0.48),
            rng.uniform(0.1, 0.3),
            rng.uniform(0.05, 0.3),
        )
        when_unlucky = when_lucky + effect / (1.0 - lucky)
        if when_unlucky <= 1.0:
            break
    rules: dict[int, Rule] = {luck_at: Luck(lucky), crash_at: Crash(when_lucky, when_unlucky)}
    quiet = range(luck_at + 1, n)
    return Planted(_with_noise("lowered", n, rules, rng, quiet), crash_at, luck_at)


def rescue_noise(n: int, culprit_at: int, rng: random.Random) -> Planted:
    """A culprit (``Break``, effect about 0.4-0.95), then one to four late steps that could each have
    mended the run 2-5 % of the time and did not (``Miss``): each matters a little, none past the
    margin, so the culprit is the latest step past it. ``culprit_at`` < n - 1."""
    late = range(max(culprit_at + 1, n - max(4, n // 4)), n)
    misses = rng.sample(late, min(len(late), rng.randint(1, 4)))
    rules: dict[int, Rule] = {culprit_at: Break(rng.uniform(0.05, 0.5))}
    rules.update({i: Miss(rng.uniform(0.02, 0.05)) for i in misses})
    quiet = range(culprit_at + 1, n)
    return Planted(_with_noise("rescue-noise", n, rules, rng, quiet), culprit_at)
