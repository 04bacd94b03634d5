"""`attribute_stored`: attribute a stored run with the user's code, as ``agent-replay attribute`` does.

What a run's rollouts need is one picklable `RunJob` (the run, the user's code as the command line
names it, the configuration, and for ``--tools recorded`` the function that draws from the store's
recorded tool results), so an executor can ship it to other processes or machines once and build
the driver there (`RolloutWork`). That function reads the store lazily, by each call's op_key:
a worker on this machine opens it read-only; a job sent where the store cannot be read
(``elsewhere``: a Ray cluster) carries every recorded result of the run's tools instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

from otel_replay.attribution._api import attribute
from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._cost import PlannedCost, planned_cost
from otel_replay.attribution._engine import Progress, Spending, rolled_out
from otel_replay.attribution._results import AttributionResult
from otel_replay.attribution._suspect import JudgeServer
from otel_replay.attribution._variation import Variation, is_live, variations
from otel_replay.errors import AttributionError, setting
from otel_replay.executors import ExecutorKind, Processes, RayExecutor, Threads
from otel_replay.model import Trajectory
from otel_replay.replay import (
    Driver,
    Plan,
    Rollout,
    TraceDriver,
    agent_driver,
    chat_driver,
    instrument,
    instrumented_with,
)
from otel_replay.replayable import check_attributable
from otel_replay.resamplers import (
    BuiltIns,
    Judge,
    RecordedOutcomes,
    Registry,
    UserCode,
    add_built_ins,
    load_object,
    tool_draws,
)
from otel_replay.store import Store

Executor = Threads | Processes | RayExecutor


def attribute_stored(
    store: Store,
    id_or_prefix: str,
    config: AttributionConfig,
    code: UserCode,
    progress: Progress | None = None,
    spending: Spending | None = None,
    executor: Executor | None = None,
    told: Told | None = None,
) -> AttributionResult:
    """Load ``code`` (its mistakes are reported before anything runs), then the run, then attribute
    it: by re-running ``code.agent`` under the replay context when one is named, else by walking
    the record with the registered resample functions (with ``code.tools``, a built-in one for the
    tool steps no registration covers: a user's own wins). ``executor`` (a process pool, Ray) runs
    the rollouts elsewhere, in batches; the result is the same as on this process's threads.
    ``told(variations, run)``: called before any rollout with which steps resampling can vary,
    and by what (`otel_replay.attribution._variation`), of the run as the rollouts see it."""
    registry = code.registry()  # loaded once, first: its mistakes before anything is read
    elsewhere = executor is not None and not executor.on_this_machine
    job = job_of(store, id_or_prefix, config, code, elsewhere=elsewhere)
    return attribute_job(job, progress, spending, executor, registry, told)


#: What is told, before any rollout, of the steps resampling can vary (`attribute_stored`).
Told = Callable[[tuple[Variation, ...], Trajectory], None]


def attribute_job(
    job: RunJob,
    progress: Progress | None = None,
    spending: Spending | None = None,
    executor: Executor | None = None,
    registry: Registry | None = None,
    told: Told | None = None,
) -> AttributionResult:
    """`attribute_stored` of a run already read (in whichever process the job was shipped to);
    ``registry``: the job's code, loaded already (else it is loaded here)."""
    prepared = _prepare(job, registry)
    if told is not None:
        live = is_live(prepared.driver)
        told(variations(prepared.trajectory, prepared.registry, live), prepared.trajectory)
    shipper = None
    if executor is not None and executor.kind is not ExecutorKind.THREADS:
        work = RolloutWork(job)
        shipper = partial(executor.map, work)
    try:
        result = attribute(
            prepared.trajectory,
            prepared.registry,
            job.config,
            progress,
            prepared.driver,
            spending,
            shipper,
            judge_server(job.code),
        )
    finally:
        prepared.built.close()
        if isinstance(prepared.registry.verifier, Judge):
            prepared.registry.verifier.close()
    return dataclasses.replace(result, notes=(*result.notes, *prepared.notes), driver=prepared.how)


@dataclass(frozen=True, slots=True)
class RunJob:
    """Everything rollouts of one stored run need, and nothing that is not data: the run as stored,
    the user's code as named, the configuration, the draws from the store's recorded tool results
    (when ``code.tools`` is set)."""

    trajectory: Trajectory
    code: UserCode
    config: AttributionConfig
    recorded: RecordedOutcomes | None = None


def job_of(
    store: Store,
    id_or_prefix: str,
    config: AttributionConfig,
    code: UserCode,
    *,
    elsewhere: bool = False,
) -> RunJob:
    """The job of attributing a stored run (its code is named, not loaded: callers load it once
    first, so its mistakes are reported before anything is read or shipped). ``elsewhere``: the
    job runs where the store cannot be read (a Ray cluster), so ``--tools recorded`` is sent every
    result of the run's tools now rather than reading the store as rollouts make calls."""
    trajectory = store.get(id_or_prefix)
    return RunJob(
        trajectory, code, config, tool_draws(code, store, trajectory, elsewhere=elsewhere)
    )


class RolloutWork:
    """An executor's `otel_replay.executors.Work`: the rollouts of one `RunJob`, the driver built
    once per worker, a rollout an error ended handed back as `Ended` (with what it had called)."""

    def __init__(self, job: RunJob) -> None:
        self.job = job

    def prepare(self) -> Callable[[Plan, int], Rollout]:
        prepared = _prepare(self.job)
        if prepared.driver is not None:
            return prepared.driver
        return TraceDriver(prepared.trajectory, prepared.registry, self.job.config.seed)

    def run(self, drive: Callable[[Plan, int], Rollout], task: tuple[Plan, int]) -> Any:
        return rolled_out(drive, *task)


class Planned(NamedTuple):
    """What `planned_cost_stored` plans: the ``cost``, and ``how`` the rollouts would run (the
    driver, in words)."""

    cost: PlannedCost
    how: str


def planned_cost_stored(
    store: Store, id_or_prefix: str, config: AttributionConfig, code: UserCode
) -> Planned:
    """What `attribute_stored` would cost (rollouts, resample-function calls), and how it would
    roll out, without running anything (``agent-replay attribute --dry-run``)."""
    registry = code.registry()
    prepared = _prepare(job_of(store, id_or_prefix, config, code), registry)
    prepared.built.close()
    driven = prepared.driver is not None
    cost = planned_cost(
        prepared.trajectory, prepared.registry, config, driven, is_live(prepared.driver)
    )
    return Planned(cost, prepared.how)


def judge_server(code: UserCode) -> JudgeServer:
    """Where ``--suspect judge`` asks: the ``--judge-*`` server and model when given, else the
    ``--llm-*`` ones (`JudgeServer`)."""
    judge, llm = code.judge, code.llm or code.suspect_model
    return JudgeServer(
        base_url=(judge.base_url if judge else None) or (llm.base_url if llm else None),
        model=(judge.model if judge else None) or (llm.model if llm else None),
    )


@dataclass
class _Prepared:
    trajectory: Trajectory
    registry: Registry
    driver: Callable[[Plan, int], Rollout] | None
    how: str
    notes: list[str]
    built: BuiltIns


def _prepare(job: RunJob, registry: Registry | None = None) -> _Prepared:
    code, config, trajectory = job.code, job.config, job.trajectory
    check_attributable(trajectory)  # before any user code loads: the run alone decides it
    registry = registry if registry is not None else code.registry()
    built = add_built_ins(registry, code, trajectory, job.recorded, config.swap_model)
    notes = list(built.notes)
    driver: Callable[[Plan, int], Rollout] | None = None
    how = "trace" if not code.agent else f"agent:{code.agent}"
    if code.agent:
        sdks = code.instrument or instrumented_with(trajectory)  # as the run was recorded
        if sdks:
            instrument(*sdks)
        driver = agent_driver(
            trajectory, load_object(code.agent, setting("agent")), registry, config.seed
        )
    elif config.driver is not Driver.TRACE:
        chat = chat_driver(trajectory, registry, config.seed, config.max_turns)
        if chat is None and config.driver is Driver.CHAT:
            raise AttributionError(
                f"run {trajectory.id} is not a tool-calling chat (model steps with messages whose "
                f"turns ask for the tool steps that follow them); use {setting('driver', 'trace')}"
            )
        if chat is not None:
            driver, trajectory = chat
            how = "chat: a tool-calling chat, re-driven as its loop"
        else:
            how = "trace: not a tool-calling chat, so the record is walked"
    return _Prepared(trajectory, registry, driver, how, notes, built)
