"""The trace-driven rollout: walk the recorded steps, applying a plan.

Held steps are served from the record; resampled steps call their resample function with the
counterfactual history so far; observed-only steps (no resample function) are always held. Every
resampled step gets its own ``random.Random`` (`otel_replay.resamplers.RolloutSeed`: the same
stream the chat loop and a live agent hand the same step): holding one step never shifts the random
numbers another sees.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.errors import (
    CanonicalJSONError,
    InterventionError,
    ReplayError,
    RolloutError,
    UnservableError,
    VerifierError,
    setting,
)
from otel_replay.hashing import check_json_value
from otel_replay.model import Step, StepKind, StepStatus, Trajectory
from otel_replay.redaction import Redactor, patterns_of, redact_error
from otel_replay.replay._patch import apply_patch
from otel_replay.replay._plan import Action, Plan
from otel_replay.resamplers import (
    NO_DRAWS,
    Draws,
    History,
    Registration,
    Registry,
    RolloutContext,
    RolloutSeed,
    StepFailed,
    describe,
    noted_call,
    noted_unanswered,
    standing_in,
    ways_to_resample,
)


@dataclass(frozen=True, slots=True)
class Rollout:
    """One counterfactual run: its trajectory, how many resample functions it called, what the
    built-in tool functions drew for it (noted by whoever ran it: `otel_replay.resamplers.drawing`),
    and which of those calls were model calls: for each, the recorded step it stood in for (None:
    a call the record does not hold), so what it cost can be read from what the record used."""

    plan: Plan
    index: int
    trajectory: Trajectory
    step_executions: int
    draws: Draws = NO_DRAWS
    model_steps: tuple[int | None, ...] = ()


def registrations(factual: Trajectory, registry: Registry) -> list[Registration | None]:
    """The resample function of each recorded step (None: observed-only), looked up once."""
    return [registry.lookup(step) for step in factual.steps]


def rollout(
    factual: Trajectory,
    plan: Plan,
    registry: Registry | Sequence[Registration | None],
    seed: int,
    index: int,
) -> Rollout:
    """Roll ``plan`` out once (rollout number ``index``).

    ``registry`` may be the looked-up `registrations` of ``factual``, when rolling out many times.
    """
    found = registrations(factual, registry) if isinstance(registry, Registry) else registry
    streams = RolloutSeed.of(seed, plan, index)
    history: list[Step] = []
    executions = 0
    model_steps: list[int | None] = []
    for step in factual.steps:
        intervention = plan.at(step.index)
        if intervention.action is Action.REMOVE:
            continue
        if intervention.action is Action.FORCE:
            if intervention.error is not None:
                history.append(step.with_result(None, StepStatus.ERROR, intervention.error))
            else:
                history.append(step.with_result(intervention.output, StepStatus.OK, None))
            continue
        registration = (
            found[step.index] if intervention.action in (Action.RESAMPLE, Action.EDIT) else None
        )
        recorded = step
        swap = plan.model_from
        if (
            swap is not None
            and registration is not None
            and step.kind is StepKind.LLM
            and step.index >= swap[0]
        ):  # a model turn run again: asked of the swapped-in model
            step = standing_in(recorded, {**step.inputs, "model": swap[1]})
        if intervention.action is Action.EDIT:
            if registration is None:
                raise InterventionError(
                    f"{setting('edit')} re-runs step {step.index} ({step.kind.value} {step.name!r}) on the "
                    f"edited inputs through its resample function, and it has none: "
                    f"{ways_to_resample(step.kind, step.name)}"
                )
            step = standing_in(recorded, apply_patch(step.inputs, intervention.output))
        if registration is None:
            history.append(step)
            continue
        ctx = RolloutContext.for_step(
            streams, recorded, step.index, History(history, len(history)), factual, plan, live=False
        )
        executions += 1
        if step.kind is StepKind.LLM:
            model_steps.append(step.index)
        noted_call(step.kind is StepKind.LLM, step.index)  # paid even if the rollout ends here
        try:
            output = registration.function(step, ctx)
        except StepFailed as failure:
            history.append(step.with_result(None, StepStatus.ERROR, str(failure) or "failed"))
            continue
        except UnservableError:
            noted_unanswered(step.kind is StepKind.LLM, step.index)  # nothing was called
            raise  # nothing can answer the call: the rollout ends here
        except Exception as exc:
            said = Redactor(patterns_of(factual)).text(str(exc))  # as the run is redacted
            raise _failure(step, registration, f"raised {type(exc).__name__}: {said}") from exc
        try:
            check_json_value(output, "output")
        except CanonicalJSONError as exc:
            raise _failure(
                step, registration, f"returned a value that is not JSON: {exc}"
            ) from None
        history.append(step.with_result(output, StepStatus.OK, None))
    # Steps keep their factual index (a removed step leaves a gap). Held steps keep their hashes; a
    # changed step's chain hash no longer describes it and is cleared: rollouts are scored, not stored.
    trajectory = Trajectory(
        id=factual.id,
        steps=tuple(history),
        metadata={"plan": plan.identity, "rollout": index},
    )
    return Rollout(plan, index, trajectory, executions, model_steps=tuple(model_steps))


class TraceDriver:
    """``driver(plan, index)``: the walk over ``factual``'s record, its resample functions looked
    up once (the engine's default driver, and what a worker of another process builds)."""

    #: a plan that resamples nothing reproduces the record: the engine runs it once
    walks_record = True

    def __init__(self, factual: Trajectory, registry: Registry, seed: int) -> None:
        self.factual, self.seed = factual, seed
        self._found = registrations(factual, registry)

    def __call__(self, plan: Plan, index: int) -> Rollout:
        return rollout(self.factual, plan, self._found, self.seed, index)


def _failure(step: Step, registration: Registration, what: str) -> RolloutError:
    function = describe(registration.function)
    return RolloutError(
        f"step {step.index} ({step.kind.value} {step.name!r}): resample function {function} {what}",
        step_index=step.index,
        function=function,
    )


def score(verifier: Callable[[Trajectory], Any], trajectory: Trajectory) -> float:
    """The verifier's outcome for ``trajectory``, checked to be a finite number. An error
    agent-replay raised in it (a judge's unreadable reply) is passed on as it is: it says what
    went wrong in its own words. What either says is redacted with the run's patterns."""
    patterns = patterns_of(trajectory)
    try:
        value = verifier(trajectory)
    except ReplayError as exc:
        raise redact_error(exc, patterns) from exc.__cause__
    except Exception as exc:
        said = Redactor(patterns).text(str(exc))
        raise VerifierError(
            f"verifier {describe(verifier)} raised {type(exc).__name__}: {said}"
        ) from exc
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise VerifierError(
            f"verifier {describe(verifier)} returned {value!r} ({type(value).__name__}); it must "
            "return a number, 1.0 = success … 0.0 = failure"
        )
    return float(value)
