"""A suspect verified first: ``--suspect K`` and ``--suspect judge``.

A person (or a model that read the run) often has a step in mind before any rollout. Its test runs
first: the step alone, its kept plan (``ablate_from`` the next resamplable step) against
``ablate_from`` the step, paired, at the suspect's own share of the error bound,
`SUSPECT_SHARE`, split over a short schedule of its own (`SUSPECT_LOOKS` rollouts per plan, a
Bonferroni split as `_sequential.schedule` does). The suspect is fixed before any rollout (a
judge reads only the record), so that share is exact: a step with no effect is confirmed at most
`SUSPECT_SHARE` of the time.

Confirmed (shown to matter at a look), the attribution stops there: the step matters, and the
Point of Commitment is at it or later, which the steps after it (not tested) would tell. Not
confirmed (shown to have no effect, to lower the rate, or open at the last look), the attribution
goes on as without a suspect, through the same `Rollouts`, so the suspect's rollouts serve its
questions too (the plans' rollouts share random streams whoever asks first).

``--suspect judge`` names the step by one model call (`ask_judge`), through the OpenAI-compatible
client and the ``--llm-*`` (or ``--judge-*``) server the built-in judge uses: it is shown the
record's steps, redacted with the run's patterns and cut to `SHOWN_CHARS`, and replies
``{"step": K, "reason": "..."}``. The call and its tokens are counted in the attribution's spend.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._contrastive import (
    Localisation,
    Tails,
    all_steps,
    compare,
    estimate_step,
    kept_plan,
)
from otel_replay.attribution._engine import Engine, Outcome
from otel_replay.attribution._results import Mode, StepAttribution, Suspect, percent, ranges
from otel_replay.attribution._sequential import Rollouts, Schedule
from otel_replay.attribution._spend import NOTHING, Spend
from otel_replay.errors import AttributionError, SettingError, VerifierError, setting
from otel_replay.hashing import canonical_json
from otel_replay.model import StepKind, Trajectory
from otel_replay.redaction import Redactor, patterns_of
from otel_replay.replay import Plan
from otel_replay.resamplers import ask_model, recorded_model
from otel_replay.resamplers import server as named_server
from otel_replay.transcript import task

#: The suspect's share of `ERROR_BOUND`, taken out of the per-step "matters" share when a suspect
#: is given: the chance that a step with no effect is confirmed.
SUSPECT_SHARE = 0.0025

#: Rollouts per plan at each look of the suspect's test: short, since a suspect worth naming
#: matters a lot, and one that does not is left to the attribution that follows.
SUSPECT_LOOKS = (8, 12, 18, 27, 41)

#: How much of each step's record, and of the whole run, the judge is shown (characters).
STEP_CHARS = 1_500
SHOWN_CHARS = 60_000

#: How much of a reply an error quotes.
QUOTED = 120

#: What the judge is told it is; the run's steps follow in the user message.
INSTRUCTIONS = (
    "You debug a failed run of an AI agent. Read its steps and name the one step that most "
    "likely caused the failure, among the steps marked resamplable. Reply with only a JSON "
    'object: {"step": the step\'s index, "reason": "one sentence saying why"}.'
)


def suspect_schedule(config: AttributionConfig) -> Schedule:
    """The suspect's looks (at most ``max_rollouts`` each), `SUSPECT_SHARE` split over them, for
    "matters" and for "no effect" alike (a "no effect" that errs only lets the attribution go
    on, so its share is spent on nothing that could name a wrong step)."""
    looks = tuple(sorted({min(n, config.max_rollouts) for n in SUSPECT_LOOKS}))
    tail = SUSPECT_SHARE / len(looks)
    return Schedule(looks, Tails(tail, tail, len(looks)))


@dataclass(frozen=True, slots=True)
class SuspectTest:
    """The suspect's test: its estimate (None: the budget allowed no look) and the step
    executions it spent."""

    position: int
    index: int
    estimate: StepAttribution | None
    calls: int

    @property
    def confirmed(self) -> bool | None:
        if self.estimate is None:
            return None
        return bool(self.estimate.significant)

    def record(self) -> Suspect:
        """As the report keeps it (``source`` the user's; `attribute` sets the judge's)."""
        e = self.estimate
        interval = None if e is None or e.ci_low is None else (e.ci_low, e.ci_high or 0.0)
        return Suspect(
            step=self.index,
            source="user",
            confirmed=self.confirmed,
            decision="not tested" if e is None else decision(e),
            calls_to_confirm=self.calls,
            effect=None if e is None else e.attribution,
            interval=interval,
            matters_bound=None if e is None else e.matters_bound,
            matters_tail=None if e is None else e.test_tail,
        )


def confirm(rollouts: Rollouts, mode: Mode, position: int) -> SuspectTest:
    """Test the resamplable step at ``position`` alone at the suspect's schedule, through
    ``rollouts`` (what it runs stays there for every later question): its kept plan against
    resampling from it, paired, until "matters" passes, "no effect" or "lowered" does, or the
    estimate is at most zero at a look (futility: keeping the step did not raise the failure
    rate at all in the rollouts so far). Stopping without confirming spends none of the bound,
    since the attribution then goes on as without a suspect: only a confirmation can err."""
    engine, config, resamplable = rollouts.engine, rollouts.config, rollouts.resamplable
    n_steps = len(engine.factual.steps)
    step = engine.factual.steps[resamplable[position]]
    plan = suspect_schedule(config)
    before = engine.step_executions

    def judge(kept: list[Outcome], ablated: list[Outcome], exact: bool) -> StepAttribution:
        tests = compare(kept, ablated, kept_exact=exact, mode=mode, config=config, tails=plan.tails)
        return estimate_step(step, tests)

    found = rollouts.decide(
        plan.looks,
        kept_plan(n_steps, resamplable, position),
        Plan.ablate_from(n_steps, step.index),
        judge,
        lambda e: e.decided or (e.attribution or 0.0) <= 0.0,
    )
    return SuspectTest(position, step.index, found, engine.step_executions - before)


def suspect_first(
    engine: Engine,
    resamplable: Sequence[int],
    mode: Mode,
    config: AttributionConfig,
    rest: Callable[..., Localisation],
) -> Localisation:
    """The suspect's test, then: confirmed, a `Localisation` that names no Point of Commitment
    but brackets it from the suspect to the last resamplable step; else ``rest(engine,
    resamplable, mode, config, outcomes)``, the attribution as without a suspect over the same
    rollouts, with the test beside it."""
    assert isinstance(config.suspect, int)
    position = list(resamplable).index(config.suspect)
    rollouts = Rollouts(engine, config, resamplable, {})
    tested = confirm(rollouts, mode, position)
    if not tested.confirmed:
        found = rest(engine, resamplable, mode, config, rollouts.outcomes)
        note = f"suspect: step {tested.index} was not confirmed ({not_confirmed(tested)})"
        return dataclasses.replace(found, suspect=tested.record(), notes=(*found.notes, note))
    assert tested.estimate is not None
    steps = all_steps(engine.factual, {tested.index: tested.estimate}, resamplable)
    last = resamplable[-1]
    notes = (
        f"suspect: step {tested.index} was confirmed by replay, and the attribution stopped there"
        + (
            f": the steps after it were not tested, so the Point of Commitment lies at it or "
            f"later (up to step {last}); run without {setting('suspect')} to name it"
            if last != tested.index
            else ""
        ),
    )
    return Localisation(
        steps,
        tested.index if last == tested.index else None,
        None if last == tested.index else (tested.index, last),
        None,
        rollouts.outcomes,
        notes=notes,
        suspect=tested.record(),
    )


def decision(e: StepAttribution) -> str:
    """What a step's tests decided: matters, no effect, lowered, or open."""
    if e.significant:
        return "matters"
    if e.no_effect or e.lowered:
        return "no effect" if e.no_effect else "lowered"
    return "none seen" if (e.attribution or 0.0) <= 0.0 else "open"


