"""Adaptive attribution against the fixed strategy: wrong, inconclusive and right answers, and the
resample-function calls each spends (the cost users pay: model calls and tool calls), with the
culprit early, in the middle and late, in one run.

Planted-culprit models of 8 to 256 steps, built with the synthetic-model machinery of
``attribution_bench.py`` (exact true attributions, so every answer is judged against theory):

* ``single``: one decisive step (true effect 0.5-0.95) among noisy steps that spoil a run 0-3 % of
  the time;
* ``small``: the same with a small decisive effect (0.15-0.25);
* ``two``: two culprits that fail the run together (AND), the later one the Point of Commitment;
* ``history``: drift steps before a pivot step, whose count raises the pivot's risk: the pivot's
  resample function reads how far the run drifted before it;
* ``lucky``: a lucky step (1 in 1,000 or 1 in 50) shortly before a crash it had made impossible:
  the crash is the commitment (an effect near 1), the luck's effect is near −1, and the failure
  rate falls as more of the record is kept;
* ``near-margin``: a real culprit, then a missed chance to mend whose effect is exactly the margin
  plus 0.01 (only quiet steps after it): naming the culprit is wrong, the later step is the answer;
* ``gradual``: every step wears the run a little and the run fails when worn past a threshold, so
  no step is decisive alone; the answer theory allows is the latest step whose effect passes the
  margin, if any. It has no planted step, and so no position.

Issue 42's families, drawn by ``tests/attribution/long_runs.py`` (so tests run the same models;
the steps after their first key step are quiet, so the planted effects do not shrink with length):

* ``lucky-behind``: an early culprit that arms the run (effect 0.3-0.7), a lucky record 1-4 steps
  before a crash (1 in 1,000 or 1 in 50: about −0.98 or −1) and the crash, which fires only when
  the run is armed and unlucky (0.99 or 1): the crash is the Point of Commitment, and it is what
  the window places;
* ``settled``: the run went bad at a step that fails it however it is drawn, among steps that only
  spoil: no step matters, and only the verdict ``settled`` is right;
* ``lowered``: a lucky record that lowered the failure rate by 0.38-0.48 some steps before the
  crash it made less likely (the Point of Commitment), attributed with ``--root-cause`` so the steps
  before the crash are tested: right when the crash is named and the lucky step decided
  "lowered", wrong on a wrong name or a wrong decision of the lucky step;
* ``rescue-noise``: a culprit, then one to four late steps that each missed a 2-5 % chance to mend
  the run (each matters a little, none past the margin).

The planted step (the one theory names) sits in a window of the run: ``early`` (the first tenth),
``middle`` (the tenth around the half) or ``late`` (the last tenth); a family that plants a step
before it (``two``, ``lucky``, ``near-margin``, ``lowered``, ``lucky-behind``) starts the early
window later, one that needs a step after it (``rescue-noise``) ends the late window earlier.

Each instance is attributed with the adaptive default (``--max-rollouts 640``) and set against the
fixed strategy (``--strategy fixed --rollouts 100``, "the sweep" of the older issues). The fixed
strategy's calls are those of the dry run (`otel_replay.attribution._cost.planned_cost`), exact in
the trace walk; it runs on ``gradual`` (whose verdict compares the two strategies' wrong answers),
on the first instance of every family and position up to 16 steps (where the run's calls are
checked against the dry run's), and everywhere with ``--run-fixed``. Calls are counted by step
kind as the resample functions run (and checked against the result's own count,
``AttributionResult.spend``): ``llm`` steps' are model calls, the rest tool calls. An answer is
wrong in the error bound's sense (a named step with no effect, or one before a step whose effect
exceeds the margin; or the verdict ``settled``, no resamplable step matters, where one's effect
exceeds it), inconclusive, or right (any other named step: the planted one, in every family but
``gradual`` and ``rescue-noise``, where a late step that matters a little is right too). A run
whose report says it switched to the fixed strategy's plan (``cost.switched_to_fixed``) is
counted in the ``switched`` column.

The goals (issue 42): no family wrong beyond the stated bound (5 % of its runs); no verdict dearer
than the fixed strategy; an early culprit at 8 steps at <= 0.35 x (issue 10's four families with a
planted culprit, the ``planted`` row); ``small`` early at <= 0.15 x at 32 steps and <= 0.10 x at
64; and on ``gradual``, never wrong more often than the fixed strategy.

Usage::

    python benchmarks/adaptive_bench.py [--sizes 8,16,32,64,128,256] [--instances 3]
        [--large-instances 1] [--positions early,middle,late] [--families ...] [--run-fixed]
        [--jobs 1] [--per-family] [--json] [--write-docs]

``--write-docs`` puts the table, dated, with the commit, the machine's load and the goals' verdicts,
in docs/performance.md between its two ``adaptive_bench`` marker comments.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # for tests.attribution.long_runs

from synthetic import (
    Builder,
    Model,
    State,
    StepKind,
    StepSpec,
    Transition,
    flip,
    identity,
    registry_of,
    trajectory_of,
    true_attributions,
)

from otel_replay.attribution import AttributionConfig, AttributionResult, Strategy, attribute
from otel_replay.attribution._cost import planned_cost
from otel_replay.report import build_report
from tests.attribution import long_runs

ROOT = Path(__file__).resolve().parent.parent
#: Issue 42's families, drawn by `long_runs` (each: length, planted step, random source).
LONG_RUN_FAMILIES = {
    "lucky-behind": long_runs.lucky_behind,
    "settled": long_runs.settled,
    "lowered": long_runs.lowered,
    "rescue-noise": long_runs.rescue_noise,
}
FAMILIES = (
    "single", "small", "two", "history", "lucky", "near-margin", *LONG_RUN_FAMILIES, "gradual",
)  # fmt: skip
#: Issue 10's families with a planted culprit: the ones the cost targets are about.
TARGET_FAMILIES = ("single", "small", "two", "history")
POSITIONS = ("early", "middle", "late")
#: Where the planted step sits, as fractions of the run.
WINDOWS = {"early": (0.0, 0.1), "middle": (0.45, 0.55), "late": (0.9, 1.0)}
#: Steps a family needs before its planted step (``room``) and after it (``tail``).
ROOM = {"two": 1, "lucky": 1, "near-margin": 1, "lowered": 1, "lucky-behind": 2}
TAIL = {"rescue-noise": 1}
FIXED_ROLLOUTS = 100
MARGIN = 0.1  # the default --margin
ERROR_BOUND = 0.05  # the stated bound on a wrong answer
#: The verdict that says no resamplable step matters (issue 25's item 4).
SETTLED = "settled"
#: The row of issue 10's planted families.
PLANTED = "planted"
#: Sizes from which ``--large-instances`` instances are run instead of ``--instances``.
LARGE = 128
#: Sizes up to which the first instance of every family and position also runs the fixed
#: strategy, to check its calls against the dry run's.
CHECK_FIXED_UP_TO = 16
#: The marker comments around the table in docs/performance.md (``--write-docs``).
DOCS = ROOT / "docs" / "performance.md"
BEGIN = "<!-- BEGIN adaptive_bench table (python benchmarks/adaptive_bench.py --write-docs) -->"
END = "<!-- END adaptive_bench table -->"
WIDTH = 100  # the docs' prose is wrapped at 100 columns


def _noise(b: Builder, state_bits: int) -> None:
    kind, name = b.rng.choice([(StepKind.LLM, "think"), (StepKind.TOOL, "search")])
    if b.rng.random() < 0.15:
        b.steps.append(StepSpec(StepKind.TOOL, "audit_log", None, None))
    else:
        b.steps.append(
            StepSpec(kind, name, flip(state_bits - 1, b.rng.uniform(0.0, 0.03)), b.state)
        )


def _quiet(b: Builder) -> None:
    """A step that changes nothing: resamplable (a model or a tool call), or observed-only."""
    kind, name = b.rng.choice([(StepKind.LLM, "think"), (StepKind.TOOL, "search")])
    if b.rng.random() < 0.15:
        b.steps.append(StepSpec(StepKind.TOOL, "audit_log", None, None))
    else:
        b.steps.append(StepSpec(kind, name, identity, b.state))


def window(position: str, n: int, room: int = 0, tail: int = 0) -> range:
    """The steps of an ``n``-step run in ``position``'s window, from step ``room`` at the earliest
    and leaving ``tail`` steps after it (at least one step, however short the run)."""
    low, high = WINDOWS[position]
    end = n - tail
    start = min(max(room, math.floor(low * n)), end - 1)
    return range(start, min(end, max(start + 1, math.ceil(high * n))))


def make(family: str, n: int, rng: random.Random, position: str = "middle") -> Model:
    if family == "two":
        # state (a, b); the run fails when both are set; the later culprit in the window
        b = Builder(rng, (0, 0))
        second = rng.choice(window(position, n, ROOM[family]))
        first = rng.randrange(second // 2, second)
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
        return _history(n, rng, position)
    if family == "gradual":
        return _gradual(n, rng)
    if family == "lucky":
        return _lucky(n, rng, position)
    if family == "near-margin":
        return _near_margin(n, rng, position)
    if family in LONG_RUN_FAMILIES:
        at = rng.choice(window(position, n, ROOM.get(family, 0), TAIL.get(family, 0)))
        return _from_long_run(LONG_RUN_FAMILIES[family](n, at, rng), rng)
    b = Builder(rng, (0,))
    decisive = rng.choice(window(position, n))
    planted = -1
    for i in range(n):
        if i == decisive:
            p = rng.uniform(0.75, 0.85) if family == "small" else rng.uniform(0.05, 0.5)
            planted = b.key("decide", flip(0, p), (1,))
        else:
            _noise(b, 1)
    return b.model(family, lambda s: s[0] == 1, planted)


def _history(n: int, rng: random.Random, position: str) -> Model:
    # state (drift, bad): drift steps before the pivot raise its risk; noise after it
    b = Builder(rng, (0, 0))
    pivot_at = rng.choice(window(position, n))
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


def _lucky(n: int, rng: random.Random, position: str) -> Model:
    # state (lucky, bad): the record was lucky, then crashed, which luck had made impossible
    b = Builder(rng, (0, 0))
    crash_at = rng.choice(window(position, n, ROOM["lucky"]))
    luck_at = rng.randrange(max(0, crash_at - 4), crash_at)
    p = rng.choice([0.001, 0.02])

    def luck(state: State) -> list[tuple[float, State]]:
        return [(p, (1, state[1])), (1.0 - p, (0, state[1]))]

    def crash(state: State) -> list[tuple[float, State]]:
        return [(1.0, state if state[0] else (state[0], 1))]

    planted = -1
    for i in range(n):
        if i == luck_at:
            b.key("luck", luck, (1, b.state[1]))
        elif i == crash_at:
            planted = b.key("crash", crash, (b.state[0], 1))
        else:
            _noise(b, 2)
    return b.model("lucky", lambda s: s[1] == 1, planted)


def _near_margin(n: int, rng: random.Random, position: str) -> Model:
    # state (bad,): a real culprit, then a chance to mend (margin + 0.01) that the record missed;
    # only quiet steps after it, so its effect is exactly that
    b = Builder(rng, (0,))
    near_at = rng.choice(window(position, n, ROOM["near-margin"]))
    culprit_at = rng.randrange(near_at // 2, near_at)
    mend = MARGIN + 0.01

    def missed(state: State) -> list[tuple[float, State]]:
        return [(mend, (0,)), (1.0 - mend, state)] if state[0] else [(1.0, state)]

    planted = -1
    for i in range(n):
        if i == culprit_at:
            b.key("decide", flip(0, rng.uniform(0.05, 0.5)), (1,))
        elif i == near_at:
            planted = b.key("mend", missed, (1,))
        elif i > near_at:
            _quiet(b)
        else:
            _noise(b, 1)
    return b.model("near-margin", lambda s: s[0] == 1, planted)


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


def _from_long_run(planted: long_runs.Planted, rng: random.Random) -> Model:
    """A long run as a synthetic model: its key steps are model calls named by their rule, a step
    that only spoils is a model or a tool call, a quiet one a model or a tool call or (15 %) an
    observed-only tool. The state is the run's, as integers."""
    steps = []
    for rule, state in zip(planted.model.rules, planted.model.states(), strict=True):
        if isinstance(rule, long_runs.Noise) and rng.random() < 0.15:
            steps.append(StepSpec(StepKind.TOOL, "audit_log", None, None))
        elif isinstance(rule, long_runs.Noise | long_runs.Risk):
            kind, name = rng.choice([(StepKind.LLM, "think"), (StepKind.TOOL, "search")])
            steps.append(StepSpec(kind, name, _transition(rule), _ints(state)))
        else:
            name = type(rule).__name__.lower()
            steps.append(StepSpec(StepKind.LLM, name, _transition(rule), _ints(state)))
    return Model(
        planted.model.name,
        _ints(long_runs.START),
        tuple(steps),
        lambda s: long_runs.failed(_state(s)),
        planted.planted,
    )


