"""`attribute`: one failed (or, in credit mode, passing) run in, an `AttributionResult` out."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from otel_replay.attribution._config import AttributionConfig, Method, OnSuccess
from otel_replay.attribution._contrastive import kept_plan, localise
from otel_replay.attribution._engine import Engine
from otel_replay.attribution._repair import search
from otel_replay.attribution._results import (
    AttributionResult,
    Mode,
    Repair,
    ShapleySummary,
    StepAttribution,
    Verdict,
)
from otel_replay.attribution._shapley import shapley
from otel_replay.errors import AttributionError, VerifierError
from otel_replay.model import Trajectory
from otel_replay.replay import Plan, Rollout, score
from otel_replay.resamplers import Registry, describe


def _resamplable(trajectory: Trajectory, registry: Registry, agent_driven: bool) -> list[int]:
    """Steps that can be resampled: those with a resample function, or with live agent code every
    step the recording did not mark ``resamplable: false``."""
    if agent_driven:
        return [s.index for s in trajectory.steps if s.resamplable]
    return [s.index for s in trajectory.steps if registry.lookup(s) is not None]


def planned_rollouts(
    trajectory: Trajectory,
    registry: Registry,
    config: AttributionConfig,
    agent_driven: bool = False,
) -> int:
    """How many rollouts `attribute` will run before any repair search (for progress bars)."""
    resamplable = _resamplable(trajectory, registry, agent_driven)
    total = 0
    if config.method in (Method.CONTRASTIVE, Method.ALL):
        total += (len(resamplable) + 1) * config.rollouts
    if config.method in (Method.SHAPLEY, Method.ALL):
        total += 2 * ((config.permutations + 1) // 2) * (len(resamplable) + 1) + 2 * config.rollouts
    return total


def attribute(
    trajectory: Trajectory,
    registry: Registry,
    config: AttributionConfig | None = None,
    progress: Callable[[int], None] | None = None,
    driver: Callable[[Plan, int], Rollout] | None = None,
) -> AttributionResult:
    """Find the step where ``trajectory``'s failure became inevitable (or, in credit mode, its save).

    Raises:
        VerifierError: no verifier is registered, or it does not return a number.
        AttributionError: the run passed and ``on_success`` is ``error``; nothing is resamplable.
        RolloutError: a resample function raised (unless ``on_resampler_error`` is ``fail-rollout``).

    ``driver`` replaces the trace-driven rollout, e.g. with `otel_replay.replay.agent_driver` to run
    the live agent; then every step is resamplable (its live code re-runs it).
    """
    config = config or AttributionConfig()
    started = time.perf_counter()
    resamplable = _resamplable(trajectory, registry, driver is not None)
    if not resamplable:
        raise AttributionError(
            f"no step of run {trajectory.id} has a resample function; register one with "
            "@resampler(kind, name=...) for the steps that could have gone differently"
        )
    verifier = registry.verifier
    if verifier is None:
        raise VerifierError(
            "no verifier: add a function decorated with @verifier (trajectory -> float, 1.0 = "
            "success … 0.0 = failure) to your resamplers module, or pass --verifier module:function"
        )
    factual_score = score(verifier, trajectory)
    failed = factual_score < config.fail_threshold
    if not failed and config.on_success is OnSuccess.ERROR:
        raise AttributionError(
            f"run {trajectory.id} passed (verifier {describe(verifier)} scored it "
            f"{factual_score:g}, threshold {config.fail_threshold:g}); there is no failure to "
            "attribute. Use --on-success credit to find the step that saved it."
        )
    mode = Mode.FAILURE if failed else Mode.CREDIT
    engine = Engine(trajectory, registry, verifier, config, progress, driver)
    steps: tuple[StepAttribution, ...] = tuple(
        StepAttribution(s.index, s.kind.value, s.name, s.index in resamplable)
        for s in trajectory.steps
    )
    poc: int | None = None
    bracket: tuple[int, int] | None = None
    needed: int | None = None
    repair: Repair | None = None
    repair_note: str | None = None
    summary: ShapleySummary | None = None
    outcomes = {}
    if config.method in (Method.CONTRASTIVE, Method.ALL):
        found = localise(engine, resamplable, mode, config)
        steps, poc, bracket, needed, outcomes = (
            found.steps, found.point_of_commitment, found.bracket, found.rollouts_needed, found.outcomes
        )  # fmt: skip
    if config.method in (Method.SHAPLEY, Method.ALL):
        values, summary = shapley(engine, resamplable, mode, config)
        steps = tuple(
            dataclasses.replace(s, shapley=values[s.index][0], shapley_se=values[s.index][1])
            if s.index in values
            else s
            for s in steps
        )
    if config.repair and mode is Mode.FAILURE:
        if poc is None:
            repair_note = "no repair search: there is no Point of Commitment to repair"
        else:
            kept = kept_plan(len(trajectory.steps), resamplable, resamplable.index(poc))
            repair, repair_note = search(engine, poc, kept, outcomes[f"ablate_from:{poc}"], config)
    if mode is Mode.CREDIT:
        verdict = Verdict.NO_FAILURE  # the located step, if any, is the save point
    else:
        verdict = Verdict.CULPRIT if poc is not None else Verdict.INCONCLUSIVE
    return AttributionResult(
        trajectory_id=trajectory.id,
        mode=mode,
        outcome=factual_score,
        failed=failed,
        steps=steps,
        point_of_commitment=poc,
        verdict=verdict,
        explanation=_explain(trajectory, mode, poc, bracket, needed, config),
        bracket=bracket,
        rollouts_needed=needed,
        repair=repair,
        repair_note=repair_note,
        shapley=summary,
        resamplers=tuple(registry.descriptions()),
        verifier=describe(verifier),
        rollouts=engine.rollouts,
        step_executions=engine.step_executions,
        resampler_errors=engine.resampler_errors,
        wall_seconds=time.perf_counter() - started,
    )


def _explain(
    trajectory: Trajectory,
    mode: Mode,
    poc: int | None,
    bracket: tuple[int, int] | None,
    needed: int | None,
    config: AttributionConfig,
) -> str:
    def name(i: int) -> str:
        step = trajectory.steps[i]
        return f"step {i} ({step.kind.value} {step.name})"

    if config.method is Method.SHAPLEY:
        return "Shapley credit only: run with --method contrastive or all to locate the commitment."
    if poc is not None:
        if mode is Mode.FAILURE:
            return (
                f"The failure became inevitable at {name(poc)}: with it as recorded the run fails, "
                f"and no later step changes the failure rate by more than ±{config.margin:g}."
            )
        return (
            f"The run was saved at {name(poc)}: no later step changes the failure rate by more "
            f"than ±{config.margin:g}."
        )
    budget = f"; about {needed} rollouts per plan might decide it" if needed else ""
    if bracket is not None:
        what = "commitment" if mode is Mode.FAILURE else "save point"
        return (
            f"Inconclusive at {config.rollouts} rollouts: the {what} lies between {name(bracket[0])} "
            f"and {name(bracket[1])}{budget}."
        )
    return f"Inconclusive at {config.rollouts} rollouts{budget}."
