"""Runs rollouts of many plans behind one executor interface, and scores them.

Rollout ``r`` of a plan is a pure function of ``(seed, plan, r)``, so the executor only changes how
fast results arrive, never what they are: serial, or ``workers`` threads (resample functions often
wait on remote models), or a `Shipper` that runs them elsewhere (a process pool, Ray: see
`otel_replay.executors`), in batches, and hands them back in order. Two drivers produce rollouts:
the trace-driven walk over the recorded steps, and the live agent re-run under the replay context.

A rollout is scored by the verifier unless it is no evidence about the task (`Outcome.counts`):
one that could not be served (a call nothing can answer) and one whose agent crashed are neither
successes nor failures, left out of every estimate and counted. Once half the rollouts of a plan
(or of all) are such, the engine stops (`EvidenceMissing`): more batches could decide nothing.
What ``--tools recorded`` drew for each rollout is noted with it (`rolled_out`), on whichever
worker it ran, and added up here in task order, as everything else is; so is what each rollout
spent (`otel_replay.attribution._spend`: model calls and their tokens, tool calls, free draws).
Every call a rollout makes is paid, whether or not its rollout is evidence: a rollout an error
ended (a call nothing could answer, a resample function's error) comes back with what it had
called by then (`Ended`), and the rollouts left out of the estimates are counted in the cost all
the same, their part shown apart (`Engine.left_out_spend`). No rollout is ever run and then
dropped: a batch's rollouts are all collected before a test reads them, so the cost is what the
model server answered, on any executor and for any number of workers.
The first ``keep_rollouts`` rollouts of each plan are kept (`kept`), each a run of its own naming
the run and the plan it rolled out.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from otel_replay.attribution._config import AttributionConfig, BudgetUnit, OnResamplerError
from otel_replay.attribution._results import KeptRollout
from otel_replay.attribution._spend import NOTHING, Pricing, Spend
from otel_replay.errors import RolloutError, UnservableError
from otel_replay.hashing import canonical_json, digest
from otel_replay.model import Trajectory
from otel_replay.redaction import Redactor, patterns_of, redact_run
from otel_replay.replay import Plan, Rollout, StepError, TraceDriver, score
from otel_replay.resamplers import (
    NO_DRAWS,
    Call,
    DrawLog,
    Draws,
    Registry,
    VerifierFunction,
    drawing,
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One scored rollout. ``trajectory`` is None when the rollout failed on a resampler error or
    could not be served.

    A rollout that is no evidence about the task is neither a success nor a failure (``failed``
    is False, `counts` False, and estimates leave it out): one that could not be served
    (``unservable``: a call nothing can answer, `otel_replay.errors.UnservableError`), and one
    whose agent raised (``crash``: the live agent, or the chat loop's own code). An agent that
    raised the `StepError` of a failing step it did not handle was failed by the world, not by its
    code: that rollout is scored as any other."""

    plan: Plan
    index: int
    score: float
    failed: bool
    step_executions: int
    trajectory: Trajectory | None
    resampler_error: str | None = None
    unservable: Call | None = None
    crash: str | None = None  # "Type: message", as the agent raised it
    draws: Draws = NO_DRAWS
    spend: Spend = NOTHING  # the ``step_executions`` split by what they cost

    @property
    def counts(self) -> bool:
        """Whether the rollout is evidence: it was served and its agent did not crash."""
        return self.unservable is None and self.crash is None


@dataclass(frozen=True, slots=True)
class Ended:
    """A rollout an error ended (a call nothing could answer, a resample function's error): the
    error, and what the rollout had drawn and called before it (its calls were paid)."""

    error: RolloutError
    draws: Draws = NO_DRAWS


#: ``ship(tasks)``: the rollouts of ``tasks`` made elsewhere, in order (`rolled_out` of each); a
#: rollout an error ended comes back as `Ended`.
Shipper = Callable[[list[tuple[Plan, int]]], Iterable[Rollout | Ended]]

#: ``progress(completed, total)``: rollouts run so far, and rollouts announced in all.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Spent:
    """What an attribution has spent so far in the budget's ``unit`` (resample-function calls,
    model calls or tokens: `BudgetUnit`; calls when there is no budget), what its batches
    announced so far will have spent when they end, and the budget, if any."""

    amount: int
    announced: int
    budget: int | None
    unit: BudgetUnit = BudgetUnit.CALLS

    @property
    def batch(self) -> int:
        """What is still to come in the batches announced: what remains before the next
        decision."""
        return max(0, self.announced - self.amount)


