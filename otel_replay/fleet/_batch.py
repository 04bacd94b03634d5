"""Attributing many runs: each run one unit of work spread over the executor, each report kept in
the store as it comes back, runs already answered for the same question skipped.

Runs come back in the order they were selected. Each is kept (by the caller's ``keep``) as soon as
it and every run before it are done, so an interrupted batch loses only the runs still under way,
and the same command run again goes on from there (`pending` leaves out what the store holds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.attribution import (
    AttributionConfig,
    AttributionResult,
    RunJob,
    attribute_job,
    config_digest,
    job_of,
)
from otel_replay.errors import ReplayError
from otel_replay.executors import Processes, RayExecutor, Threads
from otel_replay.resamplers import UserCode
from otel_replay.store import Store


@dataclass(frozen=True, slots=True)
class Attributed:
    """One run of a batch: its result, or the error that stopped it (the batch goes on)."""

    job: RunJob
    result: AttributionResult | None
    error: str | None


class RunsWork:
    """An executor's work: whole runs, each attributed where it lands (its rollouts one by one:
    the runs are what is spread)."""

    def prepare(self) -> None:
        return None

    def run(self, state: None, job: RunJob) -> tuple[AttributionResult | None, str | None]:
        try:
            return attribute_job(job), None
        except ReplayError as exc:
            return None, str(exc)


def pending(
    store: Store, runs: Sequence[str], config: AttributionConfig, code: UserCode, force: bool
) -> tuple[list[str], list[str]]:
    """The runs still to attribute, and those the store already holds a report for (skipped
    unless ``force``)."""
    if force:
        return list(runs), []
    done = store.reported(config_digest(config, code))
    return [r for r in runs if r not in done], [r for r in runs if r in done]


def attribute_runs(
    store: Store,
    runs: Sequence[str],
    config: AttributionConfig,
    code: UserCode,
    executor: Threads | Processes | RayExecutor,
    done: Callable[[int], None] | None = None,
) -> Iterator[Attributed]:
    """Attribute ``runs`` (full ids) over ``executor``, yielding each as it is done, in order."""
    serial = dataclasses.replace(config, workers=1)
    code.registry()  # loaded once here: its mistakes before any run is read or shipped
    elsewhere = not executor.on_this_machine  # a cluster's workers get the tool results along
    jobs = [job_of(store, run, serial, code, elsewhere=elsewhere) for run in runs]
    results: Iterator[Any] = executor.map(RunsWork(), jobs, done, batch_size=1)
    for job, (result, error) in zip(jobs, results, strict=True):
        yield Attributed(job, result, error)
