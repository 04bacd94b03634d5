"""Whether resampling a step can vary it, and by what: decided for every step before any rollout.

A step is **varied** when resampling it can give something other than its record: a user's
resample function, the built-in model, the agent's live code, or ``--tools recorded`` draws with
more than one distinct recorded result for the call. It is **not varied** when resampling it can
only give back its record: ``--tools recorded`` with no other result for the call than this run's
(the draws hold the step), an observed-only step (no resample function, or marked
``resamplable: false``), a read of the environment (a clock, a fresh id). A not-varied step is never
estimated (its effect would be zero by construction, which is no evidence of "no effect") and no
plan is built around it. A step something was asked to resample and cannot vary for want of
evidence (`Variation.blocks`: ``--tools recorded`` holding a call no other stored run made) leaves
any verdict that rests on it at "cannot tell" (`blocking`). A call every stored run that made it
was answered the same way is held as the recorded world answers it, and said beside the verdict
(`held_words`); an observed-only step is the world as recorded by the user's choice or the
record's, as it always was (a verdict "settled" says the failure may have been settled by one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from otel_replay.attribution._config import AttributionConfig
from otel_replay.attribution._contrastive import Localisation
from otel_replay.attribution._results import Mode, RootCause, StepAttribution, Verdict
from otel_replay.errors import setting
from otel_replay.model import Step, StepKind, Trajectory
from otel_replay.resamplers import (
    RecordedOutcomes,
    Registry,
    SimulatedTools,
    ToolSource,
    call_of,
    describe,
)


@dataclass(frozen=True, slots=True)
class Variation:
    """Whether resampling step ``index`` can vary it (``varied``), and ``how``: by what, or why
    not. ``alternatives``: the distinct results ``--tools recorded`` holds for its call (None: the
    step is not drawn from the store). ``blocks``: a resample function was to vary the step and
    cannot, so a verdict that rests on it cannot tell (observed-only steps never block)."""

    index: int
    kind: str
    name: str
    varied: bool
    how: str
    alternatives: int | None = None
    blocks: bool = False

    def to_record(self) -> dict[str, Any]:
        """The step as ``--dry-run --json`` lists it."""
        return {
            "index": self.index,
            "kind": self.kind,
            "name": self.name,
            "varied": self.varied,
            "how": self.how,
        }


#: How the reason of a step that is the world as recorded begins (an observed-only step, a read of
#: the environment): such a step never blocks a verdict (`Variation.blocks`).
WORLD = ("observed-only", "reads the environment")


class _Found(NamedTuple):
    varied: bool
    how: str
    alternatives: int | None = None
    blocks: bool = False


def variations(trajectory: Trajectory, registry: Registry, live: bool) -> tuple[Variation, ...]:
    """Every step of ``trajectory``: can resampling it vary it, and by what (module docstring).
    ``live``: the rollouts re-run the user's agent, whose code runs every step live but those the
    record marks ``resamplable: false`` (the chat loop is no such code: its steps are run by their
    resample functions)."""
    return tuple(
        Variation(s.index, s.kind.value, s.name, *_variation(s, registry, live, trajectory.id))
        for s in trajectory.steps
    )


def is_live(driver: object | None) -> bool:
    """Whether a driver re-runs the user's own agent code (not the trace walk, not the chat
    loop)."""
    return driver is not None and not getattr(driver, "built_in", False)


def varied_steps(found: Sequence[Variation]) -> list[int]:
    """The indices of the steps resampling can vary: those plans are built around."""
    return [v.index for v in found if v.varied]


def blocking(found: Sequence[Variation], after: int) -> list[Variation]:
    """The not-varied steps after step ``after`` a verdict would rest on (-1: every one)."""
    return [v for v in found if v.blocks and v.index > after]


def _variation(step: Step, registry: Registry, live: bool, run_id: str) -> _Found:
    if step.reads_environment:
        return _Found(False, f"{WORLD[1]} (a clock, a fresh id): the world, never resampled")
    registration = registry.lookup(step)
    if live and step.resamplable:
        how = "the agent's code, run live"
        if registration is not None:
            how += f" (or {describe(registration.function)} where it gives no code)"
        return _Found(True, how)
    if registration is None:
        if not step.resamplable and registry.lookup(dataclasses.replace(step, resamplable=True)):
            return _Found(False, f"{WORLD[0]}: its record marks it resamplable: false")
        return _Found(False, f"{WORLD[0]}: no resample function for {step.kind.value} {step.name}")
    function = registration.function
    if isinstance(function, SimulatedTools):
        if function.draws is not None and function.recorded_first(step):
            return _drawn(step, function.draws, run_id)
        return _Found(True, f"the model playing {step.name} ({setting('tools', 'simulate')})")
    if isinstance(function, RecordedOutcomes):
        return _drawn(step, function, run_id)
    if step.kind is StepKind.LLM and describe(function).startswith("builtin."):
        return _Found(True, "the built-in model, asked again")
    return _Found(True, f"resample function {describe(function)}")


def _drawn(step: Step, draws: RecordedOutcomes, run_id: str) -> _Found:
    """A tool step ``--tools recorded`` answers: varied when the store holds another result for
    its call than this run's."""
    found = draws.alternatives(step)
    call = call_words(step)
    runs = draws.runs(step)
    if len(found) >= 2:
        return _Found(
            True,
            f"{len(found)} distinct recorded results for {call} (from {len(runs)} stored runs)",
            len(found),
        )
    others = runs - {run_id}
    if not others:  # nothing but this run says what the call returns: it blocks a verdict
        why = (
            f"the store holds only this run's result for {call}"
            if runs
            else f"the store holds no result for {call}: resampling it can only give its record"
        )
        return _Found(False, why, len(found), True)
    # other runs made the call and were answered the same: the recorded world answers it one way
    everyone = f"all {len(runs)} stored runs" if len(runs) > 1 else "the one stored run"
    why = f"{everyone} that called {call} were answered the same"
    return _Found(False, why, len(found))