#: ``spending(spent)``: called as `Progress` is, with what was spent.
Spending = Callable[[Spent], None]


#: A batch after which half the rollouts of a plan that has run at least this many (or half of
#: at least twice as many rollouts in all) are no evidence ends the attribution: what is left is
#: not a fair sample, so no further batch can decide anything, and each would still cost calls.
EVIDENCE_FLOOR = 8


class EvidenceMissing(Exception):
    """The engine stopped: too many rollouts were no evidence (`EVIDENCE_FLOOR`), of ``plan``
    (``left_out`` of its ``ran``), or of all (``plan`` None). Raised out of the methods, caught by
    `otel_replay.attribution.attribute`, never seen by a user."""

    def __init__(self, plan: Plan | None, ran: int, left_out: int) -> None:
        super().__init__(f"{left_out} of {ran} rollouts are no evidence")
        self.plan, self.ran, self.left_out = plan, ran, left_out


#: How `run_agent` words an agent that raised the `StepError` of a failing step it did not handle.
_WORLD_FAILED = f"{StepError.__name__}: "


def rolled_out(drive: Callable[[Plan, int], Rollout], plan: Plan, index: int) -> Rollout | Ended:
    """``drive(plan, index)``, with what the built-in tool functions drew for it and the calls it
    made; a rollout an error ended as `Ended`, with what it drew and called before the error."""
    with drawing() as log:
        try:
            made = drive(plan, index)
        except RolloutError as exc:
            return _ended(exc, log)
    return _with(made, log)


def _ended(exc: RolloutError, log: DrawLog) -> Ended:
    draws = log.draws()
    if isinstance(exc, UnservableError):
        exc.draws = draws
    return Ended(exc, draws)


def _with(made: Rollout, log: DrawLog) -> Rollout:
    return dataclasses.replace(made, draws=log.draws()) if log.noted else made


