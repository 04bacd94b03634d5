"""The fragility map: each fault injected at each chosen step, the run rolled on from there, and
each cell's failure rate estimated in growing batches until its interval decides.

A **cell** is one (step, fault): the plan holds the steps before the step, injects the fault there
(a built-in fault of ``fork --fault``, `otel_replay.replay._faults.FAULTS`, by the moves' rules; or
a user's ``@fault``), and resamples every later step, so the model follows what the fault made of
the run (`Plan.intervene`). Rollout ``r`` of a cell is a pure function of the seed, the cell's plan
and ``r``, so the same seed gives the same table on any executor and any number of workers.

Each cell asks one question: does the run fail under this fault more often than not? It is asked
at the looks of a schedule (`FIRST_LOOK` rollouts, growing by `GROWTH` up to ``max_rollouts``:
the attribution's sequential looks), and a cell stops at the first look whose 95 % interval lies
wholly above or below one half. The interval is exact (Clopper–Pearson) with each end's error split
over the looks (`proportion_interval`), so it holds at whichever look the cell stopped. All open
cells are topped up together at each look, in cell order; a budget stops the sweep before a look
that would spend more than it (`Rollouts.affordable`), the cells left open reading what they have.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._engine import (
    Engine,
    Outcome,
    Progress,
    Shipper,
    Spending,
    resamplable_steps,
)
from otel_replay.attribution._sequential import FIRST_LOOK, GROWTH, Rollouts
from otel_replay.attribution._spend import NOTHING, Pricing, Spend
from otel_replay.attribution._stats import EXACT_PROPORTION, proportion_interval
from otel_replay.errors import (
    AttributionError,
    CanonicalJSONError,
    InterventionError,
    VerifierError,
    setting,
)
from otel_replay.hashing import canonical_json
from otel_replay.model import StepKind, Trajectory
from otel_replay.replay import FAULTS, Intervention, Move, MoveKind, Plan, Rollout, injection, score
from otel_replay.resamplers import Registry, StepFailed, describe

#: The faults a sweep injects when none are named.
DEFAULT_FAULTS = ("error", "timeout", "empty", "truncate")
#: The failure rate a cell's interval is decided against.
HALF = 0.5


class CellVerdict(str, Enum):
    """What a cell's interval shows about the run under its fault."""

    FAILS = "fails"  # the run fails more often than not: its interval lies above one half
    PASSES = "passes"  # it passes more often than not: the interval lies below one half
    UNDECIDED = "undecided"  # the interval still holds one half (max rollouts or budget reached)


@dataclass(frozen=True, slots=True)
class SweepCell:
    """One (step, fault): ``failures`` of ``n`` rollouts that counted (``left_out`` more were no
    evidence: unservable or crashed), the rate and its 95 % interval (`EXACT_PROPORTION`)."""

    step: int
    fault: str
    failures: int
    n: int
    low: float
    high: float
    verdict: CellVerdict
    left_out: int = 0
    injected: str = ""  # what the fault does at this step, in words (`Intervention.describe`)

    @property
    def rate(self) -> float | None:
        return self.failures / self.n if self.n else None


@dataclass(frozen=True, slots=True)
class SweptStep:
    """A step the sweep injected faults at."""

    index: int
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class SweepResult:
    """The fragility map of one run: ``cells`` in step order, then fault order.

    ``passed``: whether the recorded run passed (then a cell that fails is a fault that flips it;
    for a failing run a cell that still fails is a fault that would not have mattered)."""

    trajectory_id: str
    factual_score: float
    passed: bool
    faults: tuple[str, ...]
    steps: tuple[SweptStep, ...]
    cells: tuple[SweepCell, ...]
    seed: int
    max_rollouts: int
    looks: tuple[int, ...]
    rollouts: int
    calls: int
    spend: Spend
    out_of_budget: bool = False
    interval_method: str = EXACT_PROPORTION
    driver: str = "trace"
    notes: tuple[str, ...] = ()
    # of ``rollouts`` and ``spend``, the rollouts left out of every cell's rate (unservable or
    # crashed) and what they spent: every call made is paid, and counted
    left_out: int = 0
    left_out_spend: Spend = NOTHING

    def cell(self, step: int, fault: str) -> SweepCell:
        return next(c for c in self.cells if c.step == step and c.fault == fault)

    @property
    def flips(self) -> tuple[SweepCell, ...]:
        """The cells whose verdict differs from the record's: faults that break a passing run,
        or that save a failing one."""
        wrong = CellVerdict.FAILS if self.passed else CellVerdict.PASSES
        return tuple(c for c in self.cells if c.verdict is wrong)


def looks_of(max_rollouts: int) -> tuple[int, ...]:
    """Rollouts per cell at each look: `FIRST_LOOK`, growing by `GROWTH`, up to ``max_rollouts``."""
    looks = [min(FIRST_LOOK, max_rollouts)]
    while looks[-1] < max_rollouts:
        looks.append(min(max_rollouts, math.ceil(looks[-1] * GROWTH)))
    return tuple(looks)


