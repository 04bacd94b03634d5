"""Attribution benchmark for agent-replay.

Measures in one run:

* **localisation accuracy against rollout budget**: seeded random instances of five families of
  synthetic structural causal models, each with a planted Point of Commitment, are attributed with
  ``attribute`` at every budget (rollouts per plan).  Each attribution is *correct* (the planted
  step is named), *inconclusive*, or **WRONG** (a step is named that is not the planted one).  The
  estimator promises that a small budget ends in ``inconclusive``, never in a wrong step, so the
  WRONG rate must be ~0 at every budget;
* **engine overhead**: resampled steps per second of ``Engine.run`` over ``ablate_from(0)`` with
  trivial resample functions on a 20-step trajectory, against a bare Python loop making the same
  resample-function and verifier calls (target >= 0.5x).  For information: ``attribute`` end to
  end (rollouts plus interval estimation), and a "floor loop" that also builds what the rollout
  contract requires per resampled step (a ``random.Random`` seeded from (seed, plan, rollout,
  step) and a ``RolloutContext``);
* **thread scaling**: resample functions that sleep 50 ms, at 1, 16 and 64 workers, as a fraction
  of ideal (target >= 0.9 at 64 workers);
* **the adaptive default against the fixed strategy** (``adaptive_bench.py``, issues 10 and 42):
  wrong, inconclusive and right answers and resample-function calls on models of 8-64 steps (the
  goals: see that module).

The machines this runs on are noisy, so the verdicts are ratios against baselines measured in the
same run rather than absolute speeds.

The synthetic models
--------------------
Every model is a Markov chain over a small hashable state.  A resamplable step has a transition
(state -> distribution over next states); its resample function reads the state from the
counterfactual ``ctx.history`` and draws the next state with ``ctx.rng``.  Observed-only steps (a
tool with no resample function) carry no state.  The verifier fails a run whose final state is
"bad".  Because the chains are small, ``P(fail | ablate_from(i))`` is computed exactly, and so is the
true attribution of every step; the planted step is checked to be the latest step with a non-zero
true attribution (the Point of Commitment by definition), and the true effect of every planted step
is at least 0.25, well clear of the default equivalence margin (0.1).

* ``chain``: every step may turn a good run bad (rarely); one decisive step is likely to.  The run
  went bad at the decisive step and bad is absorbing.
* ``butterfly``: an early step put the run in a fragile state (true effect ~0.5-0.7); a later step
  then failed it (true effect 0.25-0.4).  The later, smaller effect is the Point of Commitment.
* ``late-pivot``: several drift steps each raise the risk a little (small positive effects); the
  pivot, one of the last steps, fails the run.
* ``and``: two steps must both go wrong; the later one is the Point of Commitment.
* ``or``: either step going wrong fails the run; the later one is overdetermined (true effect
  exactly 0), so the earlier one is the Point of Commitment.

Fillers (resamplable steps that pass the state through, and observed-only steps) are scattered
between the key steps; instances have 3-21 steps.

Usage::

    python benchmarks/attribution_bench.py [--quick] [--json] [--seed S] [--instances K]
                                           [--jobs N] [--profile] [--no-adaptive]

``--jobs`` (default: all CPUs) only parallelises the accuracy part, which ends before the timed
parts start; ``--profile`` adds a cProfile of ``Engine.run`` on the trivial workload.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import adaptive_bench
from synthetic import (
    Builder,
    Model,
    State,
    StepSpec,
    flip,
    p_fail_ablated,
    registry_of,
    trajectory_of,
    true_attributions,
)

import otel_replay
from otel_replay.attribution import AttributionConfig, Strategy, Verdict, attribute
from otel_replay.attribution._engine import Engine
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.replay import Plan
from otel_replay.resamplers import Registry, RolloutContext
from otel_replay.resamplers._context import step_seed

# Targets from the project's performance goals.
OVERHEAD_RATIO_TARGET = 0.5
SCALING_TARGET = 0.9  # fraction of ideal at the largest worker count
WRONG_RATE_TARGET = 0.02  # worst budget, pooled over families: "~0"

BUDGETS = (5, 10, 20, 50, 100, 200)
FAMILIES = ("chain", "butterfly", "late-pivot", "and", "or")
INSTANCES = 30  # per family
QUICK_INSTANCES = 3
MIN_PLANTED_EFFECT = 0.25

OVERHEAD_STEPS = 20
CHAT_ROLLOUTS = 300  # per plan (3 plans), per driver and round
QUICK_CHAT_ROLLOUTS = 60
CHAT_LOOP_TARGET = 1.5  # the chat loop may cost at most 1.5x the walk's CPU per rollout
OVERHEAD_ROLLOUTS = 2000  # Engine.run: 2000 rollouts x 20 resampled steps
QUICK_OVERHEAD_ROLLOUTS = 500
ATTRIBUTE_ROLLOUTS = 100  # attribute end to end: (20 + 1) plans x 100 rollouts
QUICK_ATTRIBUTE_ROLLOUTS = 30
TIMING_REPEATS = 3

SLEEP_S = 0.05
WORKER_COUNTS = (1, 16, 64)
SCALING_WAVES = 8  # rollouts per worker: every worker count has the same ideal wall time
QUICK_SCALING_WAVES = 4
SCALING_SLEEPS_PER_ROLLOUT = 2  # resampled (sleeping) steps per rollout
QUICK_SCALING_SLEEPS_PER_ROLLOUT = 1
SCALING_REPEATS = 2  # best of 2 per worker count

# --------------------------------------------------------------------------------------------
# Synthetic models with a planted Point of Commitment
# --------------------------------------------------------------------------------------------


def make_chain(rng: random.Random) -> Model:
    # state = (bad,); every step may spoil a good run (risk e), the decisive one likely (q)
    b = Builder(rng, (0,))
    n = rng.randint(6, 14)
    decisive = rng.randrange(n)
    planted = -1
    for i in range(n):
        if i == decisive:
            planted = b.key("decide", flip(0, rng.uniform(0.05, 0.5)), (1,))
        elif rng.random() < 0.2:
            b.steps.append(StepSpec(StepKind.TOOL, "audit_log", None, None))
        else:
            kind, name = rng.choice([(StepKind.LLM, "think"), (StepKind.TOOL, "search")])
            b.steps.append(StepSpec(kind, name, flip(0, rng.uniform(0.0, 0.03)), b.state))
    return b.model("chain", lambda s: s[0] == 1, planted)


def make_butterfly(rng: random.Random) -> Model:
    # state = (fragile, bad): an early step made the run fragile, a later one failed it
    b = Builder(rng, (0, 0))
    b.fillers(0, 1)
    g, f, r = rng.uniform(0.0, 0.15), rng.uniform(0.6, 0.75), rng.uniform(0.0, 0.05)
    b.key("frame", flip(0, g), (1, 0))
    b.fillers(2, 6)

    def commit(state: State) -> list[tuple[float, State]]:
        if state[1]:
            return [(1.0, state)]
        p = f if state[0] else r
        return [(p, (state[0], 1)), (1.0 - p, state)]

    planted = b.key("commit", commit, (1, 1))
    b.fillers(0, 3)
    return b.model("butterfly", lambda s: s[1] == 1, planted)


def make_late_pivot(rng: random.Random) -> Model:
    # state = (drift, bad): drift steps raise the pivot's risk; the pivot fails the run
    b = Builder(rng, (0, 0))
    h = rng.uniform(0.2, 0.5)
    drifts = rng.randint(3, 6)

    def drift(state: State) -> list[tuple[float, State]]:
        if state[1]:
            return [(1.0, state)]
        return [(h, (state[0] + 1, 0)), (1.0 - h, state)]

    for k in range(1, drifts + 1):
        b.fillers(0, 2)
        b.key("drift", drift, (k, 0))
    base, slope = rng.uniform(0.05, 0.15), rng.uniform(0.05, 0.12)

    def pivot(state: State) -> list[tuple[float, State]]:
        if state[1]:
            return [(1.0, state)]
        p = min(0.7, base + slope * state[0])
        return [(p, (state[0], 1)), (1.0 - p, state)]

    b.fillers(0, 1)
    planted = b.key("pivot", pivot, (drifts, 1))
    b.fillers(0, 1)
    return b.model("late-pivot", lambda s: s[1] == 1, planted)


def make_and_or(rng: random.Random, family: str) -> Model:
    # state = (a, b); AND fails when both went wrong, OR when either did
    both = family == "and"
    b = Builder(rng, (0, 0))
    low, high = (0.1, 0.6) if both else (0.05, 0.4)
    b.fillers(0, 3)
    first = b.key("branch_a", flip(0, rng.uniform(low, high)), (1, 0))
    b.fillers(1, 4)
    second = b.key("branch_b", flip(1, rng.uniform(low, high)), (1, 1))
    b.fillers(0, 3)
    if both:
        return b.model(family, lambda s: s[0] == 1 and s[1] == 1, second)
    return b.model(family, lambda s: s[0] == 1 or s[1] == 1, first)


def make_model(family: str, rng: random.Random) -> Model:
    if family == "chain":
        return make_chain(rng)
    if family == "butterfly":
        return make_butterfly(rng)
    if family == "late-pivot":
        return make_late_pivot(rng)
    return make_and_or(rng, family)


def check_model(model: Model) -> float:
    """Check the planted step is the true Point of Commitment; return its true effect."""
    effects = true_attributions(model)
    poc = max(i for i, a in effects.items() if a > 1e-9)
    problems = [
        (p_fail_ablated(model, len(model.steps)) != 1.0, "the factual run does not fail"),
        (poc != model.planted, f"planted step {model.planted}, true PoC {poc}"),
        (effects[poc] < MIN_PLANTED_EFFECT, f"planted effect {effects[poc]:.3f} is too small"),
        (
            model.family == "butterfly" and max(effects.values()) <= effects[poc],
            "the early step must have the larger effect",
        ),
    ]
    for failed, message in problems:
        if failed:
            raise RuntimeError(f"bad synthetic {model.family} model: {message}")
    return effects[poc]


# --------------------------------------------------------------------------------------------
# Localisation accuracy
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Attempt:
    family: str
    instance: int
    budget: int
    verdict: str  # "correct" | "inconclusive" | "wrong"
    named: int | None
    planted: int
    effect: float  # true attribution of the planted step
    steps: int
    rollouts: int


def run_instance(task: tuple[str, int, int, tuple[int, ...]]) -> list[Attempt]:
    family, instance, seed, budgets = task
    rng = random.Random(f"attribution-bench:{seed}:{family}:{instance}")
    model = make_model(family, rng)
    effect = check_model(model)
    trajectory = trajectory_of(model, f"{family}-{instance}")
    registry = registry_of(model)
    attempts = []
    for budget in budgets:
        config = AttributionConfig(
            strategy=Strategy.FIXED, rollouts=budget, seed=rng.getrandbits(32)
        )
        result = attribute(trajectory, registry, config)
        named = result.point_of_commitment if result.verdict is Verdict.CULPRIT else None
        if named is None:
            verdict = "inconclusive"
        else:
            verdict = "correct" if named == model.planted else "wrong"
        attempts.append(
            Attempt(
                family=family,
                instance=instance,
                budget=budget,
                verdict=verdict,
                named=named,
                planted=model.planted,
                effect=round(effect, 4),
                steps=len(model.steps),
                rollouts=result.rollouts,
            )
        )
    return attempts


def measure_accuracy(
    seed: int, instances: int, budgets: tuple[int, ...], jobs: int
) -> tuple[list[Attempt], float]:
    tasks = [(f, i, seed, budgets) for f in FAMILIES for i in range(instances)]
    start = time.perf_counter()
    if jobs == 1:
        batches = [run_instance(t) for t in tasks]
    else:
        with ProcessPoolExecutor(jobs) as pool:
            batches = list(pool.map(run_instance, tasks))
    return [a for batch in batches for a in batch], time.perf_counter() - start


def wilson_upper(k: int, n: int, z: float = 1.959963984540054) -> float:
    if n == 0:
        return 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return min(1.0, centre + half)


def accuracy_table(attempts: list[Attempt], budgets: tuple[int, ...]) -> list[dict[str, Any]]:
    """One row per (family, budget), plus ``all`` rows pooled over families."""
    rows = []
    for family in (*FAMILIES, "all"):
        for budget in budgets:
            chosen = [a for a in attempts if a.budget == budget and family in ("all", a.family)]
            n = len(chosen)
            counts = {
                v: sum(a.verdict == v for a in chosen) for v in ("correct", "inconclusive", "wrong")
            }
            rows.append(
                {
                    "family": family,
                    "budget": budget,
                    "n": n,
                    **counts,
                    "correct_pct": round(100 * counts["correct"] / n, 1),
                    "inconclusive_pct": round(100 * counts["inconclusive"] / n, 1),
                    "wrong_pct": round(100 * counts["wrong"] / n, 1),
                    "mean_rollouts": round(sum(a.rollouts for a in chosen) / n, 1),
                }
            )
    return rows


# --------------------------------------------------------------------------------------------
# Engine overhead
# --------------------------------------------------------------------------------------------


def constant(step: Step, ctx: RolloutContext) -> str:
    return "ok"


def uniform(step: Step, ctx: RolloutContext) -> float:
    return ctx.rng.random()


def always_fails(trajectory: Trajectory) -> float:
    return 0.0


def flat_trajectory(n_steps: int) -> Trajectory:
    steps = [
        Step(StepKind.LLM, "turn", {"turn": i, "prompt": f"prompt {i}"}, {"text": f"reply {i}"})
        for i in range(n_steps)
    ]
    return Trajectory.build("bench", steps)


def flat_registry(function: Callable[[Step, RolloutContext], Any]) -> Registry:
    registry = Registry()
    registry.add_resampler("llm", function)
    registry.set_verifier(always_fails)
    return registry


def best_time(fn: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        timings.append(time.perf_counter() - start)
    return min(timings)


def bare_loop(
    trajectory: Trajectory,
    function: Callable[[Step, RolloutContext], Any],
    calls: int,
    verifications: int,
) -> None:
    """The baseline: the same resample-function and verifier calls, nothing else."""
    plan = Plan.ablate_from(len(trajectory.steps), 0)
    ctx = RolloutContext(0, (), trajectory, plan)
    steps = trajectory.steps
    verifier = always_fails
    for _ in range(calls // len(steps)):
        for step in steps:
            function(step, ctx)
    for step in steps[: calls % len(steps)]:
        function(step, ctx)
    for _ in range(verifications):
        verifier(trajectory)


def floor_loop(
    trajectory: Trajectory, function: Callable[[Step, RolloutContext], Any], rollouts: int
) -> None:
    """For information: the bare loop plus what the rollout contract requires of every resampled
    step: a context whose ``random.Random`` is seeded from ``(seed, plan, rollout, step)`` (built
    when the resample function first reads ``ctx.rng``)."""
    plan = Plan.ablate_from(len(trajectory.steps), 0)
    steps = trajectory.steps
    verifier = always_fails
    for r in range(rollouts):
        for step in steps:
            function(
                step,
                RolloutContext(step_seed(0, plan.identity, r, step.index), (), trajectory, plan),
            )
        verifier(trajectory)


def engine_run(trajectory: Trajectory, registry: Registry, rollouts: int) -> int:
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=rollouts)
    engine = Engine(trajectory, registry, always_fails, config)
    engine.run([(Plan.ablate_from(len(trajectory.steps), 0), rollouts)])
    return engine.step_executions


@dataclass(frozen=True, slots=True)
class Overhead:
    resampler: str
    measured: str  # "Engine.run" or "attribute"
    step_executions: int
    seconds: float
    baseline_seconds: float  # bare loop, same number of calls

    @property
    def steps_per_s(self) -> float:
        return self.step_executions / self.seconds

    @property
    def baseline_steps_per_s(self) -> float:
        return self.step_executions / self.baseline_seconds

    @property
    def ratio(self) -> float:
        return self.baseline_seconds / self.seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "seconds": round(self.seconds, 4),
            "baseline_seconds": round(self.baseline_seconds, 4),
            "steps_per_s": round(self.steps_per_s),
            "baseline_steps_per_s": round(self.baseline_steps_per_s),
            "ratio": round(self.ratio, 4),
        }


def measure_resampler(
    label: str, function: Callable[[Step, RolloutContext], Any], rollouts: int, per_plan: int
) -> list[Overhead]:
    trajectory = flat_trajectory(OVERHEAD_STEPS)
    registry = flat_registry(function)
    results = []
    executions = engine_run(trajectory, registry, rollouts)  # also a warm-up
    assert executions == rollouts * OVERHEAD_STEPS
    seconds = best_time(lambda: engine_run(trajectory, registry, rollouts), TIMING_REPEATS)
    base = best_time(lambda: bare_loop(trajectory, function, executions, rollouts), TIMING_REPEATS)
    results.append(Overhead(label, "Engine.run", executions, seconds, base))
    floor = best_time(lambda: floor_loop(trajectory, function, rollouts), TIMING_REPEATS)
    results.append(Overhead(label, "floor loop", executions, floor, base))
    # attribute end to end: every ablate_from plan, then Wilson and bootstrap intervals
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=per_plan, seed=0)
    result = attribute(trajectory, registry, config)
    seconds = best_time(lambda: attribute(trajectory, registry, config), TIMING_REPEATS)
    calls, verifications = result.step_executions, result.rollouts + 1  # + the factual score
    base = best_time(lambda: bare_loop(trajectory, function, calls, verifications), TIMING_REPEATS)
    results.append(Overhead(label, "attribute", calls, seconds, base))
    return results


def measure_overhead(rollouts: int, per_plan: int) -> list[Overhead]:
    return [
        *measure_resampler("constant", constant, rollouts, per_plan),
        *measure_resampler("rng.random()", uniform, rollouts, per_plan),
    ]


def profile_engine(rollouts: int, top: int = 18) -> str:
    """cProfile of Engine.run on the trivial workload: the top functions by own time."""
    trajectory = flat_trajectory(OVERHEAD_STEPS)
    registry = flat_registry(uniform)
    profiler = cProfile.Profile()
    profiler.enable()
    engine_run(trajectory, registry, rollouts)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    # drop pstats' preamble up to the column header
    return text[text.find("   ncalls") :].rstrip()


# --------------------------------------------------------------------------------------------
# Thread scaling
# --------------------------------------------------------------------------------------------


def sleeper(step: Step, ctx: RolloutContext) -> str:
    time.sleep(SLEEP_S)
    return "slept"


@dataclass(frozen=True, slots=True)
class Scaling:
    workers: int
    rollouts: int
    sleeps: int  # resample calls, each sleeping SLEEP_S
    seconds: float

    @property
    def total_sleep(self) -> float:
        return self.sleeps * SLEEP_S

    @property
    def ideal_seconds(self) -> float:
        """Perfect overlap and zero overhead: the total sleep shared evenly among the workers."""
        return self.total_sleep / self.workers

    @property
    def fraction(self) -> float:
        return self.ideal_seconds / self.seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "seconds": round(self.seconds, 4),
            "total_sleep": round(self.total_sleep, 3),
            "ideal_seconds": round(self.ideal_seconds, 4),
            "rollouts_per_s": round(self.rollouts / self.seconds, 2),
            "ideal_rollouts_per_s": round(self.rollouts / self.ideal_seconds, 2),
            "fraction": round(self.fraction, 4),
        }


def measure_scaling(waves: int, sleeps_per_rollout: int) -> list[Scaling]:
    """``workers * waves`` rollouts of a 20-step run whose last steps sleep: same ideal time for all."""
    trajectory = flat_trajectory(OVERHEAD_STEPS)
    registry = flat_registry(sleeper)
    plan = Plan.ablate_from(OVERHEAD_STEPS, OVERHEAD_STEPS - sleeps_per_rollout)
    results = []
    for workers in WORKER_COUNTS:
        rollouts = workers * waves
        config = AttributionConfig(workers=workers)
        seconds = float("inf")
        for _ in range(SCALING_REPEATS):
            engine = Engine(trajectory, registry, always_fails, config)
            start = time.perf_counter()
            engine.run([(plan, rollouts)])
            seconds = min(seconds, time.perf_counter() - start)
        assert engine.step_executions == rollouts * sleeps_per_rollout
        results.append(Scaling(workers, rollouts, engine.step_executions, seconds))
    return results


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "agent_replay": otel_replay.__version__,
    }


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def check(name: str, value: float, target: float, higher_is_better: bool) -> dict[str, Any]:
    ok = value >= target if higher_is_better else value <= target
    op = ">=" if higher_is_better else "<="
    return {"check": name, "value": round(value, 4), "target": f"{op} {target:g}", "pass": ok}


@dataclass(frozen=True)
class ChatLoop:
    """CPU per rollout of the chat-loop driver against the trace-driven walk, same plans."""

    rollouts: int
    walk_us: float  # per rollout
    chat_us: float
    walk_calls: float  # resample-function calls per rollout
    chat_calls: float
    run: str = "incident sample"

    @property
    def ratio(self) -> float:
        return self.chat_us / self.walk_us


#: A tool-calling run that is not the incident example: LangGraph's order-support chat of the
#: framework corpus (four model turns, three tools), with `corpus_registry`'s resample functions.
CORPUS_CHAT = ("tests/fixtures/frameworks/langgraph.otlp.jsonl", "2579")


def measure_chat_loop(rollouts: int) -> ChatLoop:
    """The incident sample's failing run, its example resample functions, three ablation plans."""
    from otel_replay import read_path
    from otel_replay.resamplers import load_registry

    root = Path(__file__).resolve().parent.parent
    samples = root / "sample_traces" / "incident.otlp.jsonl"
    (run,) = [r for r in read_path(samples) if r.id.startswith("ef28")]
    registry = load_registry([str(root / "examples" / "incident" / "tools.py")])
    return chat_against_walk(run, registry, rollouts, "incident sample")