def _ints(state: long_runs.State) -> State:
    return tuple(int(x) for x in state)


def _state(state: State) -> long_runs.State:
    return bool(state[0]), bool(state[1]), state[2], bool(state[3])


def _transition(rule: long_runs.Rule) -> Transition:
    def transition(state: State) -> list[tuple[float, State]]:
        return [(p, _ints(after)) for p, after in rule.step(_state(state))]

    return transition


def judge(named: int | None, effects: dict[int, float], verdict: str = "") -> str:
    """Wrong in the error bound's sense, inconclusive, or right: a named step is wrong when its
    effect is none or a later step raises the failure rate beyond the margin. No step named is
    inconclusive, unless the verdict is ``settled`` (no resamplable step matters): wrong where a
    step's effect passes the margin either way, else right."""
    if named is None:
        if verdict == SETTLED:
            return "wrong" if any(abs(a) > MARGIN for a in effects.values()) else "right"
        return "inconclusive"
    # a later step that lowered the failure rate beyond the margin is decided and no culprit
    # (the rule's "lowered"), so only a later one that raised it makes the name wrong
    later = [a for i, a in effects.items() if i > named]
    wrong = effects[named] <= 1e-9 or any(a > MARGIN for a in later)
    return "wrong" if wrong else "right"


def judge_lowered(model: Model, effects: dict[int, float], result: AttributionResult) -> str:
    """``lowered``: wrong on a wrong name, on the lucky step decided "no effect", or on a step
    decided "lowered" whose effect is not below −margin; right when the name is right and the
    lucky step is decided "lowered"; else inconclusive."""
    named = judge(result.point_of_commitment, effects, result.verdict.value)
    luck = next(i for i, spec in enumerate(model.steps) if spec.name == "luck")
    decided = {s.index: s for s in result.steps}
    said_lowered = [i for i, s in decided.items() if s.lowered]
    if named == "wrong" or decided[luck].no_effect:
        return "wrong"
    if any(effects[i] >= -MARGIN for i in said_lowered):
        return "wrong"
    return "right" if named == "right" and luck in said_lowered else "inconclusive"


