"""The fragility map as a versioned JSON report (with its JSON Schema) and as one self-contained
HTML page: a heat map of steps × faults, each cell's failure rate and interval.

Same seed, same report, byte for byte: floats are rounded to 6 decimals, keys sorted. Every string
from a trace (step names, the faults' descriptions, the run id) goes through `esc` on the page.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import orjson

from otel_replay.attribution import (
    AttributionConfig,
    CellVerdict,
    SweepCell,
    SweepResult,
    budget_text,
)
from otel_replay.report._page import esc, page
from otel_replay.resamplers import UserCode

#: 1: the first sweep report. 2: ``cost.left_out``: the rollouts left out of the cells' rates
#: and what they spent, counted in the totals (every call made).
SWEEP_VERSION = 2
SWEEP_FORMAT = "agent-replay.sweep"


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def rerun_sweep(
    result: SweepResult, config: AttributionConfig, code: UserCode, steps: Sequence[str] | None
) -> str:
    """The ``agent-replay sweep`` command line that makes this map again."""
    words = ["agent-replay", "sweep", result.trajectory_id, "--faults", ",".join(result.faults)]
    for chosen in steps or ():
        words += ["--steps", chosen]
    words += [*code.flags(), "--max-rollouts", str(result.max_rollouts), "--seed", str(result.seed)]
    if config.budget is not None:
        words += ["--budget", budget_text(config.budget, config.budget_unit)]
    return shlex.join(words)


def _cell(cell: SweepCell) -> dict[str, Any]:
    return {
        "step": cell.step,
        "fault": cell.fault,
        "injected": cell.injected,
        "failures": cell.failures,
        "n": cell.n,
        "left_out": cell.left_out,
        "rate": _r(cell.rate),
        "ci_low": _r(cell.low),
        "ci_high": _r(cell.high),
        "verdict": cell.verdict.value,
    }


def build_sweep_report(result: SweepResult, rerun: str = "") -> dict[str, Any]:
    """The report of ``result`` as JSON values (`SWEEP_SCHEMA`)."""
    return {
        "format": SWEEP_FORMAT,
        "version": SWEEP_VERSION,
        "trajectory_id": result.trajectory_id,
        "factual_score": _r(result.factual_score),
        "passed": result.passed,
        "question": "which single fault breaks this run"
        if result.passed
        else "which single fault would not have mattered",
        "driver": result.driver,
        "faults": list(result.faults),
        "steps": [{"index": s.index, "kind": s.kind, "name": s.name} for s in result.steps],
        "cells": [_cell(c) for c in result.cells],
        "flips": [{"step": c.step, "fault": c.fault} for c in result.flips],
        "config": {
            "seed": result.seed,
            "max_rollouts": result.max_rollouts,
            "looks": list(result.looks),
            "interval_method": result.interval_method,
            "decided_against": 0.5,
        },
        "cost": {
            "rollouts": result.rollouts,
            "calls": result.calls,
            "spend": result.spend.to_record(),
            "left_out": {"rollouts": result.left_out, **result.left_out_spend.to_record()},
            "out_of_budget": result.out_of_budget,
        },
        "notes": list(result.notes),
        "rerun": rerun,
    }


def dumps_sweep_report(report: dict[str, Any]) -> bytes:
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


_RATE = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_BOUND = {"type": "number", "minimum": 0, "maximum": 1}
_COUNT = {"type": "integer", "minimum": 0}

#: JSON Schema (draft 2020-12) of the sweep report, version `SWEEP_VERSION`.
SWEEP_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "agent-replay fragility map (sweep report)",
    "type": "object",
    "additionalProperties": False,
    "required": [
        "format",
        "version",
        "trajectory_id",
        "factual_score",
        "passed",
        "question",
        "driver",
        "faults",
        "steps",
        "cells",
        "flips",
        "config",
        "cost",
        "notes",
        "rerun",
    ],
    "properties": {
        "format": {"const": SWEEP_FORMAT},
        "version": {"const": SWEEP_VERSION},
        "trajectory_id": {"type": "string"},
        "factual_score": {"type": "number"},
        "passed": {"type": "boolean", "description": "the recorded run passed its verifier"},
        "question": {"type": "string"},
        "driver": {"type": "string", "description": "how rollouts were made: trace, chat, agent"},
        "faults": {"type": "array", "items": {"type": "string"}},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["index", "kind", "name"],
                "properties": {
                    "index": _COUNT,
                    "kind": {"type": "string"},
                    "name": {"type": "string"},
                },
            },
        },
        "cells": {
            "type": "array",
            "description": "one per step and fault, in step order then fault order",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "step",
                    "fault",
                    "injected",
                    "failures",
                    "n",
                    "left_out",
                    "rate",
                    "ci_low",
                    "ci_high",
                    "verdict",
                ],
                "properties": {
                    "step": _COUNT,
                    "fault": {"type": "string"},
                    "injected": {"type": "string", "description": "what the fault does there"},
                    "failures": _COUNT,
                    "n": {**_COUNT, "description": "rollouts counted"},
                    "left_out": {**_COUNT, "description": "rollouts that are no evidence"},
                    "rate": _RATE,
                    "ci_low": _BOUND,
                    "ci_high": _BOUND,
                    "verdict": {"enum": [v.value for v in CellVerdict]},
                },
            },
        },
        "flips": {
            "type": "array",
            "description": "cells whose verdict is not the record's",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["step", "fault"],
                "properties": {"step": _COUNT, "fault": {"type": "string"}},
            },
        },
        "config": {
            "type": "object",
            "additionalProperties": False,
            "required": ["seed", "max_rollouts", "looks", "interval_method", "decided_against"],
            "properties": {
                "seed": {"type": "integer"},
                "max_rollouts": _COUNT,
                "looks": {"type": "array", "items": _COUNT},
                "interval_method": {"type": "string"},
                "decided_against": {"type": "number"},
            },
        },
        "cost": {
            "type": "object",
            "additionalProperties": False,
            "required": ["rollouts", "calls", "spend", "left_out", "out_of_budget"],
            "properties": {
                "rollouts": _COUNT,
                "calls": {**_COUNT, "description": "resample-function calls"},
                "spend": {"type": "object"},
                "left_out": {
                    "type": "object",
                    "required": ["rollouts", "model_calls", "tool_calls", "free_draws", "tokens"],
                    "description": (
                        "the rollouts left out of the cells' rates (unservable or crashed) and "
                        "what they spent, already counted in calls and spend: every call made "
                        "is paid"
                    ),
                },
                "out_of_budget": {"type": "boolean"},
            },
        },
        "notes": {"type": "array", "items": {"type": "string"}},
        "rerun": {"type": "string"},
    },
}


def _shade(cell: dict[str, Any]) -> str:
    """The cell's background: white at rate 0, red at 1 (grey when nothing counted)."""
    rate = cell["rate"]
    if rate is None:
        return "#eeeeee"
    level = round(255 - 170 * rate)
    return f"rgb(255,{level},{level})"