def measure_chat_loop_corpus(rollouts: int) -> ChatLoop:
    """The same on `CORPUS_CHAT`, a run of another framework's instrumentation."""
    from otel_replay import read_path

    path, prefix = CORPUS_CHAT
    root = Path(__file__).resolve().parent.parent
    (run,) = [r for r in read_path(root / path) if r.id.startswith(prefix)]
    return chat_against_walk(run, corpus_registry(), rollouts, f"{Path(path).name} {run.id[:8]}")


def corpus_registry() -> Registry:
    """Resample functions for the corpus's order-support chats: a tool answers as recorded, or
    one call in five times out; the model reads the conversation it is sent, apologises after a
    tool's error, and otherwise answers as recorded (a call the record does not hold: gives up)."""
    from otel_replay import conversation

    registry = Registry()

    def model(step: Step, ctx: RolloutContext) -> Any:
        said = conversation(step.inputs)
        if said and said[-1].get("role") == "tool" and '"error"' in str(said[-1].get("content")):
            return {"role": "assistant", "content": "The order service is down; try again later."}
        if ctx.recorded is None:
            return {"role": "assistant", "content": "I could not find an answer."}
        return ctx.recorded.output

    def tool(step: Step, ctx: RolloutContext) -> Any:
        if ctx.recorded is None or ctx.rng.random() < 0.2:
            return {"error": "the service timed out"}
        return ctx.recorded.output

    def answers_refund(trajectory: Trajectory) -> float:
        return 1.0 if "refund" in (trajectory.final_answer or "") else 0.0

    registry.add_resampler("llm", model)
    registry.add_resampler("tool", tool)
    registry.set_verifier(answers_refund)
    return registry


