"""Contrastive pairs for preference tuning, from the runs a repair saved.

For each run whose newest stored report found a repair, one JSON line in the conversational shape
preference-tuning libraries read: ``prompt`` (the conversation up to the culprit: the messages of the
model call at or before it, and for a tool step the model turn that asked for it), ``chosen`` (the
repairing output) and ``rejected`` (the recorded one), each as a one-message list (what the step
says in a conversation, `otel_replay.transcript.said`: a tool's result as the text the model is
sent), with where it came from and how often each saved the run (``chosen_success_rate`` with its
interval; the recorded output's success rate is 1 − P(fail) with it kept).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from otel_replay.messages import assistant_message, conversation
from otel_replay.model import StepKind, StepStatus, Trajectory
from otel_replay.store import Store
from otel_replay.transcript import said


def pairs(store: Store, runs: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """The pair of each repaired run (of ``runs``, or of all), in run id order."""
    for run_id, report in store.newest_reports():
        repair = report.get("repair")
        if (runs is not None and run_id not in runs) or not isinstance(repair, Mapping):
            continue
        trajectory = store.get(run_id)
        index = repair.get("step_index")
        if not isinstance(index, int) or not 0 <= index < len(trajectory.steps):
            continue
        yield _pair(trajectory, index, report, repair)


def _pair(
    trajectory: Trajectory, index: int, report: Mapping[str, Any], repair: Mapping[str, Any]
) -> dict[str, Any]:
    step = trajectory.steps[index]
    kept: Mapping[str, Any] = next(
        (s for s in report.get("steps") or [] if s.get("index") == index), {}
    )
    failing = (kept.get("p_fail_kept") or {}).get("value")
    return {
        "prompt": _context(trajectory, index),
        "chosen": [said(step.with_result(repair.get("output"), StepStatus.OK, None))],
        "rejected": [said(step)],
        "chosen_success_rate": repair.get("success_rate"),
        "chosen_success_interval": [repair.get("ci_low"), repair.get("ci_high")],
        "rejected_success_rate": None if failing is None else round(1 - failing, 6),
        "run_id": trajectory.id,
        "step_index": index,
        "step_kind": step.kind.value,
        "step_name": step.name,
        "repair_source": repair.get("source"),
    }


def _context(trajectory: Trajectory, index: int) -> list[dict[str, Any]]:
    """The conversation the culprit answered: the messages of the latest model call at or before
    it, with that call's own turn when the culprit is a step it asked for."""
    for earlier in reversed(trajectory.steps[: index + 1]):
        context = conversation(earlier.inputs) if earlier.kind is StepKind.LLM else []
        if context:
            reply = assistant_message(earlier.output)
            if earlier.index < index and reply is not None:
                context.append(reply)
            return context
    return []