def not_confirmed(tested: SuspectTest) -> str:
    """Why a suspect was not confirmed, in words."""
    e = tested.estimate
    if e is None:
        return "the budget allowed no look"
    return _why(decision(e), e.ablated.n if e.ablated is not None else 0)


def _why(decided: str, n: int) -> str:
    return {
        "no effect": "shown to have no effect",
        "lowered": "shown to lower the rate (a lucky record)",
        "not tested": "not tested: the budget allowed no look",
        "none seen": "keeping it did not raise the rate at all in its rollouts",
    }.get(decided, f"neither shown to matter nor not to at {n} rollouts per plan")


def suspect_words(found: Suspect | None, config: AttributionConfig) -> str:
    """The suspect in a sentence, for the explanation (empty without one)."""
    if found is None:
        return ""
    who = "yours" if found.source == "user" else f"the judge: {shown_reason(found.reason)!r}"
    head = f" Suspect step {found.step} ({who}): "
    numbers = ""
    if found.effect is not None and found.interval is not None:
        low, high = found.interval
        numbers = f" ({found.effect:+.2f} [{low:+.2f}, {high:+.2f}])"
    calls = (
        f" after {found.calls_to_confirm:,} calls"
        if config.strategy.sequential
        else f" at {config.rollouts} rollouts per plan"
    )
    if found.confirmed:
        return f"{head}confirmed by replay, it matters{numbers}{calls}."
    n = suspect_schedule(config).looks[-1] if config.strategy.sequential else config.rollouts
    return f"{head}not confirmed: {_why(found.decision, n)}{numbers}{calls}."