def chat_against_walk(run: Trajectory, registry: Registry, rollouts: int, label: str) -> ChatLoop:
    """Both drivers on ``run``, ``ablate_from`` 0, 3 and 5, ``rollouts`` each; best of three
    rounds, the two drivers alternating (this machine is noisy)."""
    from otel_replay.replay._chat import chat_driver

    found = chat_driver(run, registry, 0)
    assert found is not None and registry.verifier is not None
    drive, marked = found
    config = AttributionConfig(strategy=Strategy.FIXED, rollouts=1)
    best: dict[str, tuple[float, float]] = {}
    for _ in range(3):
        for name, driver, trajectory in (("walk", None, run), ("chat", drive, marked)):
            engine = Engine(trajectory, registry, registry.verifier, config, None, driver)
            plans = [(Plan.ablate_from(len(run.steps), i), rollouts) for i in (0, 3, 5)]
            started = time.perf_counter()
            engine.run(plans)
            per_rollout = (time.perf_counter() - started) / engine.rollouts * 1e6
            calls = engine.step_executions / engine.rollouts
            if name not in best or per_rollout < best[name][0]:
                best[name] = (per_rollout, calls)
    return ChatLoop(
        3 * rollouts, best["walk"][0], best["chat"][0], best["walk"][1], best["chat"][1], label
    )


