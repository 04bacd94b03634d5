"""Adaptive attribution against the fixed sweep: right, inconclusive and wrong answers, and the
resample-function calls each spends (the cost users pay), in one run.

Planted-culprit models of 8, 16, 32 and 64 steps, built with the synthetic-model machinery of
``attribution_bench.py`` (exact true attributions, so every answer is judged against theory):

* ``single``: one decisive step (true effect 0.5-0.95) among noisy steps that spoil a run 0-3 % of
  the time;
* ``small``: the same with a small decisive effect (0.15-0.25);
* ``two``: two culprits that fail the run together (AND), the later one the Point of Commitment;
* ``history``: drift steps throughout whose count raises the risk of a pivot step: the pivot's
  resample function reads how far the run drifted before it;
* ``gradual``: every step wears the run a little and the run fails when worn past a threshold, so
  no step is decisive alone; the answer theory allows is the latest step whose effect passes the
  margin, if any.

Each instance is attributed with ``--strategy sweep --rollouts 100`` and with the adaptive default
(``--max-rollouts 640``). An answer is wrong in the error bound's sense (a named step with no
effect, or one before a step whose effect exceeds the margin), inconclusive, or right (any other
named step: the planted one, in every family but ``gradual``). The verdicts: the ratio of calls,
adaptive over sweep, per size over the families with a planted culprit (the ``planted`` rows); and
on ``gradual``, that the adaptive default is never wrong more often than the sweep.

Usage::

    python benchmarks/adaptive_bench.py [--instances 6] [--sizes 8,16,32,64] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthetic import (
    Builder,
    Model,
    State,
    StepKind,
    StepSpec,
    flip,
    registry_of,
    trajectory_of,
    true_attributions,
)

from otel_replay.attribution import AttributionConfig, Strategy, attribute

FAMILIES = ("single", "small", "two", "history", "gradual")
SWEEP_ROLLOUTS = 100
MARGIN = 0.1  # the default --margin
#: Targets from issue 10: the adaptive default at <= 0.15x the sweep's calls at 32 steps, 0.10x at 64.
TARGETS = {32: 0.15, 64: 0.10}
#: The families with a planted culprit, whose calls the targets are about (``gradual`` has no culprit
#: to find; its target is to be wrong no more often than the sweep).
PLANTED = "planted"


def _noise(b: Builder, state_bits: int) -> None:
    kind, name = b.rng.choice([(StepKind.LLM, "think"), (StepKind.TOOL, "search")])
    if b.rng.random() < 0.15:
        b.steps.append(StepSpec(StepKind.TOOL, "audit_log", None, None))
    else:
        b.steps.append(
            StepSpec(kind, name, flip(state_bits - 1, b.rng.uniform(0.0, 0.03)), b.state)
        )


def make(family: str, n: int, rng: random.Random) -> Model:
    if family == "two":
        # state (a, b); the run fails when both are set; culprits at ~1/3 and ~2/3 of the run
        b = Builder(rng, (0, 0))
        first, second = rng.randrange(n // 4, n // 2), rng.randrange(n // 2, 3 * n // 4)
        planted = -1
        for i in range(n):
            if i == first:
                b.key("decide_a", flip(0, rng.uniform(0.05, 0.5)), (1, b.state[1]))
            elif i == second:
                planted = b.key("decide_b", flip(1, rng.uniform(0.05, 0.5)), (b.state[0], 1))
            else:
                _noise(b, 1)
        return b.model("two", lambda s: s == (1, 1), planted)
    if family == "history":
        return _history(n, rng)
    if family == "gradual":
        return _gradual(n, rng)
    b = Builder(rng, (0,))
    decisive = rng.randrange(n // 4, 3 * n // 4)
    planted = -1
    for i in range(n):
        if i == decisive:
            p = rng.uniform(0.75, 0.85) if family == "small" else rng.uniform(0.05, 0.5)
            planted = b.key("decide", flip(0, p), (1,))
        else:
            _noise(b, 1)
    return b.model(family, lambda s: s[0] == 1, planted)


def _history(n: int, rng: random.Random) -> Model:
    # state (drift, bad): drift steps before the pivot raise its risk; noise after it
    b = Builder(rng, (0, 0))
    pivot_at = rng.randrange(n // 4, 3 * n // 4)
    h, base, slope = rng.uniform(0.2, 0.5), rng.uniform(0.05, 0.15), rng.uniform(0.02, 0.06)

    def drift(state: State) -> list[tuple[float, State]]:
        return [(h, (state[0] + 1, state[1])), (1.0 - h, state)]

    def pivot(state: State) -> list[tuple[float, State]]:
        if state[1]:
            return [(1.0, state)]
        p = min(0.8, base + slope * state[0])
        return [(p, (state[0], 1)), (1.0 - p, state)]

    planted = -1
    for i in range(n):
        if i == pivot_at:
            planted = b.key("pivot", pivot, (b.state[0], 1))
        elif i < pivot_at and rng.random() < 0.7:
            b.key("drift", drift, (b.state[0] + 1, 0))
        else:
            _noise(b, 2)
    return b.model("history", lambda s: s[1] == 1, planted)


def _gradual(n: int, rng: random.Random) -> Model:
    # state (wear,): every step wears the run a unit with probability p (the record: every time)
    b = Builder(rng, (0,))
    p = rng.uniform(0.4, 0.6)
    threshold = math.ceil(0.62 * n)

    def wear(state: State) -> list[tuple[float, State]]:
        return [(p, (state[0] + 1,)), (1.0 - p, state)]

    for _ in range(n):
        b.key("wear", wear, (b.state[0] + 1,))
    return b.model("gradual", lambda s: s[0] >= threshold, -1)


def judge(named: int | None, effects: dict[int, float]) -> str:
    """Wrong in the error bound's sense, inconclusive, or right."""
    if named is None:
        return "inconclusive"
    later = [abs(a) for i, a in effects.items() if i > named]
    wrong = effects[named] <= 1e-9 or any(a > MARGIN for a in later)
    return "wrong" if wrong else "right"


