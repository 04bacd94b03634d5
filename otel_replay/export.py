"""Trajectories out: the native JSONL record (`trajectory_to_record`) and `write_jsonl`.

The record is what `otel_replay.importers.read_jsonl` reads back; a round trip keeps every step hash.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

import orjson

from otel_replay.model import Step, Trajectory

__all__ = ["step_to_record", "trajectory_to_record", "write_jsonl"]


def step_to_record(step: Step) -> dict[str, Any]:
    return {
        "index": step.index,
        "kind": step.kind.value,
        "name": step.name,
        "inputs": step.inputs,
        "output": step.output,
        "status": step.status.value,
        "error": step.error,
        "start_time_unix_nano": step.start_time_unix_nano,
        "end_time_unix_nano": step.end_time_unix_nano,
        "span_id": step.span_id,
        "parent_span_id": step.parent_span_id,
        "resamplable": step.resamplable,
        "op_key": step.op_key,
        "hash": step.hash,
    }


def trajectory_to_record(trajectory: Trajectory) -> dict[str, Any]:
    """The whole-trajectory line of the native JSONL format."""
    return {
        "trajectory_id": trajectory.id,
        "outcome": trajectory.outcome,
        "metadata": dict(trajectory.metadata),
        "steps": [step_to_record(s) for s in trajectory.steps],
        "spans": [s.to_record() for s in trajectory.spans],
        "final_hash": trajectory.final_hash,
    }


def write_jsonl(trajectories: Iterable[Trajectory], out: IO[bytes]) -> int:
    """Write one JSON line per trajectory (keys in recorded order); return how many were written."""
    count = 0
    for trajectory in trajectories:
        out.write(orjson.dumps(trajectory_to_record(trajectory)))
        out.write(b"\n")
        count += 1
    return count