@dataclass(slots=True)
class Report:
    seed: int
    quick: bool
    instances: int
    budgets: tuple[int, ...]
    attempts: list[Attempt]
    accuracy_seconds: float
    overhead: list[Overhead]
    scaling: list[Scaling]
    chat_loop: ChatLoop | None = None
    profile: str | None = None
    chat_loop_corpus: ChatLoop | None = None

    def wrong_by_budget(self) -> dict[int, tuple[int, int]]:
        out = {}
        for budget in self.budgets:
            chosen = [a for a in self.attempts if a.budget == budget]
            out[budget] = (sum(a.verdict == "wrong" for a in chosen), len(chosen))
        return out

    def checks(self) -> list[dict[str, Any]]:
        worst = max(k / n for k, n in self.wrong_by_budget().values())
        out = [check("WRONG rate, worst budget", worst, WRONG_RATE_TARGET, higher_is_better=False)]
        for o in self.overhead:
            if o.measured == "Engine.run":
                name = f"engine/bare loop, {o.resampler}"
                out.append(check(name, o.ratio, OVERHEAD_RATIO_TARGET, higher_is_better=True))
        top = max(self.scaling, key=lambda s: s.workers)
        name = f"scaling at {top.workers} workers"
        out.append(check(name, top.fraction, SCALING_TARGET, higher_is_better=True))
        if self.chat_loop is not None:
            ratio = self.chat_loop.ratio
            out.append(check("chat loop/walk per rollout", ratio, CHAT_LOOP_TARGET, False))
        if self.chat_loop_corpus is not None:
            ratio = self.chat_loop_corpus.ratio
            out.append(check("chat loop/walk, corpus run", ratio, CHAT_LOOP_TARGET, False))
        return out


