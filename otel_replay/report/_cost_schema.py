"""The JSON Schema of the report's ``cost``: what the attribution spent, split by what users pay
(`otel_replay.attribution._spend`)."""

from __future__ import annotations

from typing import Any

COST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "rollouts",
        "step_executions",
        "model_calls",
        "tool_calls",
        "free_draws",
        "tokens",
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
        "tokens": {
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
                        "model calls with no known figure (no recorded usage), left out "
                        "of total, never counted as 0"
                    ),
                },
            },
        },
        "resampler_errors": {"type": "integer"},
        "judge_calls": {
            "type": "integer",
            "description": "model calls the --judge verifier made: one per distinct final answer",
        },
        "wall_seconds": {"type": "number"},
    },
}