@dataclass(frozen=True, slots=True)
class Row:
    family: str
    steps: int
    position: str  # early, middle, late; "" for gradual
    instance: int
    strategy: str  # "adaptive" or "fixed"
    verdict: str  # "" for a fixed strategy not run (its calls are the dry run's)
    calls: int
    model_calls: int
    tool_calls: int
    settled: bool = False  # the verdict: no resamplable step matters
    switched: bool = False  # the report says it switched to the fixed strategy's plan


#: (family, steps, position, instance, run the fixed strategy).
Task = tuple[str, int, str, int, bool]


def _model(family: str, n: int, position: str, rng: random.Random) -> Model:
    """A model of the family whose planted step is the one theory names: the latest step with an
    effect (past the margin, in ``rescue-noise``, whose late steps matter a little)."""
    floor = MARGIN if family == "rescue-noise" else 1e-9
    for _ in range(1000):  # noise may outdo the planted step: draw again until theory agrees
        model = make(family, n, rng, position or "middle")
        effects = true_attributions(model)
        if model.planted < 0 or max(i for i, a in effects.items() if a > floor) == model.planted:
            return model
    raise RuntimeError(f"no {family} model of {n} steps with its planted step the PoC")


def run(task: Task) -> list[Row]:
    family, n, position, instance, run_fixed = task
    rng = random.Random(f"adaptive-bench:{family}:{n}:{position}:{instance}")
    model = _model(family, n, position, rng)
    effects = true_attributions(model)
    calls: Counter[str] = Counter()
    trajectory, registry = (
        trajectory_of(model, f"{family}-{n}-{instance}"),
        registry_of(model, calls),
    )
    seed = rng.getrandbits(32)
    rows = []
    for strategy in (Strategy.FIXED, Strategy.ADAPTIVE):
        config = AttributionConfig(
            rollouts=FIXED_ROLLOUTS,
            strategy=strategy,
            seed=seed,
            root_cause=family == "lowered",  # the steps before the crash are tested
        )
        if strategy is Strategy.FIXED and not run_fixed:
            by_kind = planned_cost(trajectory, registry, config).calls_by_kind
            model_calls = by_kind.get("llm", 0)
            tool_calls = sum(by_kind.values()) - model_calls
            rows.append(
                Row(family, n, position, instance, "fixed", "", model_calls + tool_calls,
                    model_calls, tool_calls)
            )  # fmt: skip
            continue
        calls.clear()
        result = attribute(trajectory, registry, config)
        model_calls = calls["llm"]
        counted = (model_calls, sum(calls.values()) - model_calls)
        if (
            counted != (result.spend.model, result.spend.tool)
            or sum(counted) != result.step_executions
        ):
            raise RuntimeError(f"{family}-{n}: counted {calls}, the result says {result.spend}")
        if strategy is Strategy.FIXED:
            planned = planned_cost(trajectory, registry, config)
            if planned.calls_by_kind != {k: v for k, v in sorted(calls.items()) if v}:
                raise RuntimeError(
                    f"{family}-{n}: the fixed strategy made {calls}, planned {planned}"
                )
        if family == "lowered":
            verdict = judge_lowered(model, effects, result)
        else:
            verdict = judge(result.point_of_commitment, effects, result.verdict.value)
        cost = build_report(result, config).get("cost") or {}
        rows.append(
            Row(family, n, position, instance, strategy.value, verdict, result.step_executions,
                model_calls, result.step_executions - model_calls,
                result.verdict.value == SETTLED, bool(cost.get("switched_to_fixed")))
        )  # fmt: skip
    return rows