def shown_reason(reason: str | None) -> str:
    """The judge's reason as a sentence quotes it: one line, at most `QUOTED` characters."""
    text = " ".join((reason or "").split())
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"


def confirmed_words(found: Localisation, name: Callable[[int], str]) -> str:
    """The verdict of a confirmed suspect: it matters, and the Point of Commitment is at it or
    later."""
    assert found.suspect is not None
    step = found.steps[found.suspect.step]
    assert step.attribution is not None and step.matters_bound is not None
    confidence = percent(1 - SUSPECT_SHARE)
    named = name(step.index)
    head = (
        f"{named[0].upper()}{named[1:]} matters (confirmed by replay): its effect is above "
        f"{step.matters_bound:.2f} at {confidence} one-sided confidence (the suspect's share of "
        f"the bound, {SUSPECT_SHARE:g}, over its looks)"
    )
    if found.bracket is None:
        return f"{head}, and no later step can be resampled."
    return (
        f"{head}. The steps after it were not tested, so the Point of Commitment lies at it or "
        f"later, up to {name(found.bracket[1])}; run without {setting('suspect')} to name it."
    )


@dataclass(frozen=True, slots=True)
class Named:
    """A suspect named before any rollout: the step, who named it (``user`` or ``judge``) and
    why, and what naming it spent (the judge's call)."""

    step: int
    source: str
    reason: str | None = None
    spend: Spend = NOTHING

    def reported(self, tested: Suspect | None) -> Suspect:
        """The test's record (None: not tested) with who named the suspect and why."""
        found = tested or Suspect(step=self.step, source=self.source)
        return dataclasses.replace(found, source=self.source, reason=self.reason)


def named_suspect(
    trajectory: Trajectory,
    varied: Sequence[int],
    config: AttributionConfig,
    server: JudgeServer | None,
) -> Named | None:
    """The suspect ``config`` names, checked against the ``varied`` steps (a `SettingError`
    otherwise), or asked of the judge (`ask_judge`); None without one."""
    if config.suspect is None:
        return None
    if config.suspect == "judge":
        return ask_judge(trajectory, varied, server or JudgeServer())
    suspect_position(config.suspect, varied, trajectory)
    return Named(config.suspect, "user")


def suspect_position(suspect: int, varied: Sequence[int], trajectory: Trajectory) -> int:
    """Where step ``suspect`` is among the ``varied`` resamplable steps; a `SettingError` naming
    it and them when it is none of them."""
    if suspect in varied:
        return list(varied).index(suspect)
    n = len(trajectory.steps)
    why = (
        f"the run has steps 0–{n - 1}"
        if suspect >= n
        else f"step {suspect} cannot be resampled (or resampling cannot vary it)"
    )
    raise SettingError(
        f"{setting('suspect', suspect)}: {why}; the resamplable steps are {_listed(varied)}"
    )


def read_off(found: Localisation, config: AttributionConfig) -> Localisation:
    """The fixed strategy's ``found`` with its suspect read off its estimates (it spends nothing
    of its own): confirmed when its step is shown to matter."""
    if not isinstance(config.suspect, int):
        return found
    e = found.steps[config.suspect]
    interval = None if e.ci_low is None else (e.ci_low, e.ci_high or 0.0)
    suspect = Suspect(
        step=config.suspect,
        source="user",
        confirmed=bool(e.significant),
        decision=decision(e),
        effect=e.attribution,
        interval=interval,
        matters_bound=e.matters_bound,
        matters_tail=e.test_tail,
    )
    return dataclasses.replace(found, suspect=suspect)


