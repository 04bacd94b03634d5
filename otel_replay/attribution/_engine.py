"""Runs rollouts of many plans behind one executor interface, and scores them.

Rollout ``r`` of a plan is a pure function of ``(seed, plan, r)``, so the executor only changes how
fast results arrive, never what they are: serial, or ``workers`` threads (resample functions often
wait on remote models), or a `Shipper` that runs them elsewhere (a process pool, Ray: see
`otel_replay.executors`), in batches, and hands them back in order. Two drivers produce rollouts:
the trace-driven walk over the recorded steps, and the live agent re-run under the replay context.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from otel_replay.attribution._config import AttributionConfig, OnResamplerError
from otel_replay.errors import RolloutError
from otel_replay.model import Trajectory
from otel_replay.replay import Plan
from otel_replay.replay._rollout import Rollout, TraceDriver, score
from otel_replay.resamplers import Registry
from otel_replay.resamplers._registry import VerifierFunction


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scored rollout. ``trajectory`` is None when the rollout failed on a resampler error."""

    plan: Plan
    index: int
    score: float
    failed: bool
    step_executions: int
    trajectory: Trajectory | None
    resampler_error: str | None = None


#: ``ship(tasks)``: the rollouts of ``tasks`` made elsewhere, in order; a rollout a resample
#: function's error ended comes back as that error.
Shipper = Callable[[list[tuple[Plan, int]]], Iterable[Rollout | RolloutError]]

#: ``progress(completed, total)``: rollouts run so far, and rollouts announced in all.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Spent:
    """What an attribution has spent so far in resample-function calls (the cost users pay), what
    its batches announced so far will have spent when they end, and the budget, if any."""

    calls: int
    calls_announced: int
    budget: int | None

    @property
    def batch(self) -> int:
        """Calls still to come in the batches announced: what remains before the next decision."""
        return max(0, self.calls_announced - self.calls)


#: ``spending(spent)``: called as `Progress` is, with the calls.
Spending = Callable[[Spent], None]