def tasks_for(
    instances: int,
    sizes: Sequence[int],
    positions: Sequence[str] = POSITIONS,
    large_instances: int | None = None,
    run_fixed: bool = False,
    families: Sequence[str] = FAMILIES,
) -> list[Task]:
    """Every family, size and position, the costliest first (so a pool ends together)."""
    tasks = []
    for n in sorted(sizes, reverse=True):
        count = instances if n < LARGE or large_instances is None else large_instances
        for family in families:
            for position in ("",) if family == "gradual" else positions:
                for i in range(count):
                    fixed = run_fixed or family == "gradual" or (i == 0 and n <= CHECK_FIXED_UP_TO)
                    tasks.append((family, n, position, i, fixed))
    return tasks


def measure(
    instances: int,
    sizes: Sequence[int],
    jobs: int = 2,
    positions: Sequence[str] = POSITIONS,
    large_instances: int | None = None,
    run_fixed: bool = False,
    families: Sequence[str] = FAMILIES,
) -> list[Row]:
    """Every family, size and position, ``instances`` each (``large_instances`` from `LARGE`
    steps), with the adaptive default, and the fixed strategy's calls."""
    tasks = tasks_for(instances, sizes, positions, large_instances, run_fixed, families)
    if jobs <= 1:
        return [row for task in tasks for row in run(task)]
    with ProcessPoolExecutor(jobs) as pool:
        return [row for batch in pool.map(run, tasks) for row in batch]


