"""What the report page says of causes beside the Point of Commitment: the root cause's sentence
under the verdict, and each step's necessity and sufficiency in the steps table. It reads the JSON
report (``root_cause``, ``steps[].necessity`` and ``sufficiency``); every value from it is escaped,
and a report older than version 6, which has neither, shows neither."""

from __future__ import annotations

from typing import Any

from otel_replay.report._page import esc


def suspect(report: dict[str, Any]) -> str:
    """The suspect's paragraph (``--suspect``): the step, who named it and why, and whether the
    replay confirmed it; empty without one (or in a report older than it)."""
    found = report.get("suspect")
    if not isinstance(found, dict) or not isinstance(found.get("step"), int):
        return ""
    who = "yours" if found.get("source") == "user" else "named by one model call (the judge)"
    reason = found.get("reason")
    why = f": <q>{esc(reason)}</q>" if isinstance(reason, str) and reason else ""
    confirmed = found.get("confirmed")
    said = (
        "confirmed by replay: it matters"
        if confirmed
        else "not tested"
        if confirmed is None
        else f"not confirmed ({esc(found.get('decision', 'open'))})"
    )
    effect, interval = found.get("effect"), found.get("interval")
    numbers = (
        f" ({effect:+.2f} [{interval[0]:+.2f}, {interval[1]:+.2f}], 95 %)"
        if isinstance(effect, float | int) and isinstance(interval, list) and len(interval) == 2
        else ""
    )
    calls = found.get("calls_to_confirm")
    cost = f" after {calls:,} resample-function calls" if isinstance(calls, int) and calls else ""
    return (
        f'<p id="suspect">Suspect: step #{esc(found["step"])} ({who}{why}): '
        f"{said}{numbers}{cost}.</p>"
    )


def root_cause(report: dict[str, Any], located: Any) -> str:
    """The root cause's paragraph (``located``: the step the question located, if any): "the
    failure became inevitable at step 2 (…); its root cause is step 1 (…): resampling it saves
    the run 58 % [49, 66] of the time", or where it stayed open and why, or that it was not
    sought; empty when the report has none (no step matters, an older report, the swap question)."""
    root = report.get("root_cause")
    if not isinstance(root, dict) or report.get("mode") == "swap-model":
        return ""
    if not root.get("sought"):
        return (
            '<p class="muted" id="root-cause">Root cause: not sought (<span class="mono">'
            "attribute --root-cause</span> looks for the earliest step that matters).</p>"
        )
    calls = root.get("calls")
    cost = (
        f' <span class="muted">(the root-cause search: {calls:,} resample-function calls)</span>'
        if isinstance(calls, int) and calls > 0
        else ""
    )
    index = root.get("step")
    if not isinstance(index, int):
        bracket = root.get("bracket")
        between = (
            f" between steps #{esc(bracket[0])} and #{esc(bracket[-1])}"
            if isinstance(bracket, list) and bracket
            else ""
        )
        why = f": {esc(root['why'])}" if root.get("why") else ""
        return f'<p id="root-cause">Root cause: open{between}{why}.{cost}</p>'
    credit = report.get("mode") == "credit"
    outcome = "success" if credit else "failure"
    saves = f"resampling it {_turned(root.get('saves'), credit)}"
    before = root.get("cleared_before")
    joint = (
        f"; {_runs(root.get('cleared'), before)} were shown to have no effect together (by the "
        "search from the start), not one by one"
        if isinstance(before, int) and before > 0
        else ""
    )
    lucky = _lowered(report, root.get("lowered"))
    if index == located:
        shown = "to have no effect" if not lucky else "not to matter"
        return (
            f'<p id="root-cause">The {outcome} became inevitable at {_named(report, index)}, '
            f"which is also its root cause: every earlier resamplable step was shown {shown}"
            f"{joint}; {saves}.{lucky}{cost}</p>"
        )
    inevitable = (
        f"The {outcome} became inevitable at {_named(report, located)}; its root cause is"
        if isinstance(located, int)
        else "Its root cause is"
    )
    return (
        f'<p id="root-cause">{inevitable} {_named(report, index)}: {saves}{joint}.{lucky}{cost}</p>'
    )


def _runs(cleared: Any, before: Any) -> str:
    """``the steps before step #20`` (one run from the first, or a report older than version 8),
    else ``the steps #0–#6, #9–#19``."""
    runs = [r for r in cleared or [] if isinstance(r, list) and len(r) == 2]
    if len(runs) <= 1 and (not runs or runs[0][0] == 0):
        return f"the steps before step #{esc(before)}"
    return "the steps " + ", ".join(
        f"#{esc(a)}–#{esc(b - 1)}" if isinstance(b, int) and b - 1 != a else f"#{esc(a)}"
        for a, b in runs
    )


def _lowered(report: dict[str, Any], lowered: Any) -> str:
    """A sentence on the steps before the root cause shown to lower the failure rate (lucky
    records: decided, no culprits); empty when none were, or the report is older than version 8."""
    if not isinstance(lowered, list) or not lowered:
        return ""
    rate = "success" if report.get("mode") == "credit" else "failure"
    steps = ", ".join(_named(report, i) for i in lowered if isinstance(i, int))
    verb = "lowered" if len(lowered) == 1 else "each lowered"
    return (
        f" Before it, {steps} {verb} the {rate} rate beyond the margin: a lucky record, decided, "
        "and no culprit."
    )


def _named(report: dict[str, Any], index: int) -> str:
    """``step 1 (tool lookup_order)``, escaped."""
    step: dict[str, Any] = next(
        (s for s in report.get("steps") or [] if s.get("index") == index), {}
    )
    what = f"{step.get('kind', '')} {step.get('name', '')}".strip()
    return f"step {esc(index)}" + (f" (<span class='mono'>{esc(what)}</span>)" if what else "")


def _turned(saves: Any, credit: bool) -> str:
    """``saves the run <b>58 %</b> [49, 66] of the time`` (``loses``, for a passing run)."""
    verb = "loses" if credit else "saves"
    if not isinstance(saves, dict) or not saves.get("n"):
        return f"{verb} the run (no rollout measured how often)"
    value, low, high = (_percent(saves.get(k)) for k in ("value", "ci_low", "ci_high"))
    return f"{verb} the run <b>{value} %</b> [{low}, {high}] of the time"


def _percent(value: Any) -> str:
    return f"{100 * value:.0f}" if isinstance(value, int | float) else "?"


def pn_ps(step: dict[str, Any]) -> str:
    """The steps table's cell: the step's probabilities of necessity and sufficiency, each with
    its 95 % interval, and in its title the bounds without monotonicity (a dash: not estimated)."""
    shares = [(label, step.get(key)) for label, key in (("PN", "necessity"), ("PS", "sufficiency"))]
    if not any(isinstance(share, dict) for _, share in shares):
        return '<span class="muted">—</span>'
    return "".join(f"<div>{_share(label, share)}</div>" for label, share in shares)


def _share(label: str, share: Any) -> str:
    if not isinstance(share, dict):
        return f'{label} <span class="muted">— (undefined)</span>'
    value, low, high = (_number(share.get(k)) for k in ("value", "ci_low", "ci_high"))
    bounds = share.get("without_monotonicity")
    title = (
        f"without monotonicity: between {_number(bounds[0])} and {_number(bounds[-1])}"
        if isinstance(bounds, list) and bounds
        else ""
    )
    return (
        f'<span class="mono" title="{esc(title)}">{label} {value} '
        f'<span class="muted">[{low}, {high}]</span></span>'
    )


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "?"