def call_words(step: Step, width: int = 100) -> str:
    """``name(key=value, …)`` of a tool call, each value cut short so the whole fits ``width``."""
    arguments = orjson.loads(call_of(step).arguments)
    if not isinstance(arguments, dict):
        shown = "" if arguments is None else _short(orjson.dumps(arguments).decode(), width)
        return f"{step.name}({shown})"
    room = max(8, (width - len(step.name)) // max(1, len(arguments)) - 4)
    parts = [
        f"{key}={_short(orjson.dumps(value).decode(), room)}" for key, value in arguments.items()
    ]
    return f"{step.name}({', '.join(parts)})"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def how_to_vary(steps: Sequence[Step]) -> str:
    """What would vary ``steps`` (not-varied tool steps ``--tools recorded`` holds), in a sentence:
    a resample function for each tool, more stored runs that made the call, and the built-in
    simulation of a tool when this agent-replay has it."""
    tools = sorted({s.name for s in steps if s.kind is StepKind.TOOL})
    others = sorted({f"{s.kind.value} {s.name}" for s in steps if s.kind is not StepKind.TOOL})
    ways = []
    if tools:
        named = ", ".join(tools)
        ways.append(f"a resample function for {named} (@resampler('tool', name=...))")
        ways.append("more stored runs that made the same call with another result")
        simulate = next((t for t in ToolSource if "simulate" in t.value.split(",")), None)
        if simulate is not None:
            ways.append(f"{setting('tools', simulate.value)}, which has a model play the tool")
    if others:
        ways.append(f"a resample function for {', '.join(others)}")
    return "; or ".join(ways)


def resting_on(
    found_variations: Sequence[Variation],
    varied: Sequence[int],
    found: Localisation | None,
    verdict: Verdict,
    mode: Mode,
    config: AttributionConfig,
) -> list[Variation] | None:
    """The not-varied steps the verdict would rest on (`blocking`), or None when it rests on none:
    a culprit on every later step, "settled" on every step after the first varied one (one
    before it may have settled the failure, which is what "settled" says), nothing varied on
    every step something was to vary."""
    if mode is not Mode.FAILURE or config.swap_model is not None:
        return None
    if not varied:
        after = -1
    elif verdict is Verdict.CULPRIT and found is not None and found.point_of_commitment is not None:
        after = found.point_of_commitment
    elif verdict is Verdict.SETTLED:
        after = varied[0]
    else:
        return None
    resting = blocking(found_variations, after)
    return resting or None


def with_variation(
    steps: tuple[StepAttribution, ...], found: Sequence[Variation]
) -> tuple[StepAttribution, ...]:
    """Each step with whether resampling it can vary it, and by what or why not."""
    return tuple(
        dataclasses.replace(s, varied=found[s.index].varied, variation=found[s.index].how)
        for s in steps
    )


def cannot_tell(
    trajectory: Trajectory,
    found: Localisation | None,
    unvaried: Sequence[Variation],
    varied: Sequence[int],
    config: AttributionConfig,
) -> str:
    """Why the verdict is "cannot tell": the not-varied steps it would rest on, why each was not
    varied, what was shown of the others, and what would vary them."""

    def name(i: int) -> str:
        step = trajectory.steps[i]
        return f"step {i} ({step.kind.value} {step.name})"

    held = "; ".join(f"{name(v.index)}: {v.how}" for v in unvaried)
    them = (
        ("these steps", "their", "results", "them")
        if len(unvaried) > 1
        else ("this step", "its", "result", "it")
    )
    ways = how_to_vary([trajectory.steps[v.index] for v in unvaried])
    tail = (
        f"Not varied: {held}. Resampling could only give back the record, so {them[0]} kept "
        f"{them[1]} recorded {them[2]} in every rollout and nothing here says whether the "
        f"failure rests on {them[3]}. To vary {them[3]}: {ways}."
    )
    if not varied or found is None:
        return f"Cannot tell: no step resampling could vary was tried. {tail}"
    if found.bracket is not None:
        low = found.bracket[0]
        step = found.steps[low]
        shown = (
            f" (keeping it raises the failure rate by {step.attribution:.2f})"
            if step.attribution is not None
            else ""
        )
        return (
            f"Cannot tell: {name(low)} is shown to matter{shown} and every later varied step to "
            f"have no effect beyond ±{config.margin:g}, but the failure may have become "
            f"inevitable later, at a step that was not varied. {tail}"
        )
    return (
        f"Cannot tell: no varied step changes the failure rate by more than ±{config.margin:g}, "
        f"but that says nothing of the steps that were not varied. {tail}"
    )


def open_root(found: Localisation, found_variations: Sequence[Variation]) -> Localisation:
    """``found`` with its root cause left open when a step before it was to be resampled and was
    not varied: "every earlier step shown not to matter" would rest on it."""
    root = found.root_cause
    if root is None or root.index is None:
        return found
    before = [v for v in blocking(found_variations, -1) if v.index < root.index]
    if not before:
        return found
    held = "; ".join(f"step {v.index} ({v.kind} {v.name}): {v.how}" for v in before)
    why = f"an earlier step was not varied, so it may be the root cause ({held})"
    opened = RootCause(None, True, bracket=(before[0].index, root.index), calls=root.calls, why=why)
    return dataclasses.replace(found, root_cause=opened)


def held_words(found_variations: Sequence[Variation], after: int) -> str:
    """A sentence on the steps after step ``after`` that ``--tools recorded`` held because every
    stored run that made the call was answered the same (empty when there are none)."""
    held = [
        v
        for v in found_variations
        if v.index > after and not v.varied and not v.blocks and v.alternatives is not None
    ]
    if not held:
        return ""
    named = "; ".join(f"step {v.index} ({v.kind} {v.name}): {v.how}" for v in held)
    return (
        f" Not varied, held as the stored runs were answered: {named} (a resample function, or a "
        "stored run answered otherwise, would vary it)."
    )


def nothing_varied(trajectory: Trajectory, found_variations: Sequence[Variation]) -> str:
    """The explanation of a failure no step of which resampling could vary: no rollout was run,
    and nothing says where the failure became inevitable."""
    named = "; ".join(
        f"step {v.index} ({v.kind} {v.name}): {v.how}"
        for v in found_variations
        if not v.how.startswith(WORLD[1])
    )
    steps = [s for s in trajectory.steps if not s.reads_environment]
    return (
        "Cannot tell: no step of this run can be varied by resampling, so no rollout was run and "
        f"nothing here says where the failure became inevitable. {named}. To vary them: "
        f"{how_to_vary(steps)}."
    )