def _members(family: str) -> tuple[str, ...]:
    return TARGET_FAMILIES if family == PLANTED else (family,)


@dataclass(frozen=True, slots=True)
class Group:
    """The runs of some families at one size and position."""

    steps: int
    position: str
    families: str
    runs: int
    right: int
    wrong: int
    inconclusive: int
    switched: int
    model_calls: float  # adaptive, per run
    tool_calls: float
    fixed_model_calls: float  # the fixed strategy, per run
    fixed_tool_calls: float
    fixed_verdicts: tuple[int, int, int] | None  # wrong, inconclusive, right, when it ran on all

    @property
    def ratio(self) -> float:
        return (self.model_calls + self.tool_calls) / (
            self.fixed_model_calls + self.fixed_tool_calls
        )


def group(rows: Sequence[Row], n: int | None, position: str | None, family: str) -> Group | None:
    """The family's runs (`PLANTED`: issue 10's four) at size ``n`` and ``position`` (None: any)."""
    members = _members(family)
    mine = [
        r
        for r in rows
        if (n is None or r.steps == n)
        and (position is None or r.position == position)
        and r.family in members
    ]
    adaptive = [r for r in mine if r.strategy == "adaptive"]
    fixed = [r for r in mine if r.strategy == "fixed"]
    if not adaptive:
        return None
    wrong, inconclusive, right = _verdicts(adaptive)
    return Group(
        n or 0,
        position or "",
        family,
        len(adaptive),
        right,
        wrong,
        inconclusive,
        sum(r.switched for r in adaptive),
        sum(r.model_calls for r in adaptive) / len(adaptive),
        sum(r.tool_calls for r in adaptive) / len(adaptive),
        sum(r.model_calls for r in fixed) / len(fixed),
        sum(r.tool_calls for r in fixed) / len(fixed),
        _verdicts(fixed) if all(r.verdict for r in fixed) else None,
    )


