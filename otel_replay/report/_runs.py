"""The JSON records of what `record`, `replay`, `fork`, `resume` and `diff` return: what their
``--json`` prints, for a program to read. Each is a plain JSON object built from the library's
result, with the same keys whoever builds it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from otel_replay.model import Trajectory
from otel_replay.store import outcome_source

if TYPE_CHECKING:
    from otel_replay.replay import AgentRaised, KeptFork, Recording, Replay, Resumed, TrajectoryDiff


def raised_record(raised: AgentRaised | None) -> dict[str, Any] | None:
    """An agent that raised: the step, the exception's type and message, the failed operation."""
    return None if raised is None else raised.to_record()


def recorded_record(recording: Recording) -> dict[str, Any]:
    """A recorded run: its id, size and outcome, how its agent ended, the steps kept lossily."""
    run = recording.trajectory
    return {
        "id": run.id,
        "steps": len(run.steps),
        "outcome": run.outcome,
        "error": recording.error,
        "raised": raised_record(recording.raised),
        "lossy_steps": run.metadata.get("lossy_steps", []),
    }


def replay_record(result: Replay) -> dict[str, Any]:
    """An exact replay: whether it was identical, and where and how it diverged if not (the agent
    raising in the replay is ``raised``; ``raised_as_recorded`` when the record's did too)."""
    nondeterminism = result.nondeterminism
    return {
        "id": result.original.id,
        "identical": result.identical,
        "steps": len(result.original.steps),
        "replayed_steps": len(result.trajectory.steps),
        "final_hash": result.original.final_hash,
        "identity": result.original.identity,
        "nondeterminism": None if nondeterminism is None else str(nondeterminism),
        "nondeterminism_step": None if nondeterminism is None else nondeterminism.step_index,
        "ending": result.ending,
        "raised": raised_record(result.raised),
        "raised_as_recorded": result.raised_as_recorded,
        "recorded": "seed" in result.original.metadata,
        "diff": None if result.diff.identical else diff_record(result.diff),
    }


def fork_record(
    forked: Trajectory, result: TrajectoryDiff, kept: KeptFork | None = None
) -> dict[str, Any]:
    """A fork: its id, the step it changed and the move there (``at``, ``move``: do, observe,
    edit, remove, swap-model, or force), how it differs from the run it was forked from, whether
    its agent raised, and the fork made the same way before that the store keeps (``earlier``;
    ``same_as_earlier`` when this one came out the same and is that one)."""
    from otel_replay.replay import AgentRaised

    return {
        "id": forked.id,
        "at": forked.metadata.get("fork_at"),
        "move": forked.metadata.get("move", "force"),
        "diff": diff_record(result),
        "raised": raised_record(AgentRaised.of(forked)),
        "earlier": kept.earlier if kept else None,
        "same_as_earlier": kept.same if kept else False,
    }


def resumed_record(original: Trajectory, done: Resumed) -> dict[str, Any]:
    """A resumed run: the run it continued, the frontier, what was served and how it ended."""
    run = done.trajectory
    return {
        "id": run.id,
        "resumed_from": original.id,
        "frontier": done.frontier,
        "served": done.served,
        "steps": len(run.steps),
        "outcome": run.outcome,
        "error": done.error,
        "raised": raised_record(done.raised),
    }


def diff_record(result: TrajectoryDiff) -> dict[str, Any]:
    """Where two runs first part, the two steps there, and the stretches only one of them has."""
    a, b = result.step_pair()
    return {
        "left": {
            "id": result.left.id,
            "steps": len(result.left.steps),
            "outcome": result.left.outcome,
            "outcome_source": outcome_source(result.left.outcome, result.left.metadata),
        },
        "right": {
            "id": result.right.id,
            "steps": len(result.right.steps),
            "outcome": result.right.outcome,
            "outcome_source": outcome_source(result.right.outcome, result.right.metadata),
        },
        "identical": result.identical,
        "common_prefix": result.common,
        "first_divergence": result.divergence,
        "differences": list(result.differences),
        "change": result.change,
        "left_step": a.to_record() if a else None,
        "right_step": b.to_record() if b else None,
        "structure": [
            {"only_in": o.side, "steps": [o.start, o.stop - 1], "operations": list(o.operations)}
            for o in result.structure
        ],
    }