@dataclass(frozen=True, slots=True)
class JudgeServer:
    """Where ``--suspect judge`` asks: the server (None: ``$OPENAI_BASE_URL``, else OpenAI's
    API) and the model (None: the run's recorded one)."""

    base_url: str | None = None
    model: str | None = None
    max_retries: int = 4
    timeout_s: float = 60.0


def judge_prompt(trajectory: Trajectory, varied: Sequence[int]) -> str:
    """The user message: the task, then every step (a tool's arguments, a model turn's reply:
    the conversation is the steps), redacted with the run's patterns, each cut to `STEP_CHARS`,
    the whole to `SHOWN_CHARS`."""
    scrub = Redactor(patterns_of(trajectory))
    asked = task(trajectory.steps, trajectory.metadata)
    lines = [
        f"The agent's task: {scrub.text(asked or '(not recorded)')}",
        f"The run failed. Resamplable steps: {_listed(varied)}.",
        "",
    ]
    for step in trajectory.steps:
        shown: dict[str, Any] = {"output": step.output, "status": step.status.value}
        if step.kind is not StepKind.LLM:
            shown["inputs"] = step.inputs.get("arguments", step.inputs)
        if step.error:
            shown["error"] = step.error
        text = canonical_json(scrub(shown)).decode("utf-8", "replace")
        if len(text) > STEP_CHARS:
            text = text[: STEP_CHARS - 1] + "…"
        mark = " (resamplable)" if step.index in varied else ""
        lines.append(f"step {step.index}{mark}: {step.kind.value} {scrub.text(step.name)}: {text}")
    prompt = "\n".join(lines)
    return prompt if len(prompt) <= SHOWN_CHARS else prompt[: SHOWN_CHARS - 1] + "…"


def ask_judge(trajectory: Trajectory, varied: Sequence[int], server: JudgeServer) -> Named:
    """One model call naming a suspect among ``varied`` (module docstring)."""
    needed = setting("suspect", "judge")
    base_url = named_server(server.base_url, needed)
    try:
        reply, tokens = ask_model(
            base_url,
            server.model or recorded_model(trajectory),
            INSTRUCTIONS,
            judge_prompt(trajectory, varied),
            needed,
            max_retries=server.max_retries,
            timeout_s=server.timeout_s,
        )
    except VerifierError as exc:  # the judge's words for the verifier's failure: ours
        raise AttributionError(str(exc)) from None
    spend = Spend(model=1, tokens=tokens or 0, measured=int(tokens is not None))
    spend = spend if tokens is not None else dataclasses.replace(spend, unpriced=1)
    step, reason = read_suspect(reply, varied, needed)
    return Named(step, "judge", reason, spend)


def read_suspect(reply: str, varied: Sequence[int], needed: str) -> tuple[int, str]:
    """``(step, reason)`` from the judge's reply, a JSON object naming one of ``varied``; else an
    `AttributionError` quoting the reply."""
    found: Any = None
    text = reply.strip()
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        try:
            found = json.loads(text[start : end + 1])
        except ValueError:
            found = None
    step = found.get("step") if isinstance(found, dict) else None
    if isinstance(step, str) and step.strip().isdigit():
        step = int(step.strip())
    if isinstance(step, bool) or not isinstance(step, int) or step not in varied:
        quoted = text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"
        raise AttributionError(
            f"{needed}: the model answered {quoted!r}, which names none of the resamplable steps "
            f'({_listed(varied)}) as JSON {{"step": K, "reason": "..."}}'
        )
    assert isinstance(found, dict)
    reason = found.get("reason")
    return step, reason if isinstance(reason, str) else ""


def judge_estimate(trajectory: Trajectory, varied: Sequence[int]) -> Spend:
    """What the judge's call is estimated to spend, for ``--dry-run``: one model call, its
    prompt's tokens at about four characters each."""
    text = INSTRUCTIONS + judge_prompt(trajectory, varied)
    return Spend(model=1, tokens=len(text) // 4 + 100, estimated=1)


def _listed(indices: Sequence[int]) -> str:
    """The steps as `ranges` says them, "none" for none."""
    return ranges(indices) or "none"