def _verdicts(rows: Sequence[Row]) -> tuple[int, int, int]:
    """Wrong, inconclusive and right answers."""
    return (
        sum(r.verdict == "wrong" for r in rows),
        sum(r.verdict == "inconclusive" for r in rows),
        sum(r.verdict == "right" for r in rows),
    )


def _answers(g: Group) -> str:
    return f"{g.wrong} / {g.inconclusive} / {g.right}"


def _row_names(rows: Sequence[Row], positions: Sequence[str]) -> list[tuple[str, str]]:
    """(family, position) of every row of the table that has runs: the planted row first."""
    present = {r.family for r in rows}
    names = [(PLANTED, p) for p in positions] if present & set(TARGET_FAMILIES) else []
    for family in FAMILIES:
        if family in present:
            names += [("gradual", "")] if family == "gradual" else [(family, p) for p in positions]
    return names


def table(rows: Sequence[Row], sizes: Sequence[int], positions: Sequence[str]) -> list[str]:
    """The table (markdown): a row per family and culprit position, a column per size, each cell
    wrong / inconclusive / right and the adaptive default's calls ÷ the fixed strategy's."""
    lines = [
        "| family | culprit | " + " | ".join(f"{n} steps" for n in sizes) + " | switched |",
        "|---|---|" + "---|" * len(sizes) + "---|",
    ]
    for family, position in _row_names(rows, positions):
        cells, switched = [], 0
        for n in sizes:
            g = group(rows, n, position, family)
            cells.append(f"{_answers(g)}, {g.ratio:.3f} ×" if g else "")
            switched += g.switched if g else 0
        present = [f for f in TARGET_FAMILIES if any(r.family == f for r in rows)]
        label = f"planted ({', '.join(present)})" if family == PLANTED else family
        lines.append(f"| {label} | {position or 'none'} | {' | '.join(cells)} | {switched} |")
    return lines