def sweep_html(report: dict[str, Any]) -> str:
    """The report as one self-contained page: a heat map, rows the steps, columns the faults."""
    cells = {(c["step"], c["fault"]): c for c in report["cells"]}
    head = "".join(f"<th>{esc(f)}</th>" for f in report["faults"])
    rows = []
    for step in report["steps"]:
        tds = []
        for fault in report["faults"]:
            c = cells[(step["index"], fault)]
            rate = "–" if c["rate"] is None else f"{c['rate']:.2f}"
            title = f"{c['injected']}: {c['failures']} of {c['n']} failed ({c['verdict']})"
            tds.append(
                f'<td class="cell {esc(c["verdict"])}" style="background:{_shade(c)}" '
                f'title="{esc(title)}">{esc(rate)}<br><small>[{c["ci_low"]:.2f}, '
                f"{c['ci_high']:.2f}] n={c['n']}</small></td>"
            )
        rows.append(
            f"<tr><th>{step['index']} {esc(step['kind'])} <code>{esc(step['name'])}</code></th>"
            f"{''.join(tds)}</tr>"
        )
    verb = "breaks it" if report["passed"] else "would not have mattered"
    flips = [f"step {f['step']} × {f['fault']}" for f in report["flips"]]
    summary = (
        f"The recorded run {'passed' if report['passed'] else 'failed'}. Each cell: the failure "
        f"rate with that fault injected at that step, and its 95 % interval "
        f"({esc(report['config']['interval_method'])}); a fault {verb} where the run "
        f"{'fails' if report['passed'] else 'still fails'} more often than not."
    )
    changed = ", ".join(esc(f) for f in flips) or "none"
    body = (
        f"<h1>Fragility map of <code>{esc(report['trajectory_id'])}</code></h1>"
        f"<p>{summary}</p><p>Cells that flip the outcome: {changed}.</p>"
        f'<table class="heat"><thead><tr><th>step</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f'<p class="muted">{report["cost"]["rollouts"]} rollouts, {report["cost"]["calls"]} '
        f"resample-function calls, seed {report['config']['seed']}. Rerun: "
        f"<code>{esc(report['rerun'])}</code></p>"
    )
    return page(f"Fragility map: {report['trajectory_id']}", body)