def print_accuracy(report: Report) -> None:
    rows = accuracy_table(report.attempts, report.budgets)
    effects: dict[str, list[float]] = defaultdict(list)
    sizes: dict[str, list[int]] = defaultdict(list)
    for a in report.attempts:
        if a.budget == report.budgets[0]:
            effects[a.family].append(a.effect)
            sizes[a.family].append(a.steps)
    print(
        f"1. localisation accuracy: {report.instances} instances per family, seed {report.seed}, "
        f"budget = rollouts per plan ({report.accuracy_seconds:.1f}s)"
    )
    print(f"{'family':<12} {'steps':>6} {'planted effect':>15}")
    for family in FAMILIES:
        e, s = effects[family], sizes[family]
        print(f"{family:<12} {f'{min(s)}-{max(s)}':>6} {f'{min(e):.2f}-{max(e):.2f}':>15}")
    header = "".join(f"{b:>7}" for b in report.budgets)
    for label, key in (
        ("% culprit correct", "correct_pct"),
        ("% inconclusive", "inconclusive_pct"),
        ("% WRONG (named step is not the planted one)", "wrong_pct"),
    ):
        print()
        print(label)
        print(f"{'  budget':<12}{header}")
        for family in (*FAMILIES, "all"):
            cells = "".join(f"{r[key]:>7.1f}" for r in rows if r["family"] == family)
            print(f"  {family:<10}{cells}")
    means = "".join(f"{r['mean_rollouts']:>7.0f}" for r in rows if r["family"] == "all")
    print(f"\n{'  rollouts':<12}{means}   (mean per attribution, all plans)")
    wrong = [a for a in report.attempts if a.verdict == "wrong"]
    total = len(report.attempts)
    upper = wilson_upper(len(wrong), total)
    per_budget = "  ".join(f"{b}: {k}/{n}" for b, (k, n) in report.wrong_by_budget().items())
    print()
    print("=" * 78)
    print(
        f"WRONG culprits: {len(wrong)} of {total} attributions "
        f"({100 * len(wrong) / total:.1f}%, 95% upper bound {100 * upper:.1f}%)"
    )
    print(f"  by budget  {per_budget}")
    for a in wrong:
        print(
            f"  WRONG {a.family} #{a.instance} budget {a.budget}: named step {a.named}, "
            f"planted {a.planted} (effect {a.effect:.2f})"
        )
    print("=" * 78)