def chosen_steps(run: Trajectory, steps: Sequence[str] | None) -> list[int]:
    """The steps ``steps`` names: step kinds (``tool``), names (``list_deploys``) or indices
    (``3``); every tool step when None. Naming nothing is an `AttributionError`."""
    wanted = list(steps) if steps else ["tool"]
    chosen: set[int] = set()
    kinds = {k.value for k in StepKind}
    for word in wanted:
        if word.isdigit():
            index = int(word)
            if not 0 <= index < len(run.steps):
                raise InterventionError(
                    f"{setting('steps', word)}: run {run.id} has steps 0..{len(run.steps) - 1}"
                )
            chosen.add(index)
            continue
        hits = {s.index for s in run.steps if s.kind.value == word or s.name == word}
        if not hits:
            names = sorted({s.name for s in run.steps})
            raise AttributionError(
                f"{setting('steps', word)} names no step of run {run.id}: give a step kind "
                f"({', '.join(sorted(kinds))}), a step name ({', '.join(names)}) or an index"
            )
        chosen |= hits
    return sorted(chosen)


def fault_intervention(run: Trajectory, at: int, name: str, registry: Registry) -> Intervention:
    """What fault ``name`` does at step ``at``: a built-in one by the moves' rules (`injection`),
    a user's (``@fault``) by calling it on the recorded step once."""
    if name in FAULTS:
        return injection(run, at, Move(MoveKind.FAULT, name)).intervention
    function = registry.faults.get(name)
    if function is None:
        mine = sorted(registry.faults)
        also = f"; registered: {', '.join(mine)}" if mine else "; register one with @fault(NAME)"
        raise InterventionError(
            f"{setting('faults', name)}: unknown fault; built-in faults: "
            f"{', '.join(sorted(FAULTS))}{also}"
        )
    step = run.steps[at]
    try:
        made = function(step)
    except StepFailed as failed:
        made = failed
    if isinstance(made, StepFailed):
        return Intervention.observe(None, str(made) or f"injected fault: {name}")
    try:
        canonical_json(made)
    except CanonicalJSONError as exc:
        raise InterventionError(
            f"fault {name!r} ({describe(function)}) returned a value that is not JSON at step "
            f"{at}: {exc}"
        ) from None
    if step.kind is StepKind.LLM:
        return Intervention.do(made)
    return Intervention.observe(made, None)


@dataclass(frozen=True, slots=True)
class SweepPlan:
    """The cells of a sweep, before anything runs: their plans, what each costs a rollout."""

    steps: tuple[SweptStep, ...]
    faults: tuple[str, ...]
    cells: tuple[tuple[int, str, Plan], ...]
    resamplable: tuple[int, ...]
    looks: tuple[int, ...]

    def cost(self, pricing: Pricing, rollouts: int) -> Spend:
        """What ``rollouts`` rollouts of every cell spend."""
        return sum(
            (
                pricing.rollout(plan.resampled(self.resamplable), rollouts)
                for *_, plan in self.cells
            ),
            NOTHING,
        )


def plan_sweep(
    run: Trajectory,
    registry: Registry,
    faults: Sequence[str],
    steps: Sequence[str] | None,
    config: AttributionConfig,
    agent_driven: bool = False,
) -> SweepPlan:
    """The cells of sweeping ``faults`` over the ``steps`` named (`chosen_steps`). A fault a step
    cannot take by the moves' rules (a failure observed on a model turn is allowed; a value is
    ``do`` there) is an `InterventionError`."""
    names = tuple(dict.fromkeys(f.strip() for f in faults if f.strip()))
    if not names:
        raise InterventionError(f"{setting('faults', '')}: name at least one fault")
    indices = chosen_steps(run, steps)
    cells = []
    for at in indices:
        for name in names:
            cells.append(
                (
                    at,
                    name,
                    Plan.faulted(
                        len(run.steps), at, name, fault_intervention(run, at, name, registry)
                    ),
                )
            )
    swept = tuple(SweptStep(i, run.steps[i].kind.value, run.steps[i].name) for i in indices)
    resamplable = tuple(resamplable_steps(run, registry, agent_driven))
    return SweepPlan(swept, names, tuple(cells), resamplable, looks_of(config.max_rollouts))


