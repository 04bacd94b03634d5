"""JSON Schema (draft 2020-12) of one step of the attribution report (`_schema`), with the
proportions and shares it holds: apart, so that each module stays readable."""

from __future__ import annotations

from typing import Any

NUMBER_OR_NULL = {"type": ["number", "null"]}
INT_OR_NULL = {"type": ["integer", "null"]}
PAIR = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}

PROPORTION: dict[str, Any] = {
    "type": ["object", "null"],
    "required": ["value", "failures", "n", "ci_low", "ci_high", "left_out"],
    "additionalProperties": False,
    "properties": {
        "value": {"type": "number", "minimum": 0, "maximum": 1},
        "failures": {"type": "integer", "minimum": 0},
        "n": {"type": "integer", "minimum": 0, "description": "the rollouts counted"},
        "ci_low": {"type": "number", "minimum": 0, "maximum": 1},
        "ci_high": {"type": "number", "minimum": 0, "maximum": 1},
        "left_out": {
            "type": "integer",
            "minimum": 0,
            "description": "more rollouts of the plan that are no evidence (unservable, crashed)",
        },
    },
}


SHARE: dict[str, Any] = {
    "type": ["object", "null"],
    "required": ["value", "ci_low", "ci_high", "without_monotonicity"],
    "additionalProperties": False,
    "properties": {
        "value": {"type": "number", "minimum": 0, "maximum": 1},
        "ci_low": {"type": "number", "minimum": 0, "maximum": 1},
        "ci_high": {"type": "number", "minimum": 0, "maximum": 1},
        "without_monotonicity": {
            **PAIR,
            "description": (
                "Tian and Pearl's bounds at the estimated rates, for a reader who doubts that "
                "resampling the step never brings about the outcome keeping it would have spared"
            ),
        },
    },
}

STEP: dict[str, Any] = {
    "type": "object",
    "required": [
        "index",
        "kind",
        "name",
        "resamplable",
        "varied",
        "variation",
        "estimated",
        "cleared_by",
        "band",
        "attribution",
        "ci_low",
        "ci_high",
        "p_fail_kept",
        "p_fail_ablated",
        "n",
        "shapley",
        "shapley_se",
        "significant",
        "no_effect",
        "lowered",
        "intervals",
        "tests",
        "shapley_disagrees",
        "necessity",
        "sufficiency",
    ],
    "additionalProperties": False,
    "properties": {
        "index": {"type": "integer", "minimum": 0},
        "kind": {
            "enum": ["llm", "tool", "retriever", "embedding", "reranker", "guardrail", "other"]
        },
        "name": {"type": "string"},
        "resamplable": {
            "type": "boolean",
            "description": (
                "false: served from the record in every rollout (observed-only, or not varied)"
            ),
        },
        "varied": {
            "type": ["boolean", "null"],
            "description": (
                "whether resampling the step can give anything but its record, decided before "
                "any rollout: false for a call --tools recorded holds no other result for, an "
                "observed-only step, a read of the environment; a step not varied is never "
                "estimated and never reported as having no effect (null: not asked)"
            ),
        },
        "variation": {
            "type": ["string", "null"],
            "description": "what varies the step (varied), or why nothing can (not varied)",
        },
        "estimated": {
            "type": "boolean",
            "description": "false: observed-only, cleared by the band, or never reached",
        },
        "band": {
            **INT_OR_NULL,
            "description": (
                "cleared by the band: resampled from this step on, and from the next resamplable "
                "step on, the run ended as the record did in every one of this many rollouts, so "
                "its effect lies inside the margin; not estimated alone"
            ),
        },
        "cleared_by": {
            **INT_OR_NULL,
            "description": (
                "reports written before the band: shown to have no effect together with every "
                "resamplable step from this step on by the old search, not estimated alone"
            ),
        },
        "attribution": {
            **NUMBER_OR_NULL,
            "description": "signed by mode: failure attribution or rescue credit",
        },
        "ci_low": {
            **NUMBER_OR_NULL,
            "description": "the estimate's 95 % interval, for reading (intervals.stated)",
        },
        "ci_high": NUMBER_OR_NULL,
        "p_fail_kept": PROPORTION,
        "p_fail_ablated": PROPORTION,
        "n": INT_OR_NULL,
        "shapley": NUMBER_OR_NULL,
        "shapley_se": {
            **NUMBER_OR_NULL,
            "description": "t-calibrated standard error: shapley +- 1.96 of them is a 95% interval",
        },
        "significant": {"type": ["boolean", "null"], "description": "shown to matter"},
        "no_effect": {
            "type": ["boolean", "null"],
            "description": "shown not to matter beyond the margin",
        },
        "lowered": {
            "type": ["boolean", "null"],
            "description": (
                "shown to lower the failure rate (raise it, for credit) beyond the margin: the "
                "simultaneous interval lies below -margin; a lucky record, decided, no culprit"
            ),
        },
        "intervals": {
            "description": (
                "both intervals of the estimate (null when not estimated): stated, at its stated "
                "level (95 %) for reading; simultaneous, the one the decisions read, at the "
                "confidence the error's split over the steps, questions and looks sets"
            ),
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["stated", "simultaneous"],
                    "additionalProperties": False,
                    "properties": {
                        name: {
                            "type": "object",
                            "required": ["interval", "confidence"],
                            "additionalProperties": False,
                            "properties": {
                                "interval": PAIR,
                                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                            },
                        }
                        for name in ("stated", "simultaneous")
                    },
                },
            ],
        },
        "tests": {
            "description": "the bounds each decision read (null for observed-only steps)",
            "oneOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["matters", "no_effect"],
                    "additionalProperties": False,
                    "properties": {
                        "matters": {
                            "type": "object",
                            "description": "passed when the one-sided lower bound is above 0",
                            "required": ["lower_bound", "confidence", "passed"],
                            "additionalProperties": False,
                            "properties": {
                                "lower_bound": {"type": "number"},
                                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                "passed": {"type": "boolean"},
                            },
                        },
                        "no_effect": {
                            "type": "object",
                            "description": "passed when the interval lies inside +-margin",
                            "required": ["interval", "confidence", "margin", "passed"],
                            "additionalProperties": False,
                            "properties": {
                                "interval": PAIR,
                                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                                "margin": {"type": "number"},
                                "passed": {"type": "boolean"},
                            },
                        },
                    },
                },
            ],
        },
        "shapley_disagrees": {
            "type": ["boolean", "null"],
            "description": (
                "Shapley's value and the attribution differ beyond their intervals: Shapley "
                "averages over which other steps are kept, the attribution holds the recorded "
                "prefix (null without Shapley values)"
            ),
        },
        "necessity": {
            **SHARE,
            "description": (
                "Pearl's probability of necessity: given the run went as recorded, the chance "
                "that resampling this step would have turned its outcome around (null: not "
                "estimated, or undefined)"
            ),
        },
        "sufficiency": {
            **SHARE,
            "description": (
                "Pearl's probability of sufficiency: given a rollout that resampled this step "
                "and escaped the outcome, the chance that keeping it would have brought it about"
            ),
        },
    },
}