def engine_vs_floor(overhead: list[Overhead]) -> dict[str, float]:
    """Engine.run throughput as a fraction of the floor loop's, per resampler (information)."""
    seconds = {(o.resampler, o.measured): o.seconds for o in overhead}
    return {
        label: seconds[(label, "floor loop")] / seconds[(label, "Engine.run")]
        for label, measured in seconds
        if measured == "Engine.run"
    }


def print_overhead(report: Report) -> None:
    print()
    print(
        f"2. engine overhead: {OVERHEAD_STEPS}-step trajectory, trivial resamplers, "
        f"best of {TIMING_REPEATS}; baseline = bare loop making the same calls"
    )
    print(
        f"{'resampler':<14} {'measured':<11} {'steps':>8} {'seconds':>9} {'steps/s':>10} "
        f"{'bare steps/s':>13} {'ratio':>8}"
    )
    for o in report.overhead:
        print(
            f"{o.resampler:<14} {o.measured:<11} {o.step_executions:>8} {o.seconds:>9.3f} "
            f"{o.steps_per_s:>10.0f} {o.baseline_steps_per_s:>13.0f} {o.ratio:>8.4f}"
        )
    print(
        "(the target applies to Engine.run; attribute adds the interval estimation; the floor loop\n"
        " is the bare loop plus a seeded random.Random and a RolloutContext per resampled step)"
    )
    for label, ratio in engine_vs_floor(report.overhead).items():
        print(f"Engine.run / floor loop, {label}: {ratio:.3f}")


