"""Contrastive pairs for preference tuning, from the runs a repair saved.

For each run one of whose kept reports found a repair, one JSON line in the conversational shape
preference-tuning libraries read: ``prompt`` (the conversation up to the culprit: the messages of the
model call at or before it, and for a tool step the model turn that asked for it), ``chosen`` (the
repairing output) and ``rejected`` (the recorded one), each as a one-message list (what the step
says in a conversation, `otel_replay.transcript.said`: a model's reply in the store's message shape
however it was recorded, a tool's result as the text the model is sent), with where it came from and
how often each saved the run (``chosen_success_rate`` with its interval; the recorded output's
success rate is 1 − P(fail) with it kept).

Every kept report of a run is read (one per question asked of it), and the newest that found a
repair gives the run's pair: a later question that did not search for a repair, or found none,
does not hide one an earlier question found. `unpaired` says why each run without a pair has none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from otel_replay.messages import assistant_message, conversation
from otel_replay.model import StepKind, StepStatus, Trajectory
from otel_replay.store import Store
from otel_replay.transcript import said


@dataclass(frozen=True, slots=True)
class Unpaired:
    """A run with no pair: its id and why (a sentence)."""

    run_id: str
    reason: str


def pairs(store: Store, runs: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """The pair of each repaired run (of ``runs``, or of all), in run id order: from the newest of
    its kept reports that found a repair."""
    for run_id in sorted(store.report_counts() if runs is None else runs):
        found = _repaired(store, run_id)
        if isinstance(found, tuple):
            yield _pair(*found)


def unpaired(store: Store, runs: set[str] | None = None) -> list[Unpaired]:
    """The runs (of ``runs``, or every stored run) that `pairs` gives no pair, in run id order,
    each with why: no report is kept for it, none of its reports searched for a repair, or the
    searches found none (the newest search's note)."""
    chosen = sorted({s.id for s in store.summaries()} if runs is None else runs)
    reasons = ((run_id, _repaired(store, run_id)) for run_id in chosen)
    return [Unpaired(run_id, found) for run_id, found in reasons if isinstance(found, str)]


def _repaired(
    store: Store, run_id: str
) -> tuple[Trajectory, int, Mapping[str, Any], Mapping[str, Any]] | str:
    """The run, the repaired step, the report and its repair; or why there is none."""
    kept = [k["report"] for k in store.reports(run_id)]  # newest first
    if any(isinstance(r.get("repair"), Mapping) for r in kept):
        trajectory = store.get(run_id)
        for report in kept:
            repair = report.get("repair")
            index = repair.get("step_index") if isinstance(repair, Mapping) else None
            if isinstance(index, int) and 0 <= index < len(trajectory.steps):
                return trajectory, index, report, repair
        return "its repair names a step the run does not have"
    if not kept:
        return "no attribution report is kept (`attribute ID --repair` keeps one)"
    notes = [r["repair_note"] for r in kept if isinstance(r.get("repair_note"), str)]
    if notes:
        return f"no repair was found ({notes[0]})"
    return "no report of it searched for a repair (`attribute ID --repair` searches one)"


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
