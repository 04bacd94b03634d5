"""The versioned JSON report of an attribution: the contract other tools build on.

Same seed, same report, byte for byte, except ``cost.wall_seconds``. Floats are rounded to 6 decimals
so the bytes do not depend on how a platform prints the last bits of a double.
"""

from __future__ import annotations

from typing import Any

import orjson

from otel_replay.attribution import (
    BOOTSTRAP,
    ERROR_BOUND,
    EXACT_DIFFERENCE,
    STATED_PROPORTION,
    AttributionConfig,
    AttributionResult,
    Mode,
    Proportion,
    RootCause,
    Share,
    StepAttribution,
    SuffixTest,
    Suspect,
    rerun_command,
)
from otel_replay.errors import ReportFormatError, preview
from otel_replay.replay import Plan
from otel_replay.resamplers import Call, UserCode

#: 2: each step's ``tests`` (the bounds its decisions read) and ``shapley_disagrees``; the Shapley
#: summary's target, largest SE and note. 3: the adaptive ``search`` (its questions about suffixes)
#: and each step's ``estimated`` and ``cleared_by``; strategy ``scan``; ``calls_needed``.
#: 4: the swap question (mode ``swap-model``, ``swap``, ``config.swap_model``, verdict
#: ``saved``); the plans in words (``search[].plan``, ``repair.plan``) and the repair's ``move``.
#: 5: the judge (``judge``: its question and verdicts; ``cost.judge_calls``); ``evidence``
#: (rollouts left out as unservable or crashed, the draws of ``--tools recorded`` per stored run,
#: the faults fallback's calls), verdict ``no-evidence``, each proportion's ``left_out``.
#: 6: exact bounds for every decision (``config.interval_methods``; each step's ``tests`` give
#: the matters and no-effect confidences apart), the reported 95 % intervals valid wherever a
#: sequential strategy stopped; verdict ``settled``; ``root_cause``; each step's ``necessity`` and
#: ``sufficiency``.
#: 7: each step's ``varied`` and ``variation`` (whether resampling can vary it: by what, or why
#: not); verdict ``cannot-tell`` (it would rest on steps that were not varied). ``cost.left_out``:
#: what the rollouts left out of the estimates spent, counted in the totals (every call made);
#: ``evidence.simulated``: the tool calls a model played (``--tools simulate``).
#: 8: each step's ``lowered`` (shown to lower the failure rate beyond the margin: a lucky record,
#: decided) and ``intervals`` (the stated-level 95 % one for reading, ``ci_low``–``ci_high``, and
#: the simultaneous one the decisions read); ``root_cause.lowered`` and ``root_cause.cleared``;
#: ``ci_low``–``ci_high`` and each proportion's interval at 95 % at the rollouts run, no longer
#: split over a sequential strategy's looks (``config.interval_methods.proportion``); ``suspect``
#: (``--suspect``: the step tested first, who named it and why, whether the replay confirmed it).
REPORT_VERSION = 8
#: How Shapley standard errors are made (see `otel_replay.attribution._shapley`).
SHAPLEY_SE = "monte-carlo-antithetic-pairs-pooled-t-se"


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _proportion(p: Proportion | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "value": _r(p.value),
        "failures": p.failures,
        "n": p.n,
        "ci_low": _r(p.low),
        "ci_high": _r(p.high),
        "left_out": p.left_out,
    }


def _evidence(result: AttributionResult) -> dict[str, Any]:
    e = result.evidence
    return {
        "rollouts": result.rollouts,
        "left_out": e.left_out,
        "missing": e.missing,
        "unservable": {
            "rollouts": e.unservable_rollouts,
            "calls": [_call(call, n, "rollouts") for call, n in e.unservable],
        },
        "crashed": {"rollouts": e.crashed, "first": e.first_crash},
        "draws": {
            "total": sum(n for _, n in e.draws),
            "runs": [{"run": run, "draws": n} for run, n in e.draws],
            "faults": [_call(call, n, "draws") for call, n in e.faults],
        },
        "simulated": {
            "calls": e.simulations,
            "tokens": e.simulated_tokens,
            "tools": [_call(call, n, "calls") for call, n in e.simulated],
        },
    }