def print_scaling(report: Report) -> None:
    print()
    print(
        f"3. thread scaling: resamplers sleep {SLEEP_S * 1000:.0f} ms; ideal wall time = "
        f"total sleep / workers; best of {SCALING_REPEATS}"
    )
    print(
        f"{'workers':>7} {'rollouts':>9} {'sleeps':>7} {'sleep s':>8} {'ideal s':>8} "
        f"{'wall s':>8} {'rollouts/s':>11} {'ideal/s':>9} {'fraction':>9}"
    )
    for s in report.scaling:
        print(
            f"{s.workers:>7} {s.rollouts:>9} {s.sleeps:>7} {s.total_sleep:>8.2f} "
            f"{s.ideal_seconds:>8.3f} {s.seconds:>8.3f} {s.rollouts / s.seconds:>11.1f} "
            f"{s.rollouts / s.ideal_seconds:>9.1f} {s.fraction:>9.3f}"
        )


def print_report(report: Report, env: dict[str, Any]) -> None:
    print(f"python {env['python']}  cpus {env['cpu_count']}  {env['platform']}")
    print(f"agent-replay {env['agent_replay']}{'  (--quick)' if report.quick else ''}")
    print()
    print_accuracy(report)
    print_overhead(report)
    print_scaling(report)
    print_chat_loops(report)
    print()
    for c in report.checks():
        print(f"{c['check']:<34} {c['value']:>8.4f}  target {c['target']:<8} {verdict(c['pass'])}")
    if report.profile is not None:
        print()
        print("profile of Engine.run (rng.random() resampler), top functions by own time:")
        print(report.profile)


def print_chat_loops(report: Report) -> None:
    for c in (report.chat_loop, report.chat_loop_corpus):
        if c is None:
            continue
        print()
        print(
            f"4. chat loop vs walk ({c.rollouts} rollouts each, {c.run}): "
            f"{c.chat_us:.0f} vs {c.walk_us:.0f} us per rollout ({c.ratio:.2f}x); resample calls "
            f"per rollout {c.chat_calls:.2f} vs {c.walk_calls:.2f}"
        )