@dataclass(frozen=True, slots=True)
class Row:
    family: str
    steps: int
    instance: int
    strategy: str
    verdict: str
    calls: int


def run(task: tuple[str, int, int]) -> list[Row]:
    family, n, instance = task
    rng = random.Random(f"adaptive-bench:{family}:{n}:{instance}")
    for _ in range(1000):  # noise may outdo the planted step: draw again until theory agrees
        model = make(family, n, rng)
        effects = true_attributions(model)
        if model.planted < 0 or max(i for i, a in effects.items() if a > 1e-9) == model.planted:
            break
    else:
        raise RuntimeError(f"no {family} model of {n} steps with its planted step the PoC")
    trajectory, registry = trajectory_of(model, f"{family}-{n}-{instance}"), registry_of(model)
    rows = []
    seed = rng.getrandbits(32)
    for strategy in (Strategy.SWEEP, Strategy.ADAPTIVE):
        config = AttributionConfig(rollouts=SWEEP_ROLLOUTS, strategy=strategy, seed=seed)
        result = attribute(trajectory, registry, config)
        verdict = judge(result.point_of_commitment, effects)
        rows.append(Row(family, n, instance, strategy.value, verdict, result.step_executions))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--sizes", default="8,16,32,64")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = measure(args.instances, sizes)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return
    print_table(rows, sizes)


def measure(instances: int, sizes: list[int], jobs: int = 2) -> list[Row]:
    """Every family and size, ``instances`` each, with the sweep and the adaptive default."""
    tasks = [(f, n, i) for n in sizes for f in FAMILIES for i in range(instances)]
    with ProcessPoolExecutor(jobs) as pool:
        return [row for batch in pool.map(run, tasks) for row in batch]


def print_table(rows: list[Row], sizes: list[int]) -> None:
    """Right / inconclusive / wrong and calls per run, per size and family, and the verdicts."""
    print(
        f"{'steps':>5} {'family':>8} {'strategy':>9} {'right':>6} {'inconcl.':>9} "
        f"{'wrong':>6} {'calls/run':>10} {'ratio':>7}"
    )
    for n in sizes:
        for family in (*FAMILIES, PLANTED):
            calls = {}
            for strategy in ("sweep", "adaptive"):
                mine = [
                    r
                    for r in rows
                    if r.steps == n
                    and r.strategy == strategy
                    and (r.family == family or (family == PLANTED and r.family != "gradual"))
                ]
                share = {
                    v: sum(r.verdict == v for r in mine) / len(mine)
                    for v in ("right", "inconclusive", "wrong")
                }
                calls[strategy] = sum(r.calls for r in mine) / len(mine)
                ratio = "" if strategy == "sweep" else f"{calls['adaptive'] / calls['sweep']:.3f}x"
                print(
                    f"{n:>5} {family:>8} {strategy:>9} {share['right']:>6.0%} "
                    f"{share['inconclusive']:>9.0%} {share['wrong']:>6.0%} "
                    f"{calls[strategy]:>10,.0f} {ratio:>7}"
                )
        ratio = calls["adaptive"] / calls["sweep"]  # the planted families' row
        target = TARGETS.get(n)
        if target is not None:
            print(
                f"{n:>5} planted families: adaptive/sweep calls {ratio:.3f}x, target <= {target}: "
                f"{'met' if ratio <= target else 'missed'}"
            )
    wrong = {
        strategy: sum(
            r.verdict == "wrong" for r in rows if r.family == "gradual" and r.strategy == strategy
        )
        for strategy in ("sweep", "adaptive")
    }
    print(
        f"gradual: wrong answers, sweep {wrong['sweep']}, adaptive {wrong['adaptive']}: "
        f"{'met' if wrong['adaptive'] <= wrong['sweep'] else 'missed'} (never worse than the sweep)"
    )


if __name__ == "__main__":
    main()
