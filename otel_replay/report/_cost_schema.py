"""The JSON Schema of the report's ``cost`` and ``evidence``: what the rollouts spent, split by
what users pay (`otel_replay.attribution._spend`), and what they could not tell (the rollouts left
out, the draws from the store)."""

from __future__ import annotations

from typing import Any

_TOKENS: dict[str, Any] = {
    "type": "object",
    "required": ["total", "measured", "estimated", "unknown"],
    "additionalProperties": False,
    "description": "the model calls' tokens (input and output; --budget N:tokens)",
    "properties": {
        "total": {
            "type": "integer",
            "minimum": 0,
            "description": "tokens of the model calls whose figure is known",
        },
        "measured": {
            "type": "integer",
            "minimum": 0,
            "description": "model calls whose tokens the model's server counted",
        },
        "estimated": {
            "type": "integer",
            "minimum": 0,
            "description": (
                "model calls priced from the recorded usage of the step they stood in for"
            ),
        },
        "unknown": {
            "type": "integer",
            "minimum": 0,
            "description": (
                "model calls with no known figure (no recorded usage), left out of total, never "
                "counted as 0"
            ),
        },
    },
}

COST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "rollouts",
        "step_executions",
        "model_calls",
        "tool_calls",
        "free_draws",
        "tokens",
        "left_out",
        "resampler_errors",
        "judge_calls",
        "wall_seconds",
    ],
    "additionalProperties": False,
    "properties": {
        "rollouts": {"type": "integer"},
        "step_executions": {
            "type": "integer",
            "description": (
                "resample-function calls of every kind, the unit --budget N caps: "
                "model_calls + tool_calls + free_draws"
            ),
        },
        "model_calls": {
            "type": "integer",
            "minimum": 0,
            "description": "calls of the model steps' resample functions (--budget N:model-calls)",
        },
        "tool_calls": {
            "type": "integer",
            "minimum": 0,
            "description": (
                "calls of every other step's resample functions (tools, retrievals, ...) "
                "that called something"
            ),
        },
        "free_draws": {
            "type": "integer",
            "minimum": 0,
            "description": (
                "tool calls --tools recorded answered without calling anything: a result "
                "drawn from the store, the run's own held, or an injected fault; counted, "
                "not paid"
            ),
        },
        "tokens": _TOKENS,
        "left_out": {
            "type": "object",
            "required": ["rollouts", "model_calls", "tool_calls", "free_draws", "tokens"],
            "additionalProperties": False,
            "description": (
                "what the rollouts left out of the estimates (evidence: unservable or crashed) "
                "spent, already counted in the totals above: every call made is paid, whether "
                "or not its rollout could be used (an unservable rollout's calls before the one "
                "nothing answered, which is not counted: nothing was called for it)"
            ),
            "properties": {
                "rollouts": {"type": "integer", "minimum": 0},
                "model_calls": {"type": "integer", "minimum": 0},
                "tool_calls": {"type": "integer", "minimum": 0},
                "free_draws": {"type": "integer", "minimum": 0},
                "tokens": _TOKENS,
            },
        },
        "resampler_errors": {"type": "integer"},
        "judge_calls": {
            "type": "integer",
            "description": "model calls the --judge verifier made: one per distinct final answer",
        },
        "wall_seconds": {"type": "number"},
        "switched_to_fixed": {
            "type": "object",
            "required": ["at_calls", "reused_rollouts"],
            "additionalProperties": False,
            "description": (
                "only when the cost ceiling switched a sequential strategy to the fixed "
                "strategy's plan (its calls would otherwise have passed that plan's): the calls "
                "spent when it switched, and the rollouts already run that the plan reused"
            ),
            "properties": {
                "at_calls": {"type": "integer", "minimum": 0},
                "reused_rollouts": {"type": "integer", "minimum": 0},
            },
        },
    },
}


def _calls(counted: str, what: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["tool", "arguments", counted],
            "additionalProperties": False,
            "properties": {
                "tool": {"type": "string"},
                "arguments": {"description": "the call's arguments, as the rollout made them"},
                counted: {"type": "integer", "minimum": 1, "description": what},
            },
        },
    }


EVIDENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "what the rollouts could not tell: a rollout that could not be served (a call no stored "
        "run recorded) or whose agent raised is neither a success nor a failure, and every "
        "estimate leaves it out; and where --tools recorded drew from"
    ),
    "required": ["rollouts", "left_out", "missing", "unservable", "crashed", "draws"],
    "additionalProperties": False,
    "properties": {
        "rollouts": {"type": "integer", "minimum": 0, "description": "every rollout run"},
        "left_out": {"type": "integer", "minimum": 0, "description": "unservable and crashed"},
        "missing": {
            "type": "boolean",
            "description": (
                "half the rollouts or more, or half of a plan an estimate reads, were left out: "
                "verdict no-evidence"
            ),
        },
        "unservable": {
            "type": "object",
            "required": ["rollouts", "calls"],
            "additionalProperties": False,
            "properties": {
                "rollouts": {"type": "integer", "minimum": 0},
                "calls": _calls("rollouts", "the rollouts the call ended"),
            },
        },
        "crashed": {
            "type": "object",
            "required": ["rollouts", "first"],
            "additionalProperties": False,
            "description": (
                "rollouts whose agent raised (an agent that raised the StepError of a failing "
                "step it did not handle was failed by the world: scored, not counted here)"
            ),
            "properties": {
                "rollouts": {"type": "integer", "minimum": 0},
                "first": {
                    "type": ["string", "null"],
                    "description": "the first crash's exception: Type: message",
                },
            },
        },
        "draws": {
            "type": "object",
            "required": ["total", "runs", "faults"],
            "additionalProperties": False,
            "properties": {
                "total": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "recorded tool results served (held steps are not draws)",
                },
                "runs": {
                    "type": "array",
                    "description": "the stored run each drawn result came from, most first",
                    "items": {
                        "type": "object",
                        "required": ["run", "draws"],
                        "additionalProperties": False,
                        "properties": {
                            "run": {"type": "string"},
                            "draws": {"type": "integer", "minimum": 1},
                        },
                    },
                },
                "faults": _calls(
                    "draws", "times the faults fallback failed the call (--tools recorded,faults)"
                ),
            },
        },
        "simulated": {
            "type": "object",
            "required": ["calls", "tokens", "tools"],
            "additionalProperties": False,
            "description": (
                "the tool calls a model played (--tools simulate): each one request of the "
                "model server, counted apart from the model's own turns"
            ),
            "properties": {
                "calls": {"type": "integer", "minimum": 0},
                "tokens": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "description": "their tokens as the server counted them (null: unknown)",
                },
                "tools": _calls("calls", "times the model played the call"),
            },
        },
    },
}