#: What a kept rollout shares with the run it rolled out, when its own metadata does not say.
_ROLLOUT_SHARES = frozenset({"service", "agent", "input", "instrument"})


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
        resamplable: Sequence[int] | None = None,
    ) -> None:
        self.factual = factual
        # the run's redact patterns: what a rollout keeps, the crashes and errors it reports, the
        # repair it finds
        self.scrub = Redactor(patterns_of(factual))
        self.shipper = shipper
        self.registry = registry
        self.verifier = verifier
        self.config = config
        self.progress = progress
        self.spending = spending
        self.announced = 0  # in the budget's unit
        self.rollouts = 0
        self.planned = 0
        self.step_executions = 0
        self.spend = NOTHING  # the same calls, split by what they cost
        self.left_out_spend = NOTHING  # of them, what the rollouts left out of the estimates spent
        self.resampler_errors = 0
        self.resampling = 0  # rollouts that called a resample function (or tried to)
        # what the rollouts could not tell, and where ``--tools recorded`` drew from, in task order
        # (so the first crash is the same on every executor)
        self.unservable: Counter[Call] = Counter()  # calls nothing answered: rollouts each ended
        self.crashes = 0
        self.first_crash: str | None = None
        self.draws: Counter[str] = Counter()  # stored run -> results drawn from it
        self.faults: Counter[Call] = Counter()  # calls nothing recorded, failed as faults
        self.simulated: Counter[Call] = Counter()  # tool calls a model played (--tools simulate)
        self.simulated_tokens: int | None = 0  # their tokens (None: some were not counted)
        self._tally: dict[Plan, tuple[int, int]] = {}  # per plan: rollouts run, left out
        self._kept: dict[tuple[str, int], KeptRollout] = {}  # by plan (as it ran) and number
        # the trace-driven rollout unless a driver (the chat loop, a live agent) is given
        self._drive = driver or TraceDriver(factual, registry, config.seed)
        # the trace walk: a plan that resamples nothing reproduces the record, so it runs once
        self.walks_record = bool(getattr(self._drive, "walks_record", False))
        if resamplable is None:
            resamplable = resamplable_steps(factual, registry, driver is not None)
        #: what a rollout resampling each step costs, read from the record
        self.pricing = Pricing.of(factual, registry, resamplable)

    @property
    def unit(self) -> BudgetUnit:
        """What the budget counts (calls without a budget)."""
        return self.config.budget_unit if self.config.budget is not None else BudgetUnit.CALLS

    @property
    def charged(self) -> int:
        """What has been spent, in the budget's `unit`."""
        return self.pricing.charge(self.spend, self.unit)

    def announce(self, rollouts: int, spend: Spend = NOTHING) -> None:
        """``rollouts`` more will run (spending ``spend``, when known)."""
        self.planned += rollouts
        self.announced = max(self.announced, self.charged) + self.pricing.charge(spend, self.unit)
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
        return self._received(task, rolled_out(self._drive, self.asked(task[0]), task[1]))

    def _received(self, task: tuple[Plan, int], got: Rollout | Ended) -> Outcome:
        if isinstance(got, Ended):
            return self._lost(task, got)
        return self._scored(task[0], got)

    def _lost(self, task: tuple[Plan, int], ended: Ended) -> Outcome:
        """A rollout an error ended: unservable (a call nothing can answer), or a resample
        function's error: a failure, or (by default) the end. Either way the calls it made
        before the error count (`Ended.draws`; the call nothing could answer is not among them:
        nothing was called for it)."""
        exc, draws = ended.error, ended.draws
        if isinstance(exc, UnservableError):
            spend = self.pricing.spent(draws.calls, draws.model_steps, draws.free, draws.tokens)
            call = Call(exc.tool, exc.arguments)
            return Outcome(
                task[0], task[1], 0.0, False, draws.calls, None,
                unservable=call, draws=draws, spend=spend,
            )  # fmt: skip
        if self.config.on_resampler_error is not OnResamplerError.FAIL_ROLLOUT:
            raise exc
        spend = self.pricing.spent(draws.calls, draws.model_steps, draws.free, draws.tokens)
        return Outcome(
            task[0], task[1], 0.0, True, draws.calls, None, self.scrub.text(str(exc)),
            draws=draws, spend=spend,
        )  # fmt: skip

    def _scored(self, plan: Plan, result: Rollout) -> Outcome:
        crash = result.trajectory.metadata.get("agent_error")
        if crash is not None and not str(crash).startswith(_WORLD_FAILED):
            return Outcome(
                plan, result.index, 0.0, False, result.step_executions, result.trajectory,
                crash=self.scrub.text(str(crash)), draws=result.draws, spend=self._spent(result),
            )  # fmt: skip
        value = score(self.verifier, result.trajectory)
        failed = value < self.config.fail_threshold
        return Outcome(
            plan, result.index, value, failed, result.step_executions, result.trajectory,
            draws=result.draws, spend=self._spent(result),
        )  # fmt: skip

    def _spent(self, result: Rollout) -> Spend:
        draws = result.draws
        return self.pricing.spent(
            result.step_executions, result.model_steps, draws.free, draws.tokens
        )

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
        if self.left_out:
            self._check_evidence(grouped)
        return grouped

    def _check_evidence(self, batch: dict[Plan, list[Outcome]]) -> None:
        """After a batch: stop (`EvidenceMissing`) when half of the rollouts of a plan the batch
        ran (`EVIDENCE_FLOOR` of them at least), or half of all, are no evidence."""
        for plan in batch:
            ran, left_out = self._tally.get(plan, (0, 0))
            if ran >= EVIDENCE_FLOOR and 2 * left_out >= ran:
                raise EvidenceMissing(self.asked(plan), ran, left_out)
        if self.rollouts >= 2 * EVIDENCE_FLOOR and 2 * self.left_out >= self.rollouts:
            raise EvidenceMissing(None, self.rollouts, self.left_out)

    def _concurrently(
        self, rollout: Callable[[Plan, int], Awaitable[Rollout]], tasks: list[tuple[Plan, int]]
    ) -> list[Outcome]:
        """An async agent's rollouts, ``concurrency`` at a time on one event loop, in task order
        (a rollout is a pure function of its task: the order they finish in changes nothing)."""

        async def all_of() -> list[Outcome]:
            gate = asyncio.Semaphore(self.config.concurrency)

            async def one(task: tuple[Plan, int]) -> Outcome:
                async with gate:
                    with drawing() as log:
                        try:
                            made = await rollout(self.asked(task[0]), task[1])
                        except RolloutError as exc:
                            return self._lost(task, _ended(exc, log))
                return self._scored(task[0], _with(made, log))

            return list(await asyncio.gather(*(one(task) for task in tasks)))

        return asyncio.run(all_of())

    def _collect(self, outcomes: Iterable[Outcome], grouped: dict[Plan, list[Outcome]]) -> None:
        for outcome in outcomes:
            grouped[outcome.plan].append(outcome)
            self.rollouts += 1
            self.step_executions += outcome.step_executions
            self.spend += outcome.spend
            if not outcome.counts:
                self.left_out_spend += outcome.spend
            self.resampler_errors += outcome.resampler_error is not None
            # (a rollout a call nothing could answer ended is not one that resampled)
            self.resampling += outcome.unservable is None and (
                outcome.step_executions > 0 or outcome.resampler_error is not None
            )
            self.draws.update(outcome.draws.runs)
            self.faults.update(outcome.draws.faults)
            self.simulated.update(outcome.draws.simulated)
            for tokens in outcome.draws.simulated_tokens:
                known = self.simulated_tokens
                self.simulated_tokens = None if known is None or tokens is None else known + tokens
            if outcome.unservable is not None:
                self.unservable[outcome.unservable] += 1
            if outcome.crash is not None:
                self.crashes += 1
                self.first_crash = self.first_crash or outcome.crash
            ran, left_out = self._tally.get(outcome.plan, (0, 0))
            self._tally[outcome.plan] = (ran + 1, left_out + (not outcome.counts))
            if outcome.index < self.config.keep_rollouts and outcome.trajectory is not None:
                self._keep(outcome, outcome.trajectory)
            self._report()

    def _keep(self, outcome: Outcome, run: Trajectory) -> None:
        """Keep ``outcome``'s run under an id of its own (what rolled it out: the run, the plan
        as it ran, the number, the seed), its metadata naming the run and the plan."""
        plan = self.asked(outcome.plan)
        key = (plan.identity, outcome.index)
        if key in self._kept:  # a plan asked again (the repair's baseline) rolls out the same
            return
        made = [self.factual.id, plan.identity, outcome.index, self.config.seed]
        metadata = {
            **{k: v for k, v in self.factual.metadata.items() if k in _ROLLOUT_SHARES},
            **run.metadata,
            "source": "rollout",
            "format": "rollout",
            "rollout_of": self.factual.id,
            "plan": plan.identity,
            "plan_steps": plan.describe(),
            "rollout": outcome.index,
        }
        kept = dataclasses.replace(
            run,
            id=f"rollout-{digest(canonical_json(made))[:24]}",
            outcome=outcome.score if outcome.counts else run.outcome,
            metadata=metadata,
        )
        # stored and sent as the run it rolls out is: with its patterns applied to all it made
        kept = redact_run(kept, self.scrub.patterns)
        self._kept[key] = KeptRollout(plan.identity, outcome.index, kept, outcome.score)

    @property
    def kept(self) -> tuple[KeptRollout, ...]:
        """The rollouts kept (`AttributionConfig.keep_rollouts`), in the order they ran."""
        return tuple(self._kept.values())

    @property
    def left_out(self) -> int:
        """Rollouts that are no evidence (unservable, crashed), left out of every estimate."""
        return sum(self.unservable.values()) + self.crashes

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.rollouts, self.planned)
        if self.spending is not None:
            self.spending(Spent(self.charged, self.announced, self.config.budget, self.unit))


def resamplable_steps(trajectory: Trajectory, registry: Registry, agent_driven: bool) -> list[int]:
    """Steps that can be resampled: those with a resample function, or with live agent code every
    step the recording did not mark ``resamplable: false``; never a step that read the
    environment (`Step.reads_environment`: a clock, a fresh id), which is the world, not a
    decision."""
    if agent_driven:
        return [s.index for s in trajectory.steps if s.resamplable and not s.reads_environment]
    return [
        s.index
        for s in trajectory.steps
        if registry.lookup(s) is not None and not s.reads_environment
    ]
