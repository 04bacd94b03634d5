"""Recorded outcomes as a world model: ``--tools recorded``.

A tool step is resampled by drawing from the results the store holds for the same tool called with
the same arguments (the same ``op_key``) across every imported run — its outputs and its failures,
each as often as it was recorded. A call with no other recorded result is held: served as recorded.
No code, no tool access: what production already answered is what a rollout may see.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from otel_replay.hashing import canonical_json, op_key
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.resamplers._context import RolloutContext, StepFailed
from otel_replay.store import Store

Result = tuple[Any, str, "str | None"]


class RecordedOutcomes:
    """The resample function of ``--tools recorded`` (its description counts each tool's recorded
    alternatives)."""

    def __init__(self, results: dict[str, list[Result]], alternatives: dict[str, int]) -> None:
        self._results = results
        shown = ", ".join(f"{name}: {n}" for name, n in sorted(alternatives.items()))
        self.__qualname__ = f"recorded_outcomes({shown})"
        self.__module__ = "builtin"

    def __call__(self, step: Step, ctx: RolloutContext) -> Any:
        key = step.op_key or op_key(step.kind.value, step.name, step.inputs)
        results = self._results.get(key, [])
        if ctx.recorded is None and results:  # a call this run never made: what the store holds
            output, status, error = ctx.rng.choice(results)
        elif len({_identity(r) for r in results}) < 2:  # nothing else to draw: hold the step
            output, status, error = step.output, step.status.value, step.error
        else:
            output, status, error = ctx.rng.choice(results)
        if status == StepStatus.ERROR.value:
            raise StepFailed(error or "failed")
        return output


def recorded_outcomes(store: Store, trajectory: Trajectory) -> RecordedOutcomes:
    """Draws for the tool calls of ``trajectory`` from everything ``store`` recorded for them."""
    calls = [s for s in trajectory.steps if s.kind is StepKind.TOOL]
    results = store.results_of(s.op_key for s in calls)
    alternatives: Counter[str] = Counter()
    for name in {s.name for s in calls}:
        keys = {s.op_key for s in calls if s.name == name}
        alternatives[name] = sum(len({_identity(r) for r in results[k]}) for k in keys)
    return RecordedOutcomes(results, dict(alternatives))


def _identity(result: Result) -> bytes:
    return canonical_json(list(result))
