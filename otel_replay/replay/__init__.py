"""Plans, rollouts, and live agents: record, replay exactly, fork, diff.

Exports load on first use (`otel_replay._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.replay._decorators import step, tool
    from otel_replay.replay._diff import TrajectoryDiff, diff
    from otel_replay.replay._drivers import Driver
    from otel_replay.replay._faults import fault
    from otel_replay.replay._instrument import instrument, uninstrument
    from otel_replay.replay._live import Recording, Replay, fork, record, replay
    from otel_replay.replay._made import AgentRaised
    from otel_replay.replay._moves import KeptFork, Move, MoveKind, fork_move, keep_fork
    from otel_replay.replay._plan import Intervention, Plan
    from otel_replay.replay._resume import Resumed, resume
    from otel_replay.replay._rollout import score
    from otel_replay.replay._running import current_context, run_agent
    from otel_replay.replay._steps import AgentContext, StepError

__all__ = [
    "AgentContext",
    "AgentRaised",
    "Driver",
    "Intervention",
    "KeptFork",
    "Move",
    "MoveKind",
    "Plan",
    "Recording",
    "Replay",
    "Resumed",
    "StepError",
    "TrajectoryDiff",
    "current_context",
    "diff",
    "fault",
    "fork",
    "fork_move",
    "instrument",
    "keep_fork",
    "record",
    "replay",
    "resume",
    "run_agent",
    "score",
    "step",
    "tool",
    "uninstrument",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