def _call(call: Call, n: int, counted: str) -> dict[str, Any]:
    return {"tool": call.tool, "arguments": orjson.loads(call.arguments), counted: n}


def _step(step: StepAttribution, margin: float) -> dict[str, Any]:
    return {
        "index": step.index,
        "kind": step.kind,
        "name": step.name,
        "resamplable": step.resamplable,
        "varied": step.varied,
        "variation": step.variation,
        "estimated": step.attribution is not None,
        "cleared_by": step.cleared_by,
        "band": step.band,
        "attribution": _r(step.attribution),
        "ci_low": _r(step.ci_low),
        "ci_high": _r(step.ci_high),
        "p_fail_kept": _proportion(step.kept),
        "p_fail_ablated": _proportion(step.ablated),
        "n": step.kept.n if step.kept is not None else None,
        "shapley": _r(step.shapley),
        "shapley_se": _r(step.shapley_se),
        "significant": step.significant,
        "no_effect": step.no_effect,
        "lowered": step.lowered,
        "intervals": _intervals(step),
        "tests": None
        if step.matters_bound is None or step.no_effect_interval is None
        else {
            "matters": {
                "lower_bound": _r(step.matters_bound),
                "confidence": _r(step.matters_confidence),
                "passed": step.significant,
            },
            "no_effect": {
                "interval": [_r(v) for v in step.no_effect_interval],
                "confidence": _r(step.no_effect_confidence),
                "margin": margin,
                "passed": step.no_effect,
            },
        },
        "shapley_disagrees": step.shapley_disagrees if step.shapley is not None else None,
        "necessity": _share(step.necessity),
        "sufficiency": _share(step.sufficiency),
    }


def _intervals(step: StepAttribution) -> dict[str, Any] | None:
    """Both intervals of a step's estimate: the one at its stated level, for reading, and the
    simultaneous one the decisions read (split over the steps, the questions and the looks)."""
    if step.ci_low is None or step.ci_high is None or step.no_effect_interval is None:
        return None
    return {
        "stated": {"interval": [_r(step.ci_low), _r(step.ci_high)], "confidence": 0.95},
        "simultaneous": {
            "interval": [_r(v) for v in step.no_effect_interval],
            "confidence": _r(step.no_effect_confidence),
        },
    }


def _share(share: Share | None) -> dict[str, Any] | None:
    if share is None:
        return None
    return {
        "value": _r(share.value),
        "ci_low": _r(share.low),
        "ci_high": _r(share.high),
        "without_monotonicity": [_r(share.lower), _r(share.upper)],
    }


def _root_cause(root: RootCause | None) -> dict[str, Any] | None:
    if root is None:
        return None
    saves = root.saves
    return {
        "step": root.index,
        "sought": root.sought,
        "saves": None
        if saves is None
        else {
            "value": _r(saves.value),
            "ci_low": _r(saves.low),
            "ci_high": _r(saves.high),
            "n": saves.n,
        },
        "bracket": list(root.bracket) if root.bracket else None,
        "cleared_before": root.cleared_to,
        "cleared": [list(run) for run in root.cleared],
        "lowered": list(root.lowered),
        "calls": root.calls,
        "why": root.why or None,
    }


def _suspect(suspect: Suspect | None) -> dict[str, Any] | None:
    if suspect is None:
        return None
    return {
        "step": suspect.step,
        "source": suspect.source,
        "reason": suspect.reason,
        "confirmed": suspect.confirmed,
        "decision": suspect.decision,
        "calls_to_confirm": suspect.calls_to_confirm,
        "effect": _r(suspect.effect),
        "interval": None if suspect.interval is None else [_r(x) for x in suspect.interval],
        "matters_bound": _r(suspect.matters_bound),
        "matters_tail": suspect.matters_tail,
    }


def _question(test: SuffixTest, margin: float, result: AttributionResult) -> dict[str, Any]:
    c = test.comparison
    return {
        "from_step": test.start,
        "band": test.band,
        "plan": _plan(Plan.ablate_from(len(result.steps), test.start), result),
        "effect": _r(c.effect),
        "p_fail_record": _proportion(c.kept),
        "p_fail_resampled": _proportion(c.ablated),
        "matters_bound": _r(c.matters_bound),
        "no_effect_interval": [_r(v) for v in c.no_effect_interval],
        "confidence": _r(1 - 2 * (c.no_effect_tail or c.test_tail)),
        "margin": margin,
        "decision": test.decision,
    }


