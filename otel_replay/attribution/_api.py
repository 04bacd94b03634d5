"""`attribute`: one failed (or, in credit mode, passing) run in, an `AttributionResult` out.

A composition of the methods: each says which plans it runs (`contrastive_plans`, `shapley_plans`,
`repair_bound`), and the same lists are what runs and what `planned_rollouts` counts.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from otel_replay.attribution import _suspect as suspects
from otel_replay.attribution._adaptive import adaptive
from otel_replay.attribution._config import (
    AttributionConfig,
    Method,
    OnSuccess,
    Strategy,
    budget_words,
)
from otel_replay.attribution._contrastive import (
    ERROR_BOUND,
    Localisation,
    contrastive_plans,
    kept_plan,
    localise,
)
from otel_replay.attribution._engine import (
    Engine,
    EvidenceMissing,
    Progress,
    Shipper,
    Spending,
    resamplable_steps,
)
from otel_replay.attribution._evidence import evidence_of, told
from otel_replay.attribution._repair import Repaired, search
from otel_replay.attribution._results import (
    AttributionResult,
    Mode,
    StepAttribution,
    Verdict,
    percent,
)
from otel_replay.attribution._shapley import Credit, shapley, shapley_plans
from otel_replay.attribution._spend import NOTHING
from otel_replay.attribution._variation import (
    cannot_tell,
    held_words,
    is_live,
    nothing_varied,
    open_root,
    resting_on,
    variations,
    varied_steps,
    with_variation,
)
from otel_replay.errors import AttributionError, ReplayError, VerifierError, setting
from otel_replay.model import StepKind, Trajectory
from otel_replay.redaction import patterns_of, redact_error
from otel_replay.replay import Plan, Rollout, score
from otel_replay.replayable import check_attributable
from otel_replay.resamplers import Judge, Registry, VerifierFunction, describe, ways_to_resample


def method_plans(
    n_steps: int, resamplable: Sequence[int], config: AttributionConfig, walks_record: bool
) -> list[tuple[Plan, int]]:
    """The plans the chosen methods run before any repair search."""
    plans = []
    if config.method in (Method.CONTRASTIVE, Method.ALL) and not config.strategy.sequential:
        plans += contrastive_plans(n_steps, resamplable, config.rollouts, walks_record=walks_record)
    if config.method in (Method.SHAPLEY, Method.ALL):
        plans += shapley_plans(n_steps, resamplable, config)
    return plans


def planned_rollouts(
    trajectory: Trajectory,
    registry: Registry,
    config: AttributionConfig,
    agent_driven: bool = False,
) -> int:
    """How many rollouts `attribute` runs before any repair search (which adds at most
    `otel_replay.attribution.repair_bound`)."""
    varied = varied_steps(variations(trajectory, registry, agent_driven))
    plans = method_plans(len(trajectory.steps), varied, config, not agent_driven)
    return sum(count for _, count in plans)


def attribute(
    trajectory: Trajectory,
    registry: Registry,
    config: AttributionConfig | None = None,
    progress: Progress | None = None,
    driver: Callable[[Plan, int], Rollout] | None = None,
    spending: Spending | None = None,
    shipper: Shipper | None = None,
    suspect_judge: suspects.JudgeServer | None = None,
) -> AttributionResult:
    """Find the step where ``trajectory``'s failure became inevitable (or, in credit mode, its save).

    Raises:
        VerifierError: no verifier is registered, or it does not return a number.
        AttributionError: the run passed and ``on_success`` is ``error``; nothing is resamplable;
            the run's record allows nothing (`otel_replay.replayable`: ``not-replayable``).
        RolloutError: a resample function raised (unless ``on_resampler_error`` is ``fail-rollout``).

    ``progress(completed, total)`` follows the rollouts; ``total`` is exact before a repair search
    and grows by what the search may try once it knows its candidates; the sequential strategies
    announce each batch as they decide on it. ``spending(spent)`` follows the resample-function
    calls against the budget (`Spent`). ``driver`` replaces the
    trace-driven rollout, e.g. with `otel_replay.replay.agent_driver` to run the live agent; then
    every step is resamplable (its live code re-runs it). ``shipper`` runs the rollouts elsewhere
    (see `otel_replay.attribution.attribute_stored`'s executor); the results are the same.
    ``suspect_judge``: the server ``suspect="judge"`` asks (by default ``$OPENAI_BASE_URL``).
    """
    try:
        return _attribute(
            trajectory, registry, config, progress, driver, spending, shipper, suspect_judge
        )
    except ReplayError as exc:  # it may quote user code's exception text: redacted as the run is
        raise redact_error(exc, patterns_of(trajectory)) from exc.__cause__


def _attribute(
    trajectory: Trajectory,
    registry: Registry,
    config: AttributionConfig | None,
    progress: Progress | None,
    driver: Callable[[Plan, int], Rollout] | None,
    spending: Spending | None,
    shipper: Shipper | None,
    suspect_judge: suspects.JudgeServer | None = None,
) -> AttributionResult:
    config = config or AttributionConfig()
    check_attributable(trajectory)  # a run nothing of can be re-run or served: said, not tried
    started = time.perf_counter()
    resamplable = resamplable_steps(trajectory, registry, driver is not None)
    verifier = _verifier(trajectory, registry, resamplable)
    # plans are built around the steps resampling can vary; the engine prices every step a plan
    # resamples (a held draw is a call too)
    found_variations = variations(trajectory, registry, is_live(driver))
    varied = [i for i in resamplable if found_variations[i].varied]
    if config.swap_model is not None:
        _check_swap(trajectory, registry, config.swap_model, config.swap_from)
    named = suspects.named_suspect(trajectory, varied, config, suspect_judge)
    config = config if named is None else dataclasses.replace(config, suspect=named.step)
    judge = verifier if isinstance(verifier, Judge) else None
    judge_calls_before = judge.calls if judge is not None else 0
    factual_score = score(verifier, trajectory)
    mode = _mode(trajectory, verifier, factual_score, config)
    engine = Engine(
        trajectory, registry, verifier, config, progress, driver, spending, shipper, resamplable
    )
    if config.budget is not None:
        engine.pricing.check_budget(config.budget_unit, trajectory.id)
    if named is not None:  # the judge's call, counted as the rollouts' are (and in the budget)
        engine.spend += named.spend
    plans = method_plans(len(trajectory.steps), varied, config, engine.walks_record)
    engine.announce(
        sum(count for _, count in plans),
        sum(
            (engine.pricing.rollout(plan.resampled(resamplable), count) for plan, count in plans),
            NOTHING,
        ),
    )
    found, notes, credit, stopped = None, list[str](), None, None
    try:
        if not varied:  # every plan would resample only steps that cannot vary: none is run
            pass
        elif config.method in (Method.CONTRASTIVE, Method.ALL):
            if config.strategy.sequential:
                found = adaptive(engine, varied, mode, config)
                notes = list(found.notes)
            else:
                found = suspects.read_off(localise(engine, varied, mode, config), config)
        if varied and config.method in (Method.SHAPLEY, Method.ALL):
            credit = shapley(engine, varied, mode, config)
    except EvidenceMissing as missing:  # what ran is reported; nothing is estimated from it
        found, credit, stopped = None, None, missing
        notes = [f"stopped after {engine.rollouts} rollouts: too many could not be used"]
    if engine.resampler_errors and engine.resampler_errors == engine.resampling:
        raise AttributionError(
            f"every one of the {engine.resampling} rollouts that resampled a step failed on a "
            f"resample function's error ({setting('on_resampler_error', 'fail-rollout')}): "
            f"nothing was estimated; run with {setting('on_resampler_error', 'fail')} to see the "
            "first error"
        )
    evidence = evidence_of(engine, found, stopped is not None)
    if evidence.missing and found is not None:  # the estimates stand in the steps, naming nothing
        found = dataclasses.replace(
            found, point_of_commitment=None, bracket=None, rollouts_needed=None, calls_needed=None
        )
    verdict = Verdict.NO_EVIDENCE if evidence.missing else _verdict(mode, found, config)
    unvaried = resting_on(found_variations, varied, found, verdict, mode, config)
    if found is not None:
        found = open_root(found, found_variations)
    if unvaried is not None:
        verdict = Verdict.CANNOT_TELL
        if found is not None:  # a step shown to matter is no culprit while a later one is open
            poc = found.point_of_commitment
            found = dataclasses.replace(
                found,
                point_of_commitment=None,
                bracket=None if poc is None else (poc, unvaried[-1].index),
                rollouts_needed=None,
                calls_needed=None,
            )
    repair, repair_note = None, None
    if config.repair and mode is Mode.FAILURE:
        repair, repair_note = _repair(engine, found, varied, config)
    if repair is not None and engine.scrub:  # what a resample function returned, as the run is
        repair = dataclasses.replace(
            repair, output=engine.scrub(repair.output), plan=engine.scrub.text(repair.plan)
        )
    nothing = not varied and mode is Mode.FAILURE and config.swap_model is None
    if nothing and unvaried is None and not evidence.missing:
        verdict = Verdict.CANNOT_TELL  # nothing was varied at all, nothing was asked
        explained = nothing_varied(trajectory, found_variations)
    elif unvaried is not None:
        explained = cannot_tell(trajectory, found, unvaried, varied, config)
    else:
        explained = _explain(trajectory, mode, found, config)
    if unvaried is None and verdict in (Verdict.CULPRIT, Verdict.SETTLED) and found is not None:
        poc = found.point_of_commitment
        explained += held_words(found_variations, poc if poc is not None else varied[0])
    suspect = None if found is None or named is None else named.reported(found.suspect)
    explanation = told(
        explained + suspects.suspect_words(suspect, config), engine.rollouts, evidence, stopped
    )
    return AttributionResult(
        trajectory_id=trajectory.id,
        mode=mode,
        outcome=factual_score,
        failed=mode is Mode.FAILURE,
        steps=with_variation(_steps(trajectory, varied, found, credit), found_variations),
        point_of_commitment=found.point_of_commitment if found else None,
        verdict=verdict,
        explanation=explanation,
        bracket=found.bracket if found else None,
        rollouts_needed=found.rollouts_needed if found else None,
        repair=repair,
        repair_note=repair_note,
        shapley=credit.summary if credit else None,
        resamplers=tuple(registry.descriptions()),
        verifier=describe(verifier),
        rollouts=engine.rollouts,
        step_executions=engine.step_executions,
        spend=engine.spend,
        resampler_errors=engine.resampler_errors,
        wall_seconds=time.perf_counter() - started,
        notes=tuple(notes),
        search=found.search if found else (),
        calls_needed=found.calls_needed if found else None,
        swap_model=config.swap_model,
        swap_from=config.swap_from,
        judge=None if judge is None else judge.summary(judge_calls_before),
        evidence=evidence,
        kept=engine.kept,
        # the swap question locates where a model saves the run: it has no root cause to name
        root_cause=None
        if found is None or evidence.missing or config.swap_model is not None
        else found.root_cause,
        suspect=suspect,
        switched_to_fixed=found.switched_to_fixed if found else None,
    )


def _verifier(
    trajectory: Trajectory, registry: Registry, resamplable: Sequence[int]
) -> VerifierFunction:
    if not resamplable:
        raise AttributionError(
            f"no step of run {trajectory.id} has a resample function to say what else it could "
            f"have returned: {ways_to_resample()}"
        )
    if registry.verifier is None:
        raise VerifierError(
            "no verifier: add a function decorated with @verifier (trajectory -> float, 1.0 = "
            "success … 0.0 = failure) to your resamplers module, or pass "
            f"{setting('verifier', 'module:function')}"
        )
    return registry.verifier


def _check_swap(trajectory: Trajectory, registry: Registry, model: str, start: int) -> None:
    """The swap question needs a model turn to swap, and the model's resample function to ask
    ``model`` through."""
    turns = [s for s in trajectory.steps if s.kind is StepKind.LLM and s.index >= start]
    if not turns:
        after = f" from step {start} on" if start else ""
        raise AttributionError(
            f"{setting('swap_model', model)}: run {trajectory.id} has no model turn{after} to swap"
        )
    if all(registry.lookup(s) is None for s in turns):
        raise AttributionError(
            f"{setting('swap_model', model)} asks the model turns of run {trajectory.id} through "
            "the model's resample function, and none is registered: register one with "
            f"@resampler('llm'), or use {setting('llm', 'openai')}"
        )


def _mode(
    trajectory: Trajectory,
    verifier: VerifierFunction,
    factual_score: float,
    config: AttributionConfig,
) -> Mode:
    """Failure attribution for a failed run; credit mode (or an error) for a passing one."""
    if factual_score < config.fail_threshold:
        return Mode.FAILURE
    if config.swap_model is not None:
        raise AttributionError(
            f"run {trajectory.id} passed (verifier {describe(verifier)} scored it "
            f"{factual_score:g}, threshold {config.fail_threshold:g}); {setting('swap_model')} asks "
            f"from which step {config.swap_model} would have saved a failed run"
        )
    if config.on_success is OnSuccess.ERROR:
        raise AttributionError(
            f"run {trajectory.id} passed (verifier {describe(verifier)} scored it "
            f"{factual_score:g}, threshold {config.fail_threshold:g}); there is no failure to "
            f"attribute. Use {setting('on_success', 'credit')} to find the step that saved it."
        )
    return Mode.CREDIT


def _steps(
    trajectory: Trajectory,
    resamplable: Sequence[int],
    found: Localisation | None,
    credit: Credit | None,
) -> tuple[StepAttribution, ...]:
    """Each step's estimates from the methods that ran."""
    steps = (
        found.steps
        if found is not None
        else tuple(
            StepAttribution(s.index, s.kind.value, s.name, s.index in resamplable)
            for s in trajectory.steps
        )
    )
    if credit is None:
        return steps
    values = credit.values
    return tuple(
        dataclasses.replace(s, shapley=values[s.index].phi, shapley_se=values[s.index].se)
        if s.index in values
        else s
        for s in steps
    )


def _repair(
    engine: Engine, found: Localisation | None, resamplable: list[int], config: AttributionConfig
) -> Repaired:
    poc = found.point_of_commitment if found is not None else None
    if found is None or poc is None:
        return Repaired(None, "no repair search: there is no Point of Commitment to repair")
    kept = kept_plan(len(engine.factual.steps), resamplable, resamplable.index(poc))
    return search(engine, poc, kept, found.resampled_from(poc), config)


def _verdict(mode: Mode, found: Localisation | None, config: AttributionConfig) -> Verdict:
    if mode is Mode.CREDIT:
        return Verdict.NO_FAILURE  # the located step, if any, is the save point
    located = found is not None and found.point_of_commitment is not None
    if found is not None and not located and config.swap_model is None and settled(found):
        return Verdict.SETTLED
    if not located:
        return Verdict.INCONCLUSIVE
    return Verdict.CULPRIT if config.swap_model is None else Verdict.SAVED


def settled(found: Localisation) -> bool:
    """Whether the rollouts showed that no resamplable step changes the failure rate: every one
    shown to have no effect alone or cleared by the band (a report's steps cleared by the old
    search's joint question rest on its assumption, which is not enough for this verdict) and no
    group of them shown to matter together (a failure that built up stays inconclusive: no step
    is its culprit)."""
    resamplable = [s for s in found.steps if s.resamplable]
    return (
        bool(resamplable)
        and found.bracket is None
        and all(s.no_effect or s.band is not None for s in resamplable)
        and not any(t.comparison.significant for t in found.search)
    )


def _explain(
    trajectory: Trajectory, mode: Mode, found: Localisation | None, config: AttributionConfig
) -> str:
    def name(i: int) -> str:
        step = trajectory.steps[i]
        return f"step {i} ({step.kind.value} {step.name})"

    swap = config.swap_model
    if found is None:
        question = "locate the commitment" if swap is None else f"find where {swap} saves the run"
        return f"Shapley credit only: run with --method contrastive or all to {question}."
    poc, bracket, needed = found.point_of_commitment, found.bracket, found.rollouts_needed
    if poc is None and found.suspect is not None and found.suspect.confirmed:
        return suspects.confirmed_words(found, name)
    if poc is not None and swap is not None:
        turns = f" from step {config.swap_from} on" if config.swap_from > poc else ""
        return _saved_from(found, poc, swap, config.margin, name(poc), turns)
    if poc is not None:
        return _located(found, poc, mode, config.margin, name(poc)) + _root_words(
            found, poc, name, mode
        )
    calls = f" (some {found.calls_needed:,} more calls)" if found.calls_needed else ""
    budget = f"; about {needed} rollouts per plan{calls} might decide it" if needed else ""
    what = "commitment" if mode is Mode.FAILURE else "save point"
    if swap is not None:
        what = f"step from which {swap} saves the run"
    limits = f"at most {config.max_rollouts} rollouts per plan" + (
        f", {budget_words(config.budget, config.budget_unit)}" if config.budget is not None else ""
    )
    spent = {
        Strategy.FIXED: f"at {config.rollouts} rollouts",
        Strategy.SCAN: f"after the scan ({limits})",
        Strategy.ADAPTIVE: f"after the adaptive walk ({limits})",
    }[config.strategy]
    if bracket is not None and bracket[0] == bracket[1]:
        return (
            f"Inconclusive {spent}: {name(bracket[0])} is the only step that "
            f"might be the {what}, and it is neither shown to matter nor shown not to{budget}."
        )
    if bracket is not None:
        return (
            f"Inconclusive {spent}: the {what} lies between {name(bracket[0])} "
            f"and {name(bracket[1])}{budget}."
        )
    if all(s.no_effect or s.cleared for s in found.steps if s.resamplable):
        if swap is not None:
            turns = f" from step {config.swap_from} on" if config.swap_from else ""
            return (
                f"{swap} would not have saved this run from any step: starting the swap at no "
                f"step changes the failure rate by more than ±{config.margin:g} against starting "
                "it one step later, so re-run from the first resamplable step with "
                f"{swap} answering every model turn{turns}, it fails about as often as the "
                "record does."
            )
        failure = "failure" if mode is Mode.FAILURE else "success"
        joint = next((t for t in found.search if t.comparison.significant), None)
        if joint is not None:
            return (
                f"No single resampled step changes the {failure} rate by more than "
                f"±{config.margin:g}, but resampling every step from {name(joint.start)} on "
                f"together does (by {joint.comparison.effect:+.2f}): the {failure} built up over "
                "several steps, none of them decisive alone."
            )
        return _settled(found, mode, config.margin, name)
    lowered = [s.index for s in found.steps if s.lowered]
    if lowered and bracket is None:
        rate = "failure" if mode is Mode.FAILURE else "success"
        lucky = ", ".join(name(i) for i in lowered)
        return (
            f"Inconclusive {spent}: no resamplable step is shown to raise the {rate} rate, and "
            f"{lucky} lowered it beyond ±{config.margin:g} (a lucky record): no step is the "
            f"{what}, and the {rate} came about despite the luck."
        )
    return f"Inconclusive {spent}{budget}."


def _root_words(found: Localisation, poc: int, name: Callable[[int], str], mode: Mode) -> str:
    """The root cause beside the Point of Commitment, in a sentence (empty when not sought)."""
    root = found.root_cause
    if root is None or not root.sought:
        return ""
    if root.index is None:
        low, high = root.bracket or (None, None)
        where = (
            f" between {name(low)} and {name(high)}" if low is not None and high is not None else ""
        )
        return f" Its root cause lies{where}, undecided: {root.why}."
    lucky = _lowered_words(found, root.lowered, name, mode)
    if root.index == poc:
        return f" It is also the root cause: no earlier step matters.{lucky}"
    saves = root.saves
    rate = (
        f": resampling it saves the run {saves.value:.0%} [{saves.low:.0%}, {saves.high:.0%}] of "
        "the time"
        if saves is not None
        else ""
    )
    return f" Its root cause is {name(root.index)}, the earliest step that matters{rate}.{lucky}"


def _lowered_words(
    found: Localisation, lowered: Sequence[int], name: Callable[[int], str], mode: Mode
) -> str:
    """The steps before the root cause shown to have lowered the failure rate (raised it, for
    credit), a sentence each: lucky records, decided, and no culprits (empty when none)."""
    rate = "success" if mode is Mode.CREDIT else "failure"
    said = ""
    for i in lowered:
        step = found.steps[i]
        low, high = step.ci_low or 0.0, step.ci_high or 0.0
        said += (
            f" Before it, {name(i)} lowered the {rate} rate: keeping it as recorded lowers it by "
            f"{-(step.attribution or 0.0):.2f} [{-high:.2f}, {-low:.2f}] (95 %), beyond the "
            "margin; a lucky record, decided, and no culprit."
        )
    return said


def _settled(found: Localisation, mode: Mode, margin: float, name: Callable[[int], str]) -> str:
    """The words of a `Verdict.SETTLED`, or of the steps shown to do nothing only together (an
    inconclusive verdict): what was shown, and no more."""
    failure = "failure" if mode is Mode.FAILURE else "success"
    settled = (
        f"the {failure} was settled before the first resamplable step, or by an observed-only step"
    )
    banded = [s for s in found.steps if s.band is not None]
    if not banded:
        return (
            f"No resamplable step changes the {failure} rate: each one, resampled with every "
            f"later one, changes it by no more than ±{margin:g} against keeping it ({settled})."
        )
    outcome = "failed" if mode is Mode.FAILURE else "succeeded"
    alone = [s for s in found.steps if s.resamplable and s.band is None]
    also = ", and each of the others was shown to have no effect alone" if alone else ""
    return (
        f"No resamplable step changes the {failure} rate by more than ±{margin:g}: resampled "
        f"with every later one, and from the step after it on, each of {len(banded)} steps "
        f"{outcome} in every one of {banded[0].band} rollouts, as the record did{also} "
        f"({settled}). The band needs no assumption about the steps in between."
    )


def _saved_from(
    found: Localisation, at: int, model: str, margin: float, named: str, turns: str = ""
) -> str:
    """The swap question's answer in the words of the tests that made it."""
    step = found.steps[at]
    assert step.kept is not None and step.ablated is not None and step.matters_bound is not None
    later = [s for s in found.steps if s.resamplable and s.index > at]
    head = (
        f"{model} would have saved this run from {named} on: re-run from there with {model} "
        f"answering every model turn{turns}, it failed in {step.ablated.failures} of "
        f"{step.ablated.n} rollouts, against {step.kept.failures} of {step.kept.n} when the swap "
        f"starts after it (the failure rate lower by more than "
        f"{step.matters_bound:.2f} at {percent(step.matters_confidence or 0.0)} one-sided "
        "confidence)"
    )
    if not later:
        return f"{head}; no later step can be run again."
    return (
        f"{head}. Starting the swap at any later step changes the failure rate by no more than "
        f"±{margin:g} (each step's interval, or the band's tests, in the report): from "
        f"there on the failure was beyond {model}'s reach."
    )


def _located(found: Localisation, poc: int, mode: Mode, margin: float, named: str) -> str:
    """The verdict in the words of the tests that made it (the report has their numbers)."""
    step = found.steps[poc]
    later = [s for s in found.steps if s.resamplable and s.index > poc]
    confidence = step.matters_confidence or 0.0
    assert step.attribution is not None and step.matters_bound is not None
    change = "raises" if mode is Mode.FAILURE else "lowers"
    head = (
        f"The failure became inevitable at {named}"
        if mode is Mode.FAILURE
        else f"The run was saved at {named}"
    )
    shown = (
        f"{head}: keeping it as recorded {change} the failure rate by {abs(step.attribution):.2f} "
        f"(by more than {step.matters_bound:.2f} at {percent(confidence)} one-sided confidence)"
    )
    if not later:
        return f"{shown}, and no later step can be resampled."
    bound = f"The chance that these tests name a wrong step is at most {ERROR_BOUND:g}"
    level = percent(step.no_effect_confidence or 0.0)
    banded = [s for s in later if s.band is not None]
    alone = [s for s in later if s.band is None]
    lucky = " (or below it: a lucky record, no culprit)" if any(s.lowered for s in alone) else ""
    if not banded:
        return (
            f"{shown}, and every later resamplable step's {level} interval lies inside ±{margin:g}"
            f"{lucky} (no effect beyond ±{margin:g}). {bound}."
        )
    one_by_one = (
        f"every later step tested alone has its {level} interval inside ±{margin:g}{lucky}, and "
        if alone
        else ""
    )
    outcome, rate = ("failed", "failure") if mode is Mode.FAILURE else ("succeeded", "success")
    n = len(banded)
    which = f"the other {n} later steps lie" if n > 1 else f"the later step {banded[0].index} lies"
    each = "each" if n > 1 else "it"
    return (
        f"{shown}, and {one_by_one}{which} in the band: resampled from {each} on, and from the "
        f"step after it on, the run {outcome} in every one of {banded[0].band} rollouts, so "
        f"none moves the {rate} rate by more than ±{margin:g}, whatever the other steps do. "
        f"{bound}."
    )