def family_table(rows: Sequence[Row], sizes: Sequence[int], positions: Sequence[str]) -> list[str]:
    """A row for each family, size and position, with the calls per run (markdown)."""
    lines = [
        "| steps | culprit | family | runs | wrong / inconclusive / right "
        "| adaptive calls per run: model + tool | fixed calls per run: model + tool "
        "| adaptive ÷ fixed | switched |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in sizes:
        for family, position in _row_names(rows, positions):
            g = group(rows, n, position, family)
            if g is None or family == PLANTED:
                continue
            fixed = f" (fixed {' / '.join(map(str, g.fixed_verdicts))})" if g.fixed_verdicts else ""
            lines.append(
                f"| {n} | {position or 'none'} | {family} | {g.runs} | {_answers(g)}{fixed} "
                f"| {g.model_calls:,.0f} + {g.tool_calls:,.0f} "
                f"| {g.fixed_model_calls:,.0f} + {g.fixed_tool_calls:,.0f} "
                f"| {g.ratio:.3f} × | {g.switched} |"
            )
    return lines


def _met(ok: bool) -> str:
    return "met" if ok else "missed"


def goals(rows: Sequence[Row]) -> list[str]:
    """A line per goal of issue 42, each saying met or missed with what was measured."""
    lines = []
    families = [f for f in FAMILIES if any(r.family == f for r in rows)]
    beyond, wrong_in = [], []
    for family in families:
        g = group(rows, None, None, family)
        if g and g.wrong:
            wrong_in.append(f"{family} {g.wrong} of {g.runs}")
            if g.wrong > ERROR_BOUND * g.runs:
                beyond.append(family)
    lines.append(
        f"no family wrong beyond the stated bound ({ERROR_BOUND * 100:.0f} % of its runs): "
        f"{_met(not beyond)} ({'wrong: ' + ', '.join(wrong_in) if wrong_in else 'no wrong answer'}"
        + (f"; beyond it: {', '.join(beyond)})" if beyond else ")")
    )
    fixed = {
        (r.family, r.steps, r.position, r.instance): r.calls for r in rows if r.strategy == "fixed"
    }
    ratios = sorted(
        ((r.calls / fixed[(r.family, r.steps, r.position, r.instance)], r) for r in rows
         if r.strategy == "adaptive"),
        key=lambda pair: pair[0],
    )  # fmt: skip
    dearer = [r for ratio, r in ratios if ratio > 1.0]
    if ratios:
        top, worst = ratios[-1]
        where = (
            f"{worst.family}, {worst.steps} steps{', ' + worst.position if worst.position else ''}"
        )
        lines.append(
            f"no verdict dearer than the fixed strategy: {_met(not dearer)} ({len(dearer)} of "
            f"{len(ratios)} runs above it; the dearest {top:.2f} ×, {where})"
        )
    for n, position, family, target, what in (
        (8, "early", PLANTED, 0.35, "an early culprit at 8 steps (the planted row)"),
        (32, "early", "small", 0.15, "a small early effect at 32 steps"),
        (64, "early", "small", 0.10, "a small early effect at 64 steps"),
    ):
        g = group(rows, n, position, family)
        verdict = f"{_met(g.ratio <= target)} ({g.ratio:.3f} ×)" if g else "not measured"
        lines.append(f"{what} at ≤ {target:.2f} × the fixed strategy: {verdict}")
    if any(r.family == "gradual" for r in rows):
        wrong = {
            s: sum(r.verdict == "wrong" for r in rows if r.family == "gradual" and r.strategy == s)
            for s in ("fixed", "adaptive")
        }
        lines.append(
            f"gradual never wrong more often than the fixed strategy: "
            f"{_met(wrong['adaptive'] <= wrong['fixed'])} (wrong: fixed {wrong['fixed']}, "
            f"adaptive {wrong['adaptive']})"
        )
    return lines


def print_table(
    rows: Sequence[Row],
    sizes: Sequence[int],
    positions: Sequence[str] = POSITIONS,
    per_family: bool = False,
) -> None:
    """The table, a row per family with ``per_family``, and the goals' verdicts (markdown)."""
    print("\n".join(table(rows, sizes, positions)))
    if per_family:
        print()
        print("\n".join(family_table(rows, sizes, positions)))
    print()
    print("\n".join(f"* {line}" for line in goals(rows)))


@dataclass(frozen=True, slots=True)
class Session:
    """When and where the benchmark ran, for the dated table in the docs."""

    started: datetime
    seconds: float
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float]
    command: str
    jobs: int

    def sentence(self) -> str:
        commit = _git("rev-parse", "--short", "HEAD") or "unknown"
        changed = " (with uncommitted changes)" if _git("status", "--porcelain") else ""
        return (
            f"Measured {self.started:%Y-%m-%d %H:%M} UTC at commit `{commit}`{changed}: "
            f"`{self.command}`, {self.jobs} process{'es' if self.jobs > 1 else ''}, "
            f"{self.seconds / 60:.1f} minutes on {os.cpu_count()} cores; load average "
            f"(1, 5, 15 minutes) {_load(self.load_start)} at the start, "
            f"{_load(self.load_end)} at the end."
        )