def _plan(plan: Plan, result: AttributionResult) -> str:
    """A plan in words, as it ran (under the swapped-in model, when one was)."""
    model = result.swap_model
    return (plan if model is None else plan.under_model(model, result.swap_from)).describe()


def _swap(result: AttributionResult) -> dict[str, Any] | None:
    model = result.swap_model
    if model is None:
        return None
    located = result.point_of_commitment
    return {
        "model": model,
        "from_step": located,
        "plan": None
        if located is None
        else _plan(Plan.ablate_from(len(result.steps), located), result),
    }


def build_report(
    result: AttributionResult, config: AttributionConfig, code: UserCode | None = None
) -> dict[str, Any]:
    """The report as plain JSON data (see `REPORT_SCHEMA`).

    ``code`` is the user code the attribution ran with (the CLI's ``--resamplers``, ``--verifier``,
    ``--agent``): the report names the command that reproduces it, and its driver: ``trace`` (the
    recorded steps) or ``agent:<module:function>``.
    """
    code = code or UserCode()
    repair = result.repair
    shapley = result.shapley
    located = result.point_of_commitment
    return {
        "version": REPORT_VERSION,
        "trajectory_id": result.trajectory_id,
        "mode": result.question,
        "estimand": _estimand(result),
        "outcome": _r(result.outcome),
        "failed": result.failed,
        "config": {
            "rollouts": config.rollouts,
            "permutations": config.permutations,
            "shapley_se": config.shapley_se,
            "seed": config.seed,
            "method": config.method.value,
            "fail_threshold": config.fail_threshold,
            "margin": config.margin,
            "repair": config.repair,
            "on_resampler_error": config.on_resampler_error.value,
            "resamplers": list(result.resamplers),
            "verifier": result.verifier,
            "decisions": (
                f"a wrong step is named at most {ERROR_BOUND:g} of the time, whatever the "
                "failure rates: half of that is spent on the matters tests, half on the "
                "no-effect tests, each split over the m resamplable steps. matters: the "
                f"one-sided lower bound of the difference at 1 - {ERROR_BOUND:g}/2m is above 0; "
                f"no effect: the interval at 1 - {ERROR_BOUND:g}/m lies inside +-margin (two "
                f"one-sided tests at {ERROR_BOUND:g}/2m); every bound is exact or conservative "
                "(Clopper-Pearson against the record, the difference of exact bounds at half the "
                "error each between two estimates, over the rollout pairs that disagree when the "
                "two plans share random streams); each step's bounds are in steps[].tests"
                + (
                    "; the adaptive and scan strategies count the search's questions (search[]) "
                    "among the m tests, and split each test's error over the looks at which it "
                    "can pass; the 95 % intervals reported split theirs over every look, so they "
                    "hold wherever a question stopped"
                    if config.strategy.sequential
                    else ""
                )
            ),
            "error_bound": ERROR_BOUND,
            "strategy": config.strategy.value,
            "max_rollouts": config.max_rollouts,
            "budget": config.budget,
            "budget_unit": config.budget_unit.value,
            "interval_methods": {
                "proportion": STATED_PROPORTION,
                "difference": EXACT_DIFFERENCE,
                "repair": BOOTSTRAP,
                "shapley": SHAPLEY_SE,
            },
            "driver": result.driver,
            "swap_model": config.swap_model,
            "swap_from": config.swap_from,
            "rerun": rerun_command(result.trajectory_id, config, code),
        },
        "steps": [_step(s, config.margin) for s in result.steps],
        "search": [_question(t, config.margin, result) for t in result.search],
        "point_of_commitment": located if result.question == "failure" else None,
        "save_point": located if result.mode is Mode.CREDIT else None,
        "swap": _swap(result),
        "verdict": result.verdict.value,
        "explanation": result.explanation,
        "bracket": list(result.bracket) if result.bracket else None,
        "rollouts_needed": result.rollouts_needed,
        "calls_needed": result.calls_needed,
        "root_cause": _root_cause(result.root_cause),
        "suspect": _suspect(result.suspect),
        "repair": None
        if repair is None
        else {
            "step_index": repair.step_index,
            "output": repair.output,
            "minimality": repair.similarity,
            "success_rate": _r(repair.success_rate),
            "ci_low": _r(repair.success_low),
            "ci_high": _r(repair.success_high),
            "n": repair.n,
            "source": repair.source,
            "candidates_tried": repair.tried,
            "move": repair.move,
            "plan": repair.plan,
        },
        "repair_note": result.repair_note,
        "shapley": None
        if shapley is None
        else {
            "permutations": shapley.permutations,
            "se_target": shapley.se_target,
            "max_se": _r(max((s.shapley_se or 0.0 for s in result.steps), default=0.0)),
            "note": shapley.note,
            "sum": _r(shapley.total),
            "sum_se": _r(shapley.total_se),
            "expected_sum": _r(shapley.expected_total),
            "v_all": _proportion(shapley.v_all),
            "v_none": _proportion(shapley.v_none),
            "efficiency_gap": _r(shapley.efficiency_gap),
        },
        "judge": _judge(result),
        "evidence": _evidence(result),
        "cost": {
            "rollouts": result.rollouts,
            "step_executions": result.step_executions,
            **result.spend.to_record(),
            "left_out": {
                "rollouts": result.evidence.left_out,
                **result.evidence.spent.to_record(),
            },
            "resampler_errors": result.resampler_errors,
            "judge_calls": 0 if result.judge is None else result.judge.calls,
            "wall_seconds": round(result.wall_seconds, 3),
            **_switched(result),
        },
    }