def report_json(report: Report, env: dict[str, Any]) -> str:
    wrong_total = sum(a.verdict == "wrong" for a in report.attempts)
    payload = {
        **env,
        "seed": report.seed,
        "quick": report.quick,
        "accuracy": {
            "instances_per_family": report.instances,
            "budgets": list(report.budgets),
            "seconds": round(report.accuracy_seconds, 2),
            "wrong": wrong_total,
            "attributions": len(report.attempts),
            "rows": accuracy_table(report.attempts, report.budgets),
            "wrong_attempts": [asdict(a) for a in report.attempts if a.verdict == "wrong"],
        },
        "overhead": [o.as_dict() for o in report.overhead],
        "engine_vs_floor": {k: round(v, 4) for k, v in engine_vs_floor(report.overhead).items()},
        "scaling": [s.as_dict() for s in report.scaling],
        "chat_loop": None if report.chat_loop is None else asdict(report.chat_loop),
        "chat_loop_corpus": (
            None if report.chat_loop_corpus is None else asdict(report.chat_loop_corpus)
        ),
        "checks": report.checks(),
    }
    if report.profile is not None:
        payload["profile"] = report.profile
    return json.dumps(payload, indent=None)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer instances and rollouts (~10 s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic instances")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes for the accuracy part"
    )
    p.add_argument(
        "--instances",
        type=int,
        help=f"instances per family (default {INSTANCES}, quick {QUICK_INSTANCES})",
    )
    p.add_argument("--profile", action="store_true", help="cProfile Engine.run and print the top")
    p.add_argument(
        "--chat-loop-only",
        action="store_true",
        help="measure only the chat loop against the walk (the incident sample and a corpus run)",
    )
    p.add_argument(
        "--no-adaptive",
        action="store_true",
        help="leave out the adaptive default against the fixed strategy (adaptive_bench.py)",
    )
    return p.parse_args(argv)


def chat_loop_only(rollouts: int, as_json: bool) -> int:
    """Part 4 alone: the chat loop against the walk, on the incident sample then the corpus run."""
    loops = [measure_chat_loop(rollouts), measure_chat_loop_corpus(rollouts)]
    if as_json:
        print(json.dumps([{**asdict(c), "ratio": round(c.ratio, 3)} for c in loops]))
        return 0
    for c in loops:
        met = "met" if c.ratio <= CHAT_LOOP_TARGET else "missed"
        print(
            f"chat loop vs walk ({c.rollouts} rollouts each, {c.run}): {c.chat_us:.0f} vs "
            f"{c.walk_us:.0f} us per rollout ({c.ratio:.2f}x, {met}: target <= "
            f"{CHAT_LOOP_TARGET:g}x); resample calls per rollout {c.chat_calls:.2f} vs "
            f"{c.walk_calls:.2f}"
        )
    return 0


def progress(msg: str) -> None:
    # Progress on stderr so `--json` leaves stdout machine-readable.
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    quick = args.quick
    if args.chat_loop_only:
        return chat_loop_only(QUICK_CHAT_ROLLOUTS if quick else CHAT_ROLLOUTS, args.json)
    instances = args.instances or (QUICK_INSTANCES if quick else INSTANCES)
    budgets = BUDGETS
    progress(
        f"localisation accuracy: {len(FAMILIES)} families x {instances} instances x "
        f"{len(budgets)} budgets ({args.jobs} processes)"
    )
    attempts, accuracy_seconds = measure_accuracy(args.seed, instances, budgets, max(1, args.jobs))
    progress(f"  {len(attempts)} attributions in {accuracy_seconds:.1f}s")
    progress("engine overhead")
    overhead = measure_overhead(
        QUICK_OVERHEAD_ROLLOUTS if quick else OVERHEAD_ROLLOUTS,
        QUICK_ATTRIBUTE_ROLLOUTS if quick else ATTRIBUTE_ROLLOUTS,
    )
    progress(f"thread scaling: workers {', '.join(map(str, WORKER_COUNTS))}")
    scaling = measure_scaling(
        QUICK_SCALING_WAVES if quick else SCALING_WAVES,
        QUICK_SCALING_SLEEPS_PER_ROLLOUT if quick else SCALING_SLEEPS_PER_ROLLOUT,
    )
    progress("chat loop against the walk")
    chat_loop = measure_chat_loop(QUICK_CHAT_ROLLOUTS if quick else CHAT_ROLLOUTS)
    chat_loop_corpus = measure_chat_loop_corpus(QUICK_CHAT_ROLLOUTS if quick else CHAT_ROLLOUTS)
    report = Report(
        args.seed,
        quick,
        instances,
        budgets,
        attempts,
        accuracy_seconds,
        overhead,
        scaling,
        chat_loop,
        chat_loop_corpus=chat_loop_corpus,
    )
    if args.profile:
        progress("profiling Engine.run")
        report.profile = profile_engine(QUICK_OVERHEAD_ROLLOUTS if quick else OVERHEAD_ROLLOUTS)
    env = environment()
    if args.json:
        print(report_json(report, env))
    else:
        print_report(report, env)
    if not args.json and not args.no_adaptive:
        # the adaptive default against the fixed strategy (``adaptive_bench.py``)
        sizes = [8, 16, 32] if quick else [8, 16, 32, 64]
        progress(f"adaptive against the fixed strategy: steps {', '.join(map(str, sizes))}")
        print(
            "\n5. adaptive default against the fixed strategy at 100 rollouts"
            " (benchmarks/adaptive_bench.py)"
        )
        adaptive_bench.print_table(
            adaptive_bench.measure(2 if quick else 6, sizes, max(1, args.jobs)), sizes
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
