"""`sweep_stored`: the fragility map of a stored run with the user's code, as ``agent-replay
sweep`` makes it: the code loaded first (its mistakes before anything is read), the run read, the
built-ins added and the driver chosen as `attribute_stored` chooses them (the chat loop for a
tool-calling run, a live ``--agent``, else the walk of the record)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import NamedTuple

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._engine import Progress, Spending
from otel_replay.attribution._run import Executor, RolloutWork, _prepare, job_of
from otel_replay.attribution._sweep import SweepCost, SweepResult, sweep, sweep_cost
from otel_replay.executors import ExecutorKind
from otel_replay.resamplers import Judge, UserCode
from otel_replay.store import Store


def sweep_stored(
    store: Store,
    id_or_prefix: str,
    faults: Sequence[str],
    steps: Sequence[str] | None,
    config: AttributionConfig,
    code: UserCode,
    progress: Progress | None = None,
    spending: Spending | None = None,
    executor: Executor | None = None,
) -> SweepResult:
    """`sweep` the stored run ``id_or_prefix`` with ``code`` (module docstring). ``executor`` (a
    process pool, Ray) runs the rollouts elsewhere, in batches, each worker building the driver
    once from the job, as `attribute_stored`'s do; the result is the same as on threads."""
    registry = code.registry()
    elsewhere = executor is not None and not executor.on_this_machine
    job = job_of(store, id_or_prefix, config, code, elsewhere=elsewhere)
    prepared = _prepare(job, registry)
    shipper = None
    if executor is not None and executor.kind is not ExecutorKind.THREADS:
        shipper = partial(executor.map, RolloutWork(job))
    try:
        return sweep(
            prepared.trajectory, prepared.registry, faults, steps, config,
            driver=prepared.driver, progress=progress, spending=spending, how=prepared.how,
            shipper=shipper,
        )  # fmt: skip
    finally:
        prepared.built.close()
        if isinstance(prepared.registry.verifier, Judge):
            prepared.registry.verifier.close()


class PlannedSweep(NamedTuple):
    """What `sweep_cost_stored` plans: the ``cost``, and ``how`` the rollouts would run."""

    cost: SweepCost
    how: str


def sweep_cost_stored(
    store: Store,
    id_or_prefix: str,
    faults: Sequence[str],
    steps: Sequence[str] | None,
    config: AttributionConfig,
    code: UserCode,
) -> PlannedSweep:
    """What `sweep_stored` would cost, and how it would roll out, calling no resample function."""
    registry = code.registry()
    prepared = _prepare(job_of(store, id_or_prefix, config, code), registry)
    prepared.built.close()
    driven = prepared.driver is not None
    cost = sweep_cost(prepared.trajectory, prepared.registry, faults, steps, config, driven)
    return PlannedSweep(cost, prepared.how)
