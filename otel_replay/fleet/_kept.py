"""Keeping a report in the store with the rows ``blame`` reads: one per step of the run, naming the
step by what it is across runs (kind, name, and for a tool call the names of its arguments)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from otel_replay.model import Step, Trajectory
from otel_replay.store import Store


def shape(step: Step) -> str:
    """A step's argument shape: a tool call's argument names, sorted (``"query,service"``); empty
    for anything without named arguments. Two calls of one tool with different shapes are told
    apart by ``blame`` (the agent asked for different things)."""
    arguments = step.inputs.get("arguments")
    if isinstance(arguments, Mapping):
        return ",".join(sorted(str(name) for name in arguments))
    return ""


def report_rows(
    report: Mapping[str, Any], trajectory: Trajectory, config_digest: str
) -> list[tuple[Any, ...]]:
    """The ``report_steps`` rows of ``report`` (the JSON report's data) about ``trajectory``; none
    for a passing run's credit report (blame is about failures) or a swap question's (it asks
    about another model, not where the run failed)."""
    if report.get("mode") in ("credit", "swap-model"):
        return []
    verdict = report.get("verdict")
    located = report.get("point_of_commitment")
    repair = report.get("repair") if isinstance(report.get("repair"), Mapping) else None
    estimates = {s.get("index"): s for s in report.get("steps") or [] if isinstance(s, Mapping)}
    rows = []
    for step in trajectory.steps:
        estimate = estimates.get(step.index, {})
        repaired = repair is not None and repair.get("step_index") == step.index
        rows.append(
            (
                trajectory.id,
                config_digest,
                step.index,
                step.kind.value,
                step.name,
                shape(step),
                verdict,
                estimate.get("attribution"),
                estimate.get("ci_low"),
                estimate.get("ci_high"),
                int(verdict == "culprit" and located == step.index),
                int(repaired),
                repair.get("success_rate") if repaired and repair is not None else None,
            )
        )
    return rows


def unfinished(run: Trajectory) -> str | None:
    """Why ``run`` cannot be scored as its agent's outcome: the recorder failed while it ran, or
    its recording stopped before the agent returned (None: it finished)."""
    if run.metadata.get("recorder_error"):
        return f"the recorder failed: {run.metadata['recorder_error']}"
    if run.metadata.get("ended_early"):
        return f"it ended early: {run.metadata['ended_early']}"
    return None


def keep(store: Store, report: bytes, trajectory: Trajectory, config_digest: str) -> None:
    """Keep ``report`` (its JSON bytes) beside ``trajectory`` in ``store``, with its rows; a run
    stored without an outcome takes the one the attribution's verifier gave it (its source
    ``attribution:VERIFIER``), in the same transaction, unless it never finished (`unfinished`)."""
    data = orjson.loads(report)
    with store.transaction():
        store.keep_report(
            trajectory.id,
            config_digest,
            report,
            data.get("verdict"),
            report_rows(data, trajectory, config_digest),
        )
        stored = store.summary(trajectory.id)
        outcome, config = data.get("outcome"), data.get("config")
        verifier = config.get("verifier") if isinstance(config, Mapping) else None
        finished = unfinished(trajectory) is None  # a run that never finished gets none
        if (
            stored is not None
            and stored.outcome is None
            and finished
            and isinstance(outcome, (int, float))
        ):
            store.set_outcome(trajectory.id, float(outcome), f"attribution:{verifier or '?'}")
