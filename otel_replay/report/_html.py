"""The attribution report as one self-contained HTML page, in three phases.

**The run** (the step timeline; observed-only steps greyed; the Point of Commitment marked),
**the attribution** (each step's estimate and interval on one shared axis, P(fail) kept against
resampled, the decision and the test that made it, the walk's band tests, Shapley values with their
standard errors and the efficiency check) and **the repair** (the recorded output against the
repairing one, as a diff; a model turn's outputs both as messages, so a response an SDK returned is
not set against a message), then the configuration that reproduces it. It reads the JSON report
(`build_report`) and, when it has it, the run itself; without the run it shows what the report holds.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import orjson

from otel_replay.attribution import WORLD, BudgetUnit, Spend, budget_words, percent
from otel_replay.model import StepKind, Trajectory
from otel_replay.report._causes import pn_ps, root_cause, suspect
from otel_replay.report._page import esc, page
from otel_replay.report._timeline import Mark, run_section
from otel_replay.transcript import compared_output

#: Lines of a repair diff shown at most (a 50 KB output is a few thousand lines of JSON).
_DIFF_LINES = 4000


def html_report(
    report: dict[str, Any], trajectory: Trajectory | None = None, *, nav: str = ""
) -> str:
    """The report page for ``report`` (the JSON report's data), with ``trajectory`` the run it is
    about when there is one (its steps' inputs and outputs, the recorded output the repair changes).
    """
    run_id = str(report.get("trajectory_id", "?"))
    return page(
        f"agent-replay · {run_id[:12]} · {report.get('verdict', '')}",
        report_body(report, trajectory),
        nav=nav,
    )


@dataclass(frozen=True, slots=True)
class Question:
    """What a report asked, as its pages word it: the step it located (if any), the mark that
    step gets, and the page's title."""

    located: Any
    label: str
    title: str


def question(report: dict[str, Any]) -> Question:
    """The question of ``report`` (its ``mode``): failure, credit or swap-model."""
    mode = report.get("mode")
    swap = report.get("swap")
    if mode == "swap-model" and isinstance(swap, dict):
        model = str(swap.get("model", "?"))
        return Question(
            swap.get("from_step"), f"{model} saves from here", f"Swap credit of {model}"
        )
    if mode == "credit":
        return Question(report.get("save_point"), "Save point", "Rescue credit")
    return Question(report.get("point_of_commitment"), "Point of Commitment", "Failure attribution")


def report_body(report: dict[str, Any], trajectory: Trajectory | None) -> str:
    """The report's sections, for a page of its own or the viewer's."""
    asked = question(report)
    located, title = asked.located, esc(asked.title)
    return (
        f"<h1>{title} of run <span class='mono'>{esc(report.get('trajectory_id', '?'))}</span></h1>"
        f"{_banner(report, asked)}{root_cause(report, located)}{suspect(report)}"
        f"<h2>1 · The run</h2>{_run(report, trajectory, asked)}"
        f"<h2>2 · The attribution</h2>{_attribution(report, located)}"
        f"<h2>3 · The repair</h2>{_repair(report, trajectory)}"
        f"<h2>Configuration</h2>{_config(report)}"
    )


def _banner(report: dict[str, Any], asked: Question) -> str:
    verdict = report.get("verdict")
    located = asked.located
    explanation = f"<p>{esc(report.get('explanation') or '')}</p>"
    if verdict in ("culprit", "saved") and isinstance(located, int):
        step = _step(report, located)
        what = f"{step.get('kind', '')} {step.get('name', '')}".strip()
        return (
            f'<div class="banner poc" id="verdict"><b>{esc(asked.label)}: step #{located}</b> '
            f"<span class='mono'>{esc(what)}</span>{explanation}</div>"
        )
    if verdict == "inconclusive":
        bracket = report.get("bracket")
        between = f" between steps #{bracket[0]} and #{bracket[1]}" if bracket else ""
        calls = report.get("calls_needed")
        rollouts = report.get("rollouts_needed")
        might = (
            f" About {calls:,} resample-function calls ({rollouts:,} rollouts per plan) might decide it."
            if isinstance(calls, int) and isinstance(rollouts, int)
            else ""
        )
        return (
            f'<div class="banner undecided" id="verdict"><b>Inconclusive{esc(between)}.</b>'
            f"{esc(might)}{explanation}</div>"
        )
    if verdict == "settled":
        failure = "success" if report.get("mode") == "credit" else "failure"
        return (
            f'<div class="banner settled" id="verdict"><b>Settled: no resamplable step changes '
            f"the {failure} rate.</b>{explanation}</div>"
        )
    if verdict == "cannot-tell":
        named = [
            f"#{s.get('index')} {s.get('kind', '')} {s.get('name', '')}".strip()
            for s in report.get("steps") or []
            if isinstance(s, dict) and s.get("varied") is False and _holds(s)
        ]
        which = f" ({', '.join(named)})" if named else ""
        return (
            f'<div class="banner undecided" id="verdict"><b>Cannot tell: the verdict would rest '
            f"on steps that were not varied{esc(which)}.</b>{explanation}</div>"
        )
    if verdict == "no-evidence":
        return (
            f'<div class="banner undecided" id="verdict"><b>No evidence: too many rollouts were '
            f"left out to conclude.</b>{explanation}</div>"
        )
    return f'<div class="banner ok" id="verdict"><b>{esc(verdict or "")}</b>{explanation}</div>'


def _evidence(evidence: Any) -> str | None:
    """The rollouts left out, and why (None in a report older than version 5)."""
    if not isinstance(evidence, dict):
        return None
    unservable = evidence.get("unservable") or {}
    crashed = evidence.get("crashed") or {}
    parts = [f"{evidence.get('left_out', 0)} of {evidence.get('rollouts', 0)} rollouts left out"]
    calls = unservable.get("calls") or []
    if unservable.get("rollouts"):
        named = "; ".join(
            f"{c.get('tool')}({_json(c.get('arguments'))}) in {c.get('rollouts')}"
            for c in calls[:5]
        )
        parts.append(f"{unservable['rollouts']} could not be served: {named}")
    if crashed.get("rollouts"):
        parts.append(f"{crashed['rollouts']} crashed, the first with {crashed.get('first')}")
    return "; ".join(parts)


def _draws(evidence: Any) -> str | None:
    """How many tool results came from which stored run (None: nothing was drawn)."""
    draws = evidence.get("draws") if isinstance(evidence, dict) else None
    if not isinstance(draws, dict) or not (draws.get("total") or draws.get("faults")):
        return None
    runs = ", ".join(f"{r.get('run')}: {r.get('draws')}" for r in draws.get("runs") or [])
    faults = "; ".join(
        f"{c.get('tool')}({_json(c.get('arguments'))}) {c.get('draws')}x"
        for c in draws.get("faults") or []
    )
    shown = f"{draws.get('total', 0)} ({runs})" if runs else str(draws.get("total", 0))
    return shown + (f"; failed as injected faults: {faults}" if faults else "")


def _cost(cost: dict[str, Any]) -> str:
    """The report's cost: rollouts, then what users pay (model calls and their tokens, tool calls,
    free draws) and the part the rollouts left out spent, the judge's calls, the time; a report
    from before the split says calls alone."""
    split = Spend.from_record(cost)
    paid = (
        f"{split.words()} ({cost.get('step_executions')} resample-function calls)"
        if split is not None
        else f"{cost.get('step_executions')} step executions"
    )
    found = cost.get("left_out")
    left_out: dict[str, Any] = found if isinstance(found, dict) else {}
    part = Spend.from_record(left_out)
    if part is not None and part.calls and left_out.get("rollouts"):
        paid += (
            f"; of which {part.calls_words()} in the {left_out['rollouts']} rollouts left out "
            "(unservable or crashed)"
        )
    return (
        f"{cost.get('rollouts')} rollouts; {paid}, "
        + (f"{cost['judge_calls']} judge calls, " if cost.get("judge_calls") else "")
        + f"{cost.get('wall_seconds')} s"
    )


def _budget(config: dict[str, Any]) -> str | None:
    """The budget in its unit (calls in a report from before units)."""
    budget = config.get("budget")
    if not isinstance(budget, int):
        return None
    try:
        unit = BudgetUnit(config.get("budget_unit") or BudgetUnit.CALLS.value)
    except ValueError:
        return f"{budget:,} {config.get('budget_unit')}"
    return budget_words(budget, unit)


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _step(report: dict[str, Any], index: int) -> dict[str, Any]:
    return next((s for s in report.get("steps") or [] if s.get("index") == index), {})


def _run(report: dict[str, Any], trajectory: Trajectory | None, asked: Question) -> str:
    if trajectory is None:
        return (
            '<p class="muted">The run itself is not in the store this page was made from, so its '
            "steps' messages and values are not shown; the attribution below is the report's.</p>"
        )
    marks: dict[int, list[Mark]] = {}
    if isinstance(asked.located, int):
        marks[asked.located] = [Mark(asked.label, "poc")]
    repair = report.get("repair")
    if isinstance(repair, dict) and isinstance(repair.get("step_index"), int):
        marks.setdefault(repair["step_index"], []).append(Mark("repaired below", "repaired"))
    for s in report.get("steps") or []:
        if isinstance(s, dict) and s.get("varied") is False and _holds(s):
            marks.setdefault(s["index"], []).append(Mark("not varied", "unvaried"))
    root = report.get("root_cause")
    step = root.get("step") if isinstance(root, dict) else None
    if isinstance(step, int) and step != asked.located and report.get("mode") != "swap-model":
        marks.setdefault(step, []).append(Mark("Root cause", "root"))
    return run_section(trajectory, marks)


def _attribution(report: dict[str, Any], located: Any) -> str:
    steps = report.get("steps") or []
    if not steps:
        return '<p class="muted">No step was estimated.</p>'
    shapley = report.get("shapley")
    causes = any(isinstance(s.get(k), dict) for s in steps for k in ("necessity", "sufficiency"))
    root = report.get("root_cause")
    root_step = root.get("step") if isinstance(root, dict) else None
    before = root.get("cleared_before") if isinstance(root, dict) else None
    rows = []
    for s in steps:
        index = s.get("index")
        cleared = s.get("band") is not None or s.get("cleared_by") is not None
        cleared = cleared or _cleared_before(s, before)
        css = "poc" if index == located else ("cleared" if cleared else "")
        css = "root" if index == root_step and index != located else css
        rows.append(
            f'<tr class="{css}" data-step="{esc(index)}"><td class="mono">#{esc(index)}</td>'
            f"<td>{esc(s.get('kind', ''))} <span class='mono'>{esc(s.get('name', ''))}</span>"
            + ('<span class="badge root">root cause</span>' if css == "root" else "")
            + "</td>"
            f"<td class='mono'>{_number(s.get('attribution'))}</td>"
            f"<td>{_axis(s)}</td>"
            f"<td class='mono'>{_rate(s.get('p_fail_kept'))} / {_rate(s.get('p_fail_ablated'))}</td>"
            f"<td>{_decision(s, before)}</td>"
            + (f"<td class='causes'>{pn_ps(s)}</td>" if causes else "")
            + (
                f"<td class='mono'>{_number(s.get('shapley'))}"
                f"{' ± ' + _number(s.get('shapley_se')) if s.get('shapley_se') is not None else ''}</td>"
                if shapley
                else ""
            )
            + "</tr>"
        )
    head = (
        "<tr><th>step</th><th>kind and name</th><th>estimate</th>"
        "<th title='each estimate&#39;s 95 % interval, for reading; the decision column gives the "
        "simultaneous interval the tests read'>95 % interval on −1 … 0 … +1</th>"
        f"<th>{esc(_rates(report))}</th><th>decision</th>"
        + (
            "<th title='probability of necessity: resampling the step turns the outcome around; "
            "of sufficiency: keeping it brings the outcome about (95 % intervals)'>"
            "necessity / sufficiency</th>"
            if causes
            else ""
        )
        + ("<th>Shapley ± SE</th>" if shapley else "")
        + "</tr>"
    )
    estimand = f"<p class='muted mono'>{esc(report.get('estimand', ''))}</p>"
    table = (
        f'<table class="attribution"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'
    )
    return estimand + table + _which_interval(steps) + _search(report) + _shapley(shapley)


def _which_interval(steps: list[dict[str, Any]]) -> str:
    """Which interval is which, under the table (reports from version 8, which give both)."""
    if not any(isinstance(s.get("intervals"), dict) for s in steps):
        return ""
    return (
        '<p class="muted" id="intervals">The bars are each estimate\'s 95 % interval, for '
        "reading. The decision column gives the simultaneous interval the tests read, at the "
        "confidence shown there: wider, since the error bound is split over every step, "
        "question and look. Both are in the JSON report (<span class='mono'>steps[].intervals"
        "</span>).</p>"
    )


def _number(value: Any) -> str:
    return f"{value:+.2f}" if isinstance(value, int | float) else '<span class="muted">—</span>'


def _rate(p: Any) -> str:
    if not isinstance(p, dict) or p.get("n") in (None, 0):
        return '<span class="muted">—</span>'
    return (
        f"<span title='{esc(p.get('failures'))} failed of {esc(p.get('n'))}; "
        f"95% [{p.get('ci_low', 0):.2f}, {p.get('ci_high', 0):.2f}]'>"
        f"{p.get('value', 0):.2f}</span>"
    )


def _axis(s: dict[str, Any]) -> str:
    """The estimate (a dot) and its interval (a bar) on the axis every row shares, −1 to +1."""
    value, low, high = s.get("attribution"), s.get("ci_low"), s.get("ci_high")

    def at(v: float) -> float:
        return max(0.0, min(100.0, (v + 1) * 50))

    if not isinstance(value, int | float):
        return '<div class="axis"><span class="zero" style="left:50%"></span></div>'
    bar = ""
    if isinstance(low, int | float) and isinstance(high, int | float):
        bar = (
            f'<span class="ci" style="left:{at(low):.1f}%;width:{at(high) - at(low):.1f}%"></span>'
        )
    title = f"{value:+.3f}" + (f" [{low:+.3f}, {high:+.3f}]" if bar else "")
    return (
        f'<div class="axis" title="{esc(title)}"><span class="zero" style="left:50%"></span>{bar}'
        f'<span class="est" style="left:{at(value):.1f}%"></span></div>'
    )


def _decision(s: dict[str, Any], before: Any = None) -> str:
    """Which test decided the step, with the bound it read, and what varied it (a recorded draw,
    the model playing a tool, the built-in model, a resample function); ``before``: the step
    before which the root cause's search from the start cleared every step together."""
    decided = _decided(s, before)
    if s.get("varied") is True and s.get("variation"):
        decided += f'<br><span class="muted">varied by {esc(s["variation"])}</span>'
    return decided


def _decided(s: dict[str, Any], before: Any = None) -> str:
    tests = s.get("tests") or {}
    if s.get("band") is not None:
        return f"no effect: in band ({esc(s['band'])}/{esc(s['band'])}) <span class='muted'>(the walk)</span>"
    if s.get("cleared_by") is not None:
        return f"no effect, with every step from #{esc(s['cleared_by'])} <span class='muted'>(the search)</span>"
    if _cleared_before(s, before):
        return (
            f"no effect, with every step before #{esc(before)} "
            "<span class='muted'>(the root cause's search)</span>"
        )
    if s.get("varied") is False:
        return f'<b>not varied</b> <span class="muted">{esc(s.get("variation") or "")}</span>'
    if not s.get("resamplable", True):
        return '<span class="muted">observed only: never resampled</span>'
    if s.get("significant") and tests.get("matters"):
        m = tests["matters"]
        return (
            f"<b>matters</b> <span class='muted'>lower bound {m.get('lower_bound', 0):+.3f} &gt; 0 at "
            f"{_confidence(m.get('confidence'))} one-sided</span>"
        )
    if s.get("no_effect") and tests.get("no_effect"):
        n = tests["no_effect"]
        a, b = (n.get("interval") or [0, 0])[:2]
        return (
            f"no effect <span class='muted'>[{a:+.3f}, {b:+.3f}] inside ±{n.get('margin', 0):g} at "
            f"{_confidence(n.get('confidence'))}</span>"
        )
    if s.get("lowered") and tests.get("no_effect"):
        n = tests["no_effect"]
        a, b = (n.get("interval") or [0, 0])[:2]
        return (
            f"<b>lowered</b> the rate <span class='muted'>[{a:+.3f}, {b:+.3f}] below "
            f"−{n.get('margin', 0):g} at {_confidence(n.get('confidence'))}: a lucky record, "
            "no culprit</span>"
        )
    if tests:
        return '<span class="muted">undecided at these rollouts</span>'
    return '<span class="muted">not estimated</span>'


def _holds(s: dict[str, Any]) -> bool:
    """Whether a not-varied step was to be resampled and could not (not an observed-only step,
    not a read of the environment): those a verdict cannot rest on."""
    why = str(s.get("variation") or "")
    return isinstance(s.get("index"), int) and not why.startswith(WORLD)


def _cleared_before(s: dict[str, Any], before: Any) -> bool:
    index = s.get("index")
    return (
        isinstance(before, int)
        and isinstance(index, int)
        and index < before
        and s.get("resamplable", True)
        and not s.get("tests")
    )


def _confidence(value: Any) -> str:
    """A test's confidence with the digits it needs not to read 100 % (99.996%)."""
    if not isinstance(value, int | float):
        return "?"
    return percent(value) if value < 1 else "100%"


def _search(report: dict[str, Any]) -> str:
    questions = report.get("search") or []
    if not questions:
        return ""
    rows = "".join(
        f"<tr><td class='mono'>#{esc(q.get('from_step'))} …</td><td class='mono'>{_number(q.get('effect'))}</td>"
        f"<td class='mono'>{_rate(q.get('p_fail_record'))} / {_rate(q.get('p_fail_resampled'))}</td>"
        f"<td>{esc(q.get('decision', ''))}</td></tr>"
        for q in questions
    )
    return (
        "<h3>The walk's band tests</h3><p class='muted'>Each resampled every step from the one "
        "named on, against the record kept whole: in the band when every rollout ended as the "
        "record did.</p><table><thead><tr><th>resampled from</th>"
        f"<th>effect</th><th>P(fail) record / resampled</th><th>decision</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _shapley(shapley: Any) -> str:
    if not isinstance(shapley, dict):
        return ""
    gap = shapley.get("efficiency_gap")
    note = f"<p class='muted'>{esc(shapley['note'])}</p>" if shapley.get("note") else ""
    return (
        "<h3>Shapley efficiency check</h3>"
        f"<p>Σφ = {_number(shapley.get('sum'))} ± {_plain(shapley.get('sum_se'))} against "
        f"v(all) − v(∅) = {_number(shapley.get('expected_sum'))}: gap {_number(gap)} "
        f"<span class='muted'>({esc(shapley.get('permutations'))} permutations, antithetic pairs; "
        f"largest SE {_plain(shapley.get('max_se'))})</span></p>{note}"
    )


def _plain(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "—"


def _rates(report: dict[str, Any]) -> str:
    """What the P(fail) column holds: the step's two plans."""
    swap = report.get("swap")
    if report.get("mode") == "swap-model" and isinstance(swap, dict):
        return f"P(fail) with {swap.get('model', '?')} from the next step / from this one"
    return "P(fail) kept / resampled"


def _repair(report: dict[str, Any], trajectory: Trajectory | None) -> str:
    repair = report.get("repair")
    if not isinstance(repair, dict):
        note = (
            report.get("repair_note") or "No repair was searched (attribute --repair searches one)."
        )
        return f'<p class="muted">{esc(note)}</p>'
    index = repair.get("step_index")
    recorded, kind = None, StepKind.LLM if repair.get("move") == "do" else None
    if trajectory is not None and isinstance(index, int) and 0 <= index < len(trajectory.steps):
        recorded, kind = trajectory.steps[index].output, trajectory.steps[index].kind
    # messages against messages: a model turn recorded through --instrument holds its SDK's response
    repairing = compared_output(kind, repair.get("output")) if kind else repair.get("output")
    move = {"do": "do: the turn's output", "observe": "observe: what came back"}.get(
        str(repair.get("move")), ""
    )
    summary = (
        (f"<p class='muted'>{esc(move)} — {esc(repair.get('plan', ''))}</p>" if move else "")
        + f"<p>Step <b>#{esc(index)}</b> returning the output below saves the run "
        f"<b>{100 * repair.get('success_rate', 0):.0f}%</b> of the time "
        f"<span class='mono'>[{repair.get('ci_low', 0):.2f}, {repair.get('ci_high', 0):.2f}]</span> "
        f"over {esc(repair.get('n'))} rollouts; similarity to the record "
        f"{repair.get('minimality', 0):.2f} (1 is unchanged); found by "
        f"<span class='mono'>{esc(repair.get('source', ''))}</span> after "
        f"{esc(repair.get('candidates_tried'))} candidates.</p>"
    )
    if recorded is None or kind is None:
        return summary + f"<h3>The repairing output</h3><pre>{esc(_pretty(repairing))}</pre>"
    return (
        summary
        + "<h3>Recorded → repairing output</h3>"
        + _diff(compared_output(kind, recorded), repairing)
    )


def _pretty(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _diff(before: Any, after: Any) -> str:
    """A line diff of two values' JSON: removed lines red, added green, the rest as context."""
    lines = difflib.unified_diff(
        _pretty(before).splitlines(),
        _pretty(after).splitlines(),
        "recorded",
        "repair",
        n=3,
        lineterm="",
    )
    shown = []
    for count, line in enumerate(lines):
        if count >= _DIFF_LINES:
            shown.append('<div class="muted">… (the rest of the diff is left out)</div>')
            break
        css = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        shown.append(f'<div class="{css}">{esc(line)}</div>')
    return f'<div class="diff" id="repair-diff">{"".join(shown)}</div>'


def _config(report: dict[str, Any]) -> str:
    config = report.get("config") or {}
    cost = report.get("cost") or {}
    fields = [
        ("seed", config.get("seed")),
        ("strategy", config.get("strategy")),
        ("rollouts", config.get("rollouts")),
        ("max rollouts per plan", config.get("max_rollouts")),
        ("budget", _budget(config)),
        ("method", config.get("method")),
        ("driver", config.get("driver")),
        ("resamplers", ", ".join(map(str, config.get("resamplers") or [])) or "—"),
        ("verifier", config.get("verifier")),
        ("margin", config.get("margin")),
        ("fail threshold", config.get("fail_threshold")),
        ("error bound", config.get("error_bound")),
        (
            "interval methods",
            ", ".join(f"{k}: {v}" for k, v in (config.get("interval_methods") or {}).items()),
        ),
        ("decisions", config.get("decisions")),
        ("cost", _cost(cost)),
        ("evidence", _evidence(report.get("evidence"))),
        ("draws from the store", _draws(report.get("evidence"))),
        ("report version", report.get("version")),
    ]
    judge = report.get("judge")
    if isinstance(judge, dict):
        verdicts = "; ".join(
            f"{v.get('verdict')} ({v.get('runs')} runs): {v.get('reason')}"
            for v in judge.get("verdicts") or []
            if isinstance(v, dict)
        )
        fields.insert(9, ("judge", f"{judge.get('question')} — {verdicts or 'no verdict'}"))
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc('—' if v is None else v)}</dd>" for k, v in fields)
    rerun = config.get("rerun")
    command = f"<h3>Reproduce it</h3><pre id='rerun'>{esc(rerun)}</pre>" if rerun else ""
    return f'<dl class="config">{rows}</dl>{command}'