def _switched(result: AttributionResult) -> dict[str, Any]:
    """``switched_to_fixed``, only where the cost ceiling switched the strategy."""
    switched = result.switched_to_fixed
    if switched is None:
        return {}
    return {
        "switched_to_fixed": {
            "at_calls": switched.at_calls,
            "reused_rollouts": switched.reused_rollouts,
        }
    }


def _judge(result: AttributionResult) -> dict[str, Any] | None:
    """The ``--judge`` verifier's question and its verdicts, each distinct answer once, with the
    scored runs (the recorded one and the rollouts) that reached it."""
    judge = result.judge
    if judge is None:
        return None
    return {
        "question": judge.question,
        "calls": judge.calls,
        "verdicts": [{**t.verdict.to_record(), "runs": t.runs} for t in judge.verdicts],
    }


def _estimand(result: AttributionResult) -> str:
    if result.swap_model is not None:
        return (
            f"swap credit(i) = P(fail | {result.swap_model} from the next step) - "
            f"P(fail | {result.swap_model} from i): every step from there on run again, the model "
            "turns by the swapped-in model"
            + (f" from step {result.swap_from} on" if result.swap_from else "")
        )
    if result.mode is Mode.FAILURE:
        return "attribution(i) = P(fail | kept) - P(fail | ablate_from(i))"
    return "rescue credit(i) = P(fail | ablate_from(i)) - P(fail | kept)"


def read_report(data: bytes, where: str) -> dict[str, Any]:
    """A JSON report read back (``where`` names it in errors): a report of any version this one
    can show, checked for the fields every page needs."""
    try:
        report = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ReportFormatError(
            f"{where}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(report, dict):
        raise ReportFormatError(f"{where}: a report is a JSON object, got {preview(report)}")
    version = report.get("version")
    if not isinstance(version, int) or not 1 <= version <= REPORT_VERSION:
        raise ReportFormatError(
            f"{where}: not an attribution report of a version this agent-replay reads "
            f"(1 to {REPORT_VERSION}): version is {preview(version)}"
        )
    for name, kind in (("trajectory_id", str), ("steps", list), ("config", dict)):
        if not isinstance(report.get(name), kind):
            raise ReportFormatError(
                f"{where}: {name} must be a {kind.__name__}, got {preview(report.get(name))}"
            )
    return report


def dumps_report(report: dict[str, Any]) -> bytes:
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
