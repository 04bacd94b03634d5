"""What ``agent-replay attribute`` says of causes beside the Point of Commitment: the root cause's
line under the verdict, and each step's necessity and sufficiency in the wide table. Every string
that came from a trace passes through `shown`."""

from __future__ import annotations

from otel_replay.attribution import AttributionResult, Mode, Proportion, Share, StepAttribution
from otel_replay.cli._common import shown


def root_cause_line(result: AttributionResult) -> tuple[str, bool] | None:
    """The root cause's line (rich markup) and whether it is dim: found (and whether it is the
    Point of Commitment itself), sought but open (its bracket, and why), or not sought. None when
    there is nothing to say: no step matters, or the swap question (whose plans ask about another
    model, not about resampling a step)."""
    root = result.root_cause
    if root is None or result.swap_model is not None:
        return None
    if not root.sought:
        return "root cause: not sought (--root-cause)", True
    cost = f" (root-cause search: {root.calls:,} call{'' if root.calls == 1 else 's'})"
    cost = cost if root.calls else ""
    if root.index is None:
        where = f" between steps {root.bracket[0]} and {root.bracket[1]}" if root.bracket else ""
        why = f": {shown(root.why)}" if root.why else ""
        return f"root cause: open{where}{why}{cost}", False
    named = step_named(result.steps[root.index])
    saves = f"resampling it {turned_around(root.saves, result.mode)}"
    together = "together (by the search from the start), not one by one"
    lucky = lowered_words(result, root.lowered)
    if root.index == result.point_of_commitment:
        located = "save point" if result.mode is Mode.CREDIT else "point of commitment"
        joint = f" ({_runs(root.cleared, 'those')} {together})" if root.cleared_to else ""
        shown_not = "to have no effect" if not lucky else "not to matter"
        return (
            f"root cause: {named}, the {located} itself: every earlier resamplable step was shown "
            f"{shown_not}{joint}{lucky}; {saves}{cost}",
            False,
        )
    joint = (
        f"; {_runs(root.cleared, 'the steps')} were shown to have no effect {together}"
        if root.cleared_to
        else ""
    )
    return f"root cause: {named}: {saves}{joint}{lucky}{cost}", False


def lowered_words(result: AttributionResult, lowered: tuple[int, ...]) -> str:
    """``; step 8 (tool s08_luck) lowered the failure rate (a lucky record: decided, no culprit)``,
    one clause for the steps before the root cause shown to lower it; empty when none were."""
    if not lowered:
        return ""
    rate = "success" if result.mode is Mode.CREDIT else "failure"
    steps = ", ".join(step_named(result.steps[i]) for i in lowered)
    verb = "lowered" if len(lowered) == 1 else "each lowered"
    return (
        f"; {steps} {verb} the {rate} rate beyond the margin (a lucky record: decided, no culprit)"
    )


def _runs(cleared: tuple[tuple[int, int], ...], the: str) -> str:
    """``the steps before step 20`` (one run from the first), else ``steps 0–6, 9–19``."""
    if len(cleared) == 1 and cleared[0][0] == 0:
        return f"{the} before step {cleared[0][1]}"
    return "steps " + ", ".join(f"{a}–{b - 1}" if b - 1 > a else str(a) for a, b in cleared)


def step_named(step: StepAttribution) -> str:
    """``step 1 (tool lookup_order)``, escaped for rich markup."""
    return f"step {step.index} ({shown(step.kind)} {shown(step.name)})"


def turned_around(saves: Proportion | None, mode: Mode) -> str:
    """How often resampling from the root cause on turns the recorded outcome around, in words:
    ``saves the run 58 % [49, 66] of the time`` (a passing run, in credit mode: ``loses``)."""
    verb = "loses" if mode is Mode.CREDIT else "saves"
    if saves is None or saves.n == 0:
        return f"{verb} the run (no rollout measured how often)"
    return (
        f"{verb} the run {100 * saves.value:.0f} % [{100 * saves.low:.0f}, "
        f"{100 * saves.high:.0f}] of the time"
    )


def pn_ps(step: StepAttribution) -> str:
    """The PN / PS cell: the step's probabilities of necessity and sufficiency (— where one is
    undefined; empty for a step not estimated)."""
    if step.necessity is None and step.sufficiency is None:
        return ""
    return f"{_value(step.necessity)}/{_value(step.sufficiency)}"


def _value(share: Share | None) -> str:
    return "—" if share is None else f"{share.value:.2f}"


def cleared_before(result: AttributionResult, step: StepAttribution) -> int | None:
    """The step before which the root cause's search from the start cleared ``step`` together
    with every other one there, when it did and the step has no estimate of its own."""
    root = result.root_cause
    if root is None or not root.cleared_to or step.attribution is not None:
        return None
    return root.cleared_to if step.resamplable and step.index < root.cleared_to else None
