"""Resample functions for the incident investigator's recorded runs (``sample_traces/``).

Use them with ``agent-replay attribute ID --resamplers examples/incident/resamplers.py``. Each answers
"what else could this step have returned?":

* the model is the rule-based investigator itself, asked again with the *counterfactual* history, so
  it reacts when an earlier tool result changed;
* ``list_deploys`` is a flaky deploy API: one call in four comes back empty (the fault behind the
  failing sample run), otherwise it returns the real deploy list;
* ``query_metrics`` and ``search_logs`` are deterministic lookups in the example world.

The verifier reads the investigator's first final answer: success when it names deploy ``v841``. The
repair search also tries single-deploy lists (``smaller_deploy_lists``), smaller changes than the whole
list a successful rollout returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from otel_replay import Step, StepKind, Trajectory
from otel_replay.resamplers import RolloutContext, repair_candidates, resampler, verifier

from .model import respond
from .world import list_deploys as real_list_deploys
from .world import query_metrics as real_query_metrics
from .world import search_logs as real_search_logs

CULPRIT = "v841"
#: How often the deploy API comes back empty.
EMPTY_DEPLOYS_RATE = 0.25


def conversation(
    opening: Sequence[dict[str, Any]], history: Sequence[Step]
) -> list[dict[str, Any]]:
    """The chat the model would see after ``history``: the opening messages, then each model turn
    and each tool result as it happened in this (counterfactual) run."""
    messages = [dict(m) for m in opening]
    pending_calls: list[dict[str, Any]] = []
    for step in history:
        if step.kind is StepKind.LLM and isinstance(step.output, dict):
            messages.append(dict(step.output))
            pending_calls = list(step.output.get("tool_calls") or [])
        elif step.kind is StepKind.TOOL:
            call = next((c for c in pending_calls if c.get("name") == step.name), None)
            if call is not None:
                pending_calls.remove(call)
            result = step.output if step.status.value == "ok" else {"error": step.error}
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": (call or {}).get("id", step.inputs.get("tool_call_id", "")),
                    "name": step.name,
                    "content": json.dumps(result),
                }
            )
    return messages


def _opening(step: Step) -> list[dict[str, Any]]:
    """The messages the recorded run started from: everything before the model's first turn."""
    opening = []
    for message in step.inputs.get("messages", []):
        if message.get("role") in ("assistant", "tool"):
            break
        opening.append(message)
    return opening


def _arguments(step: Step, ctx: RolloutContext) -> dict[str, Any]:
    """The arguments the counterfactual model asked for, else the recorded ones."""
    for previous in reversed(ctx.history):
        if previous.kind is StepKind.LLM and isinstance(previous.output, dict):
            for call in previous.output.get("tool_calls") or []:
                if call.get("name") == step.name and isinstance(call.get("arguments"), dict):
                    return dict(call["arguments"])
            break
    recorded = step.inputs.get("arguments")
    return dict(recorded) if isinstance(recorded, dict) else {}


@resampler("llm")
def investigator(step: Step, ctx: RolloutContext) -> Any:
    return respond(conversation(_opening(step), ctx.history))


@resampler("tool", name="list_deploys")
def flaky_list_deploys(step: Step, ctx: RolloutContext) -> Any:
    service = _arguments(step, ctx).get("service", "checkout")
    if ctx.rng.random() < EMPTY_DEPLOYS_RATE:
        return []
    return real_list_deploys(service)


@resampler("tool", name="query_metrics")
def metrics(step: Step, ctx: RolloutContext) -> Any:
    arguments = _arguments(step, ctx)
    return real_query_metrics(
        arguments.get("service", "checkout"), arguments.get("metric", "error_rate")
    )


@resampler("tool", name="search_logs")
def logs(step: Step, ctx: RolloutContext) -> Any:
    arguments = _arguments(step, ctx)
    return real_search_logs(arguments.get("service", "checkout"), arguments.get("query", "error"))


@repair_candidates
def smaller_deploy_lists(step: Step, factual: Trajectory) -> list[Any]:
    """Smaller changes than the full deploy list: each recent deploy on its own."""
    if step.name != "list_deploys":
        return []
    service = (step.inputs.get("arguments") or {}).get("service", "checkout")
    return [[deploy] for deploy in real_list_deploys(service)]


def final_answer(trajectory: Trajectory) -> str | None:
    """The first model turn that answers instead of calling a tool."""
    for step in trajectory.steps:
        if (
            step.kind is StepKind.LLM
            and isinstance(step.output, dict)
            and not step.output.get("tool_calls")
        ):
            content = step.output.get("content")
            return content if isinstance(content, str) else None
    return None


@verifier
def names_the_bad_deploy(trajectory: Trajectory) -> float:
    answer = final_answer(trajectory)
    return 1.0 if answer is not None and CULPRIT in answer else 0.0
