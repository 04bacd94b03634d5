"""JSON Schema (draft 2020-12) of the attribution report, version `REPORT_VERSION`."""

from __future__ import annotations

from typing import Any

from otel_replay.report._cost_schema import COST_SCHEMA, EVIDENCE_SCHEMA
from otel_replay.report._json import REPORT_VERSION
from otel_replay.report._step_schema import INT_OR_NULL as _INT_OR_NULL
from otel_replay.report._step_schema import NUMBER_OR_NULL as _NUMBER_OR_NULL
from otel_replay.report._step_schema import PAIR as _PAIR
from otel_replay.report._step_schema import PROPORTION as _PROPORTION
from otel_replay.report._step_schema import STEP as _STEP

_QUESTION: dict[str, Any] = {
    "type": "object",
    "description": (
        "one band test of the adaptive walk (band set): resampling every resamplable step from "
        "from_step on, against the record kept whole, in the band when every one of band rollouts "
        "ended as the record did; in reports written before the band, a question of the old search"
    ),
    "required": [
        "from_step",
        "effect",
        "p_fail_record",
        "p_fail_resampled",
        "matters_bound",
        "no_effect_interval",
        "confidence",
        "margin",
        "decision",
        "plan",
    ],
    "additionalProperties": False,
    "properties": {
        "from_step": {"type": "integer", "minimum": 0},
        "band": {
            **_INT_OR_NULL,
            "description": "the band test's rollouts (null: a question of the old search)",
        },
        "plan": {"type": "string", "description": "the resampling plan in words"},
        "effect": {"type": "number", "description": "signed by mode, as a step's attribution"},
        "p_fail_record": _PROPORTION,
        "p_fail_resampled": _PROPORTION,
        "matters_bound": {"type": "number"},
        "no_effect_interval": _PAIR,
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "margin": {"type": "number"},
        "decision": {
            "enum": [
                "in band",
                "out of band",
                "matters",
                "no effect",
                "falls",
                "undecided",
                "passed over",
            ],
            "description": (
                "in band / out of band: the walk's band test; the others are the old search's "
                "(passed over: asked at the first look only to find where to look)"
            ),
        },
    },
}

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": f"https://agent-replay.dev/schemas/attribution-report-v{REPORT_VERSION}.json",
    "title": "agent-replay attribution report",
    "type": "object",
    "required": [
        "version",
        "trajectory_id",
        "mode",
        "estimand",
        "outcome",
        "failed",
        "config",
        "steps",
        "search",
        "point_of_commitment",
        "save_point",
        "verdict",
        "explanation",
        "bracket",
        "rollouts_needed",
        "calls_needed",
        "root_cause",
        "repair",
        "repair_note",
        "shapley",
        "evidence",
        "cost",
        "swap",
        "judge",
    ],
    "additionalProperties": False,
    "properties": {
        "version": {"const": REPORT_VERSION},
        "trajectory_id": {"type": "string"},
        "mode": {
            "enum": ["failure", "credit", "swap-model"],
            "description": (
                "failure: the Point of Commitment of a failed run; credit: the step that saved a "
                "passing one; swap-model: the latest step from which the swapped-in model saves "
                "a failed run (swap)"
            ),
        },
        "estimand": {"type": "string"},
        "outcome": {"type": "number"},
        "failed": {"type": "boolean"},
        "config": {
            "type": "object",
            "required": [
                "rollouts",
                "permutations",
                "shapley_se",
                "seed",
                "method",
                "fail_threshold",
                "margin",
                "repair",
                "on_resampler_error",
                "resamplers",
                "verifier",
                "decisions",
                "error_bound",
                "strategy",
                "max_rollouts",
                "budget",
                "budget_unit",
                "interval_methods",
                "driver",
                "swap_model",
                "swap_from",
                "rerun",
            ],
            "additionalProperties": False,
            "properties": {
                "rollouts": {"type": "integer", "minimum": 1},
                "permutations": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Shapley permutations asked for (the first batch with shapley_se)",
                },
                "shapley_se": {
                    "type": ["number", "null"],
                    "exclusiveMinimum": 0,
                    "exclusiveMaximum": 1,
                    "description": (
                        "Shapley standard error target: antithetic pairs were added until every "
                        "step's was below it, or the cap (null: a fixed number of permutations)"
                    ),
                },
                "seed": {"type": "integer"},
                "method": {"enum": ["contrastive", "shapley", "all"]},
                "fail_threshold": {"type": "number"},
                "margin": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                "repair": {"type": "boolean"},
                "on_resampler_error": {"enum": ["fail", "fail-rollout"]},
                "resamplers": {"type": "array", "items": {"type": "string"}},
                "verifier": {"type": "string"},
                "interval_methods": {
                    "type": "object",
                    "required": ["proportion", "difference", "shapley"],
                    "additionalProperties": {"type": "string"},
                },
                "driver": {
                    "type": "string",
                    "description": "how rollouts were made and why: trace, chat (the tool-calling loop re-driven), or agent:<module:function>",
                },
                "decisions": {"type": "string"},
                "strategy": {
                    "enum": ["adaptive", "scan", "fixed", "sweep"],
                    "description": (
                        "adaptive: the walk from the last step back, clearing by the band; "
                        "scan: every step from the last back, in growing batches; fixed: every "
                        "step at rollouts (sweep: its name in reports written before)"
                    ),
                },
                "max_rollouts": {"type": "integer", "minimum": 1},
                "budget": {
                    "type": ["integer", "null"],
                    "description": "the most the adaptive strategy spends, in budget_unit",
                },
                "budget_unit": {
                    "enum": ["calls", "model-calls", "tokens"],
                    "description": (
                        "what budget counts: resample-function calls of every kind (calls), "
                        "model calls, or the model calls' tokens as the record's usage prices them"
                    ),
                },
                "error_bound": {
                    "type": "number",
                    "description": "the chance of naming a wrong step, at most",
                },
                "rerun": {
                    "type": "string",
                    "description": "the command that reproduces this report",
                },
                "swap_model": {
                    "type": ["string", "null"],
                    "description": "the model every re-run model turn was asked of (swap-model)",
                },
                "swap_from": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "the first step whose re-run model turns swap_model answered",
                },
            },
        },
        "steps": {"type": "array", "items": _STEP},
        "search": {
            "type": "array",
            "items": _QUESTION,
            "description": "the adaptive walk's band tests in the order run (empty: no band)",
        },
        "point_of_commitment": {**_INT_OR_NULL, "description": "failure mode: the culprit step"},
        "save_point": {**_INT_OR_NULL, "description": "credit mode: the step that saved the run"},
        "suspect": {
            "type": ["object", "null"],
            "required": [
                "step",
                "source",
                "reason",
                "confirmed",
                "decision",
                "calls_to_confirm",
                "effect",
                "interval",
                "matters_bound",
                "matters_tail",
            ],
            "additionalProperties": False,
            "description": (
                "--suspect: the step tested first (null: none was given; absent in reports "
                "written before it), who named it (user, or judge: one model call, with its "
                "reason) and whether the replay confirmed it (shown to matter at its own share "
                "of the bound, matters_tail per look; null: not tested)"
            ),
            "properties": {
                "step": {"type": "integer"},
                "source": {"enum": ["user", "judge"]},
                "reason": {"type": ["string", "null"]},
                "confirmed": {"type": ["boolean", "null"]},
                "decision": {
                    "enum": ["matters", "no effect", "lowered", "none seen", "open", "not tested"],
                    "description": (
                        "none seen: keeping the step did not raise the rate at all at a look, "
                        "which stops its test unconfirmed"
                    ),
                },
                "calls_to_confirm": {"type": "integer", "minimum": 0},
                "effect": {"type": ["number", "null"]},
                "interval": {"type": ["array", "null"], "items": {"type": "number"}},
                "matters_bound": {"type": ["number", "null"]},
                "matters_tail": {"type": ["number", "null"]},
            },
        },
        "root_cause": {
            "type": ["object", "null"],
            "required": [
                "step",
                "sought",
                "saves",
                "bracket",
                "cleared_before",
                "cleared",
                "lowered",
                "calls",
                "why",
            ],
            "additionalProperties": False,
            "description": (
                "the earliest resamplable step shown to matter, every earlier one shown not to "
                "(alone, or together: cleared_before); null when there was nothing to look for"
            ),
            "properties": {
                "step": _INT_OR_NULL,
                "sought": {"type": "boolean"},
                "saves": {
                    "type": ["object", "null"],
                    "required": ["value", "ci_low", "ci_high", "n"],
                    "additionalProperties": False,
                    "description": "how often resampling from the step on turns the outcome",
                    "properties": {
                        "value": {"type": "number"},
                        "ci_low": {"type": "number"},
                        "ci_high": {"type": "number"},
                        "n": {"type": "integer"},
                    },
                },
                "bracket": {"type": ["array", "null"], "items": {"type": "integer"}},
                "cleared_before": _INT_OR_NULL,
                "cleared": {
                    "type": "array",
                    "items": {**_PAIR, "items": {"type": "integer"}},
                    "description": (
                        "the runs of steps shown to have no effect together by the search from "
                        "the start, each [first, end) with the end left out; more than one when "
                        "it started again after a step shown to lower the failure rate"
                    ),
                },
                "lowered": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": (
                        "the steps before it shown to lower the failure rate beyond the margin: "
                        "lucky records, decided, and no culprits"
                    ),
                },
                "calls": {"type": "integer", "minimum": 0},
                "why": {"type": ["string", "null"]},
            },
        },
        "verdict": {
            "enum": [
                "culprit",
                "saved",
                "inconclusive",
                "settled",
                "no-failure",
                "no-evidence",
                "cannot-tell",
            ],
            "description": (
                "settled: shown that no resamplable step changes the failure rate (it was "
                "settled before them, or by an observed-only step); inconclusive: the tests "
                "left the commitment open (bracket); no-evidence: too many rollouts were left "
                "out to conclude (evidence); cannot-tell: the verdict would rest on steps "
                "resampling could not vary (each step's varied and variation; the explanation "
                "names them and what would vary them; a step shown to matter before them is "
                "bracket[0])"
            ),
        },
        "swap": {
            "type": ["object", "null"],
            "required": ["model", "from_step", "plan"],
            "additionalProperties": False,
            "description": "swap-model: the model, the step from which it saves the run, if any",
            "properties": {
                "model": {"type": "string"},
                "from_step": _INT_OR_NULL,
                "plan": {"type": ["string", "null"], "description": "the saving plan in words"},
            },
        },
        "explanation": {"type": "string"},
        "bracket": {
            "type": ["array", "null"],
            "items": {"type": "integer"},
            "minItems": 2,
            "maxItems": 2,
            "description": "inconclusive: the commitment lies between these steps",
        },
        "rollouts_needed": _INT_OR_NULL,
        "calls_needed": {
            **_INT_OR_NULL,
            "description": "with rollouts_needed, the resample-function calls it would add "
            "(the sequential strategies)",
        },
        "repair": {
            "type": ["object", "null"],
            "required": [
                "step_index",
                "output",
                "minimality",
                "success_rate",
                "ci_low",
                "ci_high",
                "n",
                "source",
                "candidates_tried",
                "move",
                "plan",
            ],
            "additionalProperties": False,
            "properties": {
                "step_index": {"type": "integer"},
                "output": {},
                "minimality": {"type": "number", "minimum": 0, "maximum": 1},
                "success_rate": {"type": "number", "minimum": 0, "maximum": 1},
                "ci_low": {"type": "number"},
                "ci_high": {"type": "number"},
                "n": {"type": "integer"},
                "source": {"type": "string"},
                "candidates_tried": {"type": "integer", "minimum": 1},
                "move": {
                    "enum": ["do", "observe"],
                    "description": "do: a model turn's output replaced; observe: a call's result",
                },
                "plan": {"type": "string", "description": "the repairing plan in words"},
            },
        },
        "repair_note": {"type": ["string", "null"]},
        "shapley": {
            "type": ["object", "null"],
            "required": [
                "permutations",
                "se_target",
                "max_se",
                "note",
                "sum",
                "sum_se",
                "expected_sum",
                "v_all",
                "v_none",
                "efficiency_gap",
            ],
            "additionalProperties": False,
            "properties": {
                "permutations": {
                    "type": "integer",
                    "minimum": 2,
                    "description": "permutations actually run (a shapley_se target adds pairs)",
                },
                "se_target": {**_NUMBER_OR_NULL, "description": "config.shapley_se"},
                "max_se": {
                    "type": "number",
                    "minimum": 0,
                    "description": "the largest step's shapley_se: 1.96 of them is its 95% half-width",
                },
                "note": {
                    "type": ["string", "null"],
                    "description": "set when the permutation cap stopped before the target",
                },
                "sum": {"type": "number"},
                "sum_se": {"type": "number", "minimum": 0},
                "expected_sum": {
                    "type": "number",
                    "description": "v(all) - v(none); negated in credit mode",
                },
                "v_all": _PROPORTION,
                "v_none": _PROPORTION,
                "efficiency_gap": {"type": "number"},
            },
        },
        "judge": {
            "type": ["object", "null"],
            "description": (
                "the --judge verifier (null: another verifier scored the runs): each distinct "
                "final answer it judged, once"
            ),
            "required": ["question", "calls", "verdicts"],
            "additionalProperties": False,
            "properties": {
                "question": {"type": "string"},
                "calls": {"type": "integer", "minimum": 0},
                "verdicts": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["answer", "verdict", "reason", "model", "runs"],
                        "additionalProperties": False,
                        "properties": {
                            "answer": {"type": "string"},
                            "verdict": {"enum": ["yes", "no"]},
                            "reason": {"type": "string"},
                            "model": {"type": "string"},
                            "runs": {
                                "type": "integer",
                                "minimum": 1,
                                "description": "scored runs (the recorded one, rollouts) with this answer",
                            },
                        },
                    },
                },
            },
        },
        "evidence": EVIDENCE_SCHEMA,
        "cost": COST_SCHEMA,
    },
}