def _load(load: tuple[float, float, float]) -> str:
    return " / ".join(f"{x:.2f}" for x in load)


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def docs_section(
    rows: Sequence[Row], sizes: Sequence[int], positions: Sequence[str], session: Session
) -> str:
    """What ``--write-docs`` puts between the markers of docs/performance.md."""
    said = (
        f"{session.sentence()} Each cell: wrong / inconclusive / right answers of the adaptive "
        "default, then its calls ÷ the fixed strategy's (means over the runs); `switched`: runs "
        "that switched to the fixed strategy's plan."
    )
    return "\n".join(
        [
            textwrap.fill(said, WIDTH, break_on_hyphens=False),
            "",
            *table(rows, sizes, positions),
            "",
            "Goals (issue 42):",
            "",
            *(
                textwrap.fill(line, WIDTH, initial_indent="* ", subsequent_indent="  ",
                              break_on_hyphens=False)
                for line in goals(rows)
            ),
        ]
    )  # fmt: skip


def write_docs(section: str, path: Path = DOCS) -> None:
    """Replace what lies between `BEGIN` and `END` in ``path`` with ``section``."""
    text = path.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise SystemExit(f"{path}: expected one pair of marker comments, {BEGIN} ... {END}")
    before, rest = text.split(BEGIN)
    after = rest.split(END)[1]
    path.write_text(f"{before}{BEGIN}\n{section}\n{END}{after}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=3, help="per family, size and position")
    parser.add_argument(
        "--large-instances",
        type=int,
        default=1,
        help=f"instances at {LARGE} steps and more (default 1)",
    )
    parser.add_argument("--sizes", default="8,16,32,64,128,256")
    parser.add_argument("--positions", default=",".join(POSITIONS))
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument(
        "--run-fixed",
        "--run-sweep",
        action="store_true",
        help="run the fixed strategy on every instance (else its calls are the dry run's)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--per-family", action="store_true", help="a row for every family")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="put the dated table in docs/performance.md between its adaptive_bench markers",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    positions = [p for p in args.positions.split(",") if p]
    families = [f for f in args.families.split(",") if f]
    unknown = [p for p in positions if p not in WINDOWS] + [
        f for f in families if f not in FAMILIES
    ]
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)} (positions: {', '.join(POSITIONS)}; "
                     f"families: {', '.join(FAMILIES)})")  # fmt: skip
    started, clock, load_start = datetime.now(timezone.utc), time.monotonic(), os.getloadavg()
    rows = measure(
        args.instances, sizes, args.jobs, positions, args.large_instances, args.run_fixed, families
    )
    session = Session(
        started,
        time.monotonic() - clock,
        load_start,
        os.getloadavg(),
        " ".join(["python benchmarks/adaptive_bench.py", *sys.argv[1:]]),
        args.jobs,
    )
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(session.sentence())
        print()
        print_table(rows, sizes, positions, args.per_family)
    if args.write_docs:
        write_docs(docs_section(rows, sizes, positions, session))


if __name__ == "__main__":
    main()