class Engine:
    """Rolls plans out and scores them, and keeps the count of what was announced and what ran.

    Methods announce the rollouts they will run (`announce`) before running them, and withdraw what
    an early stop leaves unrun (`withdraw`), so ``progress`` always sees the true total.
    """

    def __init__(
        self,
        factual: Trajectory,
        registry: Registry,
        verifier: VerifierFunction,
        config: AttributionConfig,
        progress: Progress | None = None,
        driver: Callable[[Plan, int], Rollout] | None = None,
        spending: Spending | None = None,
        shipper: Shipper | None = None,
    ) -> None:
        self.factual = factual
        self.shipper = shipper
        self.registry = registry
        self.verifier = verifier
        self.config = config
        self.progress = progress
        self.spending = spending
        self.calls_announced = 0
        self.rollouts = 0
        self.planned = 0
        self.step_executions = 0
        self.resampler_errors = 0
        self.resampling = 0  # rollouts that called a resample function (or tried to)
        # the trace-driven rollout unless a driver (the chat loop, a live agent) is given
        self._drive = driver or TraceDriver(factual, registry, config.seed)
        # the trace walk: a plan that resamples nothing reproduces the record, so it runs once
        self.walks_record = bool(getattr(self._drive, "walks_record", False))

    def announce(self, rollouts: int, calls: int = 0) -> None:
        """``rollouts`` more will run (making ``calls`` resample-function calls, when known)."""
        self.planned += rollouts
        self.calls_announced = max(self.calls_announced, self.step_executions) + calls
        self._report()

    def withdraw(self, rollouts: int) -> None:
        """``rollouts`` announced will not run after all (a search that stopped early)."""
        self.planned -= rollouts
        self._report()

    def asked(self, plan: Plan) -> Plan:
        """The plan as it runs: under the swapped-in model when the swap question is asked. The
        methods never see the difference (their outcomes come back under their own plans)."""
        model = self.config.swap_model
        return plan if model is None else plan.under_model(model, self.config.swap_from)

    def _one(self, task: tuple[Plan, int]) -> Outcome:
        try:
            result = self._drive(self.asked(task[0]), task[1])
        except RolloutError as exc:
            return self._lost(task, exc)
        return self._scored(task[0], result)

    def _received(self, task: tuple[Plan, int], got: Rollout | RolloutError) -> Outcome:
        if isinstance(got, RolloutError):
            return self._lost(task, got)
        return self._scored(task[0], got)

    def _lost(self, task: tuple[Plan, int], exc: RolloutError) -> Outcome:
        """A rollout a resample function's error ended: a failure, or (by default) the end."""
        if self.config.on_resampler_error is not OnResamplerError.FAIL_ROLLOUT:
            raise exc
        return Outcome(task[0], task[1], 0.0, True, 0, None, str(exc))

    def _scored(self, plan: Plan, result: Rollout) -> Outcome:
        value = score(self.verifier, result.trajectory)
        failed = value < self.config.fail_threshold
        return Outcome(plan, result.index, value, failed, result.step_executions, result.trajectory)

    def run(self, plans: Sequence[tuple[Plan, int]]) -> dict[Plan, list[Outcome]]:
        """Roll each plan out the given number of times; outcomes per plan, in rollout order."""
        return self._run_tasks([(plan, r) for plan, count in plans for r in range(count)], plans)

    def top_up(
        self, outcomes: dict[Plan, list[Outcome]], wants: Sequence[tuple[Plan, int]]
    ) -> None:
        """Bring each plan's outcomes in ``outcomes`` up to the count wanted, running only the
        rollouts it lacks (rollout ``r`` of a plan is the same whenever it runs)."""
        tasks = [
            (plan, r) for plan, want in wants for r in range(len(outcomes.get(plan, [])), want)
        ]
        for plan, more in self._run_tasks(tasks, wants).items():
            outcomes.setdefault(plan, []).extend(more)

    def _run_tasks(
        self, tasks: list[tuple[Plan, int]], plans: Sequence[tuple[Plan, int]]
    ) -> dict[Plan, list[Outcome]]:
        # work nobody announced still shows (a caller of `run` alone); methods announce theirs
        self.planned = max(self.planned, self.rollouts + len(tasks))
        grouped: dict[Plan, list[Outcome]] = {plan: [] for plan, _ in plans}
        rollout_async = getattr(self._drive, "arollout", None)
        if self.shipper is not None:
            made = zip(tasks, self.shipper([(self.asked(p), r) for p, r in tasks]), strict=True)
            self._collect((self._received(task, got) for task, got in made), grouped)
        elif rollout_async is not None and getattr(self._drive, "asynchronous", False):
            self._collect(self._concurrently(rollout_async, tasks), grouped)
        elif self.config.workers == 1:
            self._collect(map(self._one, tasks), grouped)
        else:
            with ThreadPoolExecutor(self.config.workers, thread_name_prefix="rollout") as pool:
                self._collect(pool.map(self._one, tasks), grouped)
        return grouped

    def _concurrently(
        self, rollout: Callable[[Plan, int], Awaitable[Rollout]], tasks: list[tuple[Plan, int]]
    ) -> list[Outcome]:
        """An async agent's rollouts, ``concurrency`` at a time on one event loop, in task order
        (a rollout is a pure function of its task: the order they finish in changes nothing)."""

        async def all_of() -> list[Outcome]:
            gate = asyncio.Semaphore(self.config.concurrency)

            async def one(task: tuple[Plan, int]) -> Outcome:
                async with gate:
                    try:
                        made = await rollout(self.asked(task[0]), task[1])
                    except RolloutError as exc:
                        return self._lost(task, exc)
                return self._scored(task[0], made)

            return list(await asyncio.gather(*(one(task) for task in tasks)))

        return asyncio.run(all_of())

    def _collect(self, outcomes: Iterable[Outcome], grouped: dict[Plan, list[Outcome]]) -> None:
        for outcome in outcomes:
            grouped[outcome.plan].append(outcome)
            self.rollouts += 1
            self.step_executions += outcome.step_executions
            self.resampler_errors += outcome.resampler_error is not None
            self.resampling += outcome.step_executions > 0 or outcome.resampler_error is not None
            self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.rollouts, self.planned)
        if self.spending is not None:
            spent = Spent(self.step_executions, self.calls_announced, self.config.budget)
            self.spending(spent)
