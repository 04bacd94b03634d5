"""Minimal repair: the smallest change to the culprit's output that turns the run into a success.

Candidates are the culprit's outputs in rollouts that succeeded (from its ``ablate_from`` plan) plus
whatever the user's ``@repair_candidates`` functions offer, tried in order of edit similarity to the
factual output (most similar first; a model turn's outputs are compared as messages,
`otel_replay.transcript.compared_output`, and one saying what the record says is no candidate).
The first whose forced plan — hold before the step, inject the
candidate, resample after — fails less often than a fresh baseline of the kept plan, beyond chance
(the difference's upper bound below zero, one-sided at 0.05 over the number of candidates tried),
and saves at least one run, is the repair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Repair
from otel_replay.attribution._stats import DifferenceDistribution, similarity, wilson
from otel_replay.errors import RegistrationError
from otel_replay.hashing import canonical_json
from otel_replay.model import StepKind, StepStatus
from otel_replay.replay import Intervention, Plan
from otel_replay.resamplers import describe
from otel_replay.transcript import compared_output

_ALPHA = 0.05  # the error rate a repair is accepted at (split over the candidates tried)


@dataclass(frozen=True, slots=True)
class _Candidate:
    output: Any
    similarity: float
    source: str
    key: bytes


def candidates(engine: Engine, index: int, rollouts: list[Outcome]) -> list[_Candidate]:
    factual_step = engine.factual.steps[index]
    seen: dict[bytes, _Candidate] = {}
    offered: list[tuple[Any, str]] = []
    for outcome in rollouts:
        if outcome.failed or not outcome.counts or outcome.trajectory is None:
            continue
        # ablate_from plans hold the prefix and remove nothing, so the step sits at the same position
        # (for a live agent too: the held prefix replays call for call)
        if index >= len(outcome.trajectory.steps):
            continue
        step = outcome.trajectory.steps[index]
        # a live agent may have called something else at this position: only the same operation
        if step.kind is not factual_step.kind or step.name != factual_step.name:
            continue
        if step.status is StepStatus.OK:
            offered.append((step.output, "rollout"))
    for source in engine.registry.repair_sources:
        try:
            for output in source(factual_step, engine.factual):
                offered.append((output, describe(source)))
        except Exception as exc:
            raise RegistrationError(
                f"repair-candidates function {describe(source)} raised {type(exc).__name__}: {exc}"
            ) from exc
    # a model turn is compared as its message: the record may hold the response an SDK returned,
    # a resample function answers a message
    factual = compared_output(factual_step.kind, factual_step.output)
    factual_key = canonical_json(factual)
    for output, origin in offered:
        compared = compared_output(factual_step.kind, output)
        key = canonical_json(compared)
        if key == factual_key or key in seen:
            continue
        seen[key] = _Candidate(output, similarity(compared, factual), origin, key)
    return sorted(seen.values(), key=lambda c: (-c.similarity, c.key))


def repair_bound(config: AttributionConfig) -> int:
    """The most rollouts `search` runs: a fresh baseline and every candidate it may try."""
    return (1 + config.max_repair_candidates) * config.rollouts


class Repaired(NamedTuple):
    """What `search` found: the ``repair`` (None: none saved the run), and a ``note`` saying how it
    was found or why there is none."""

    repair: Repair | None
    note: str


def search(
    engine: Engine,
    index: int,
    kept: Plan,
    rollouts: list[Outcome],
    config: AttributionConfig,
) -> Repaired:
    """The repair, or None and why not.

    ``kept`` is the culprit's kept plan: it is rolled out afresh as the baseline, because the
    estimate that picked the culprit is biased by having been picked. The rollouts a search may run
    are announced to the engine once the candidates are known, and what an early success leaves
    unrun is withdrawn.
    """
    found = candidates(engine, index, rollouts)
    if not found:
        return Repaired(
            None, f"no candidate output for step {index}: no rollout that resampled it succeeded"
        )
    n_steps = len(engine.factual.steps)
    trials = min(len(found), config.max_repair_candidates)
    engine.announce((1 + trials) * config.rollouts)
    baseline_plan = kept.repair_baseline(index)
    # rollouts that are no evidence (unservable, crashed) are left out of both sides
    baseline = [
        o for o in engine.run([(baseline_plan, config.rollouts)])[baseline_plan] if o.counts
    ]
    baseline_failures = sum(o.failed for o in baseline)
    alpha = _ALPHA / trials  # Bonferroni over the candidates tried
    for tried, candidate in enumerate(found[:trials], start=1):
        plan = Plan.forced(n_steps, index, candidate.output)
        outcomes = [o for o in engine.run([(plan, config.rollouts)])[plan] if o.counts]
        failures = sum(o.failed for o in outcomes)
        difference = DifferenceDistribution(
            failures, len(outcomes), baseline_failures, len(baseline)
        )
        # a repair must save some runs, and fail less than the record does, beyond chance
        if failures < len(outcomes) and difference.quantile(1 - alpha) < 0.0:
            engine.withdraw((trials - tried) * config.rollouts)
            successes = len(outcomes) - failures
            s_low, s_high = wilson(successes, len(outcomes))
            return Repaired(
                Repair(
                    step_index=index,
                    output=candidate.output,
                    similarity=round(candidate.similarity, 6),
                    success_rate=successes / len(outcomes),
                    success_low=s_low,
                    success_high=s_high,
                    n=len(outcomes),
                    source=candidate.source,
                    tried=tried,
                    **_named(engine, plan, index),
                ),
                f"tried {tried} of {len(found)} candidates",
            )
    return Repaired(
        None, f"none of the {trials} most similar candidates (of {len(found)}) saved the run"
    )


def _named(engine: Engine, plan: Plan, index: int) -> dict[str, str]:
    """The repair's move in the intervention algebra, and its plan in words: a model turn's new
    output is ``do`` (the agent's action replaced), any other step's is ``observe`` (the call
    kept, what came back replaced). The plan ran as a forced output; the mechanics are the same."""
    forced = plan.at(index)
    if engine.factual.steps[index].kind is StepKind.LLM:
        named = Intervention.do(forced.output)
    else:
        named = Intervention.observe(forced.output, forced.error)
    shown = Plan(
        plan.identity,
        tuple(named if i == index else x for i, x in enumerate(plan.interventions)),
        plan.model_from,
    )
    return {"move": named.name, "plan": engine.asked(shown).describe()}