def sweep(
    run: Trajectory,
    registry: Registry,
    faults: Sequence[str] = DEFAULT_FAULTS,
    steps: Sequence[str] | None = None,
    config: AttributionConfig | None = None,
    *,
    driver: Callable[[Plan, int], Rollout] | None = None,
    progress: Progress | None = None,
    spending: Spending | None = None,
    how: str = "trace",
    shipper: Shipper | None = None,
) -> SweepResult:
    """The fragility map of ``run``: each of ``faults`` injected at each step ``steps`` names
    (kinds, names or indices; every tool step by default), the later steps resampled by
    ``registry`` (or re-run by ``driver``: the chat loop, a live agent), each cell's rollouts
    scored by the registry's verifier. ``config`` gives the seed, ``max_rollouts`` per cell, the
    budget, the fail threshold and the workers; ``shipper`` runs the rollouts elsewhere (a
    process pool, Ray: see `sweep_stored`), with the same result.

    Raises:
        VerifierError: no verifier is registered.
        InterventionError: an unknown fault, or a step index the run does not have.
        AttributionError: ``steps`` names no step of the run.
    """
    config = config or AttributionConfig()
    if registry.verifier is None:
        raise VerifierError(
            "no verifier: add a function decorated with @verifier to your resamplers module, or "
            f"pass {setting('verifier', 'module:function')}"
        )
    planned = plan_sweep(run, registry, faults, steps, config, driver is not None)
    factual_score = score(registry.verifier, run)
    engine = Engine(
        run, registry, registry.verifier, config, progress, driver, spending, shipper,
        resamplable=list(planned.resamplable),
    )  # fmt: skip
    if config.budget is not None:
        engine.pricing.check_budget(config.budget_unit, run.id)
    rollouts = Rollouts(engine, config, planned.resamplable, {})
    open_plans = [plan for *_, plan in planned.cells]
    for n in planned.looks:
        wants = [(plan, n) for plan in open_plans]
        if not wants:
            break
        if not rollouts.affordable(wants):
            rollouts.out_of_budget = True
            break
        engine.announce(
            sum(max(0, n - len(rollouts.outcomes.get(p, []))) for p, _ in wants),
            rollouts.topping_up(wants),
        )
        engine.top_up(rollouts.outcomes, wants)
        open_plans = [
            p for p in open_plans if _verdict(rollouts.outcomes[p], planned.looks) is None
        ]
    cells = tuple(
        _cell(at, name, plan, rollouts.outcomes.get(plan, []), planned.looks)
        for at, name, plan in planned.cells
    )
    notes = []
    if rollouts.out_of_budget:
        notes.append("the budget was reached: the cells still open read the rollouts they had")
    return SweepResult(
        trajectory_id=run.id,
        factual_score=factual_score,
        passed=factual_score >= config.fail_threshold,
        faults=planned.faults,
        steps=planned.steps,
        cells=cells,
        seed=config.seed,
        max_rollouts=config.max_rollouts,
        looks=planned.looks,
        rollouts=engine.rollouts,
        calls=engine.step_executions,
        spend=engine.spend,
        out_of_budget=rollouts.out_of_budget,
        left_out=engine.left_out,
        left_out_spend=engine.left_out_spend,
        driver=how,
        notes=tuple(notes),
    )


def _counts(outcomes: Sequence[Outcome]) -> tuple[int, int, int]:
    counted = [o for o in outcomes if o.counts]
    return sum(o.failed for o in counted), len(counted), len(outcomes) - len(counted)


def _verdict(outcomes: Sequence[Outcome], looks: Sequence[int]) -> CellVerdict | None:
    """The cell's verdict at this look, None while its interval holds one half."""
    failures, n, _ = _counts(outcomes)
    low, high = proportion_interval(failures, n, len(looks))
    if n and low > HALF:
        return CellVerdict.FAILS
    if n and high < HALF:
        return CellVerdict.PASSES
    return None


def _cell(
    at: int, name: str, plan: Plan, outcomes: Sequence[Outcome], looks: Sequence[int]
) -> SweepCell:
    failures, n, left_out = _counts(outcomes)
    low, high = proportion_interval(failures, n, len(looks))
    verdict = _verdict(outcomes, looks) or CellVerdict.UNDECIDED
    return SweepCell(at, name, failures, n, low, high, verdict, left_out, plan.at(at).describe())


@dataclass(frozen=True, slots=True)
class SweepCost:
    """What a sweep would cost, before it runs: at most (every cell to ``max_rollouts``) and at
    least (every cell deciding at its first look), in rollouts and resample-function calls."""

    trajectory_id: str
    cells: int
    most_rollouts: int
    least_rollouts: int
    most: Spend
    least: Spend
    exact: bool  # the trace walk: the calls per rollout are exact; a driver's loop: an estimate


def sweep_cost(
    run: Trajectory,
    registry: Registry,
    faults: Sequence[str],
    steps: Sequence[str] | None,
    config: AttributionConfig,
    agent_driven: bool = False,
) -> SweepCost:
    """What `sweep` would cost (``sweep --dry-run``), calling no resample function: the cells are
    planned (a user's fault function is called once per step, as the sweep does) and priced from
    the record."""
    planned = plan_sweep(run, registry, faults, steps, config, agent_driven)
    pricing = Pricing.of(run, registry, list(planned.resamplable))
    if config.budget is not None:
        pricing.check_budget(config.budget_unit, run.id)
    most = planned.cost(pricing, planned.looks[-1])
    if config.budget is not None:
        most = most.at_most(config.budget_unit, config.budget)
    count = len(planned.cells)
    return SweepCost(
        run.id,
        count,
        count * planned.looks[-1],
        count * planned.looks[0],
        most,
        planned.cost(pricing, planned.looks[0]),
        not agent_driven,
    )
