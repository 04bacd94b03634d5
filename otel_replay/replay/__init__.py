"""Plans, rollouts, and live agents: record, replay exactly, fork, diff.

Exports load on first use (`otel_replay._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.replay._builtin import built_in_agent, chat_loop
    from otel_replay.replay._cassette import ReplayContext
    from otel_replay.replay._chat import ChatRecord, chat_agent, chat_driver, chat_record
    from otel_replay.replay._decorators import step, tool
    from otel_replay.replay._diff import TrajectoryDiff, diff, step_differences
    from otel_replay.replay._drivers import Driver
    from otel_replay.replay._durable import DurableLedger
    from otel_replay.replay._faults import FAULTS, fault
    from otel_replay.replay._instrument import instrument, uninstrument
    from otel_replay.replay._live import (
        Recording,
        Replay,
        Resumed,
        agent_driver,
        ended_early,
        fork,
        fork_id,
        partial_run,
        record,
        replay,
        resume,
    )
    from otel_replay.replay._moves import (
        Injection,
        Move,
        MoveKind,
        fork_injection,
        fork_move,
        injection,
        rewritten_call,
    )
    from otel_replay.replay._patch import apply_patch
    from otel_replay.replay._plan import HOLD, REMOVE, RESAMPLE, Action, Intervention, Plan
    from otel_replay.replay._rollout import Rollout, TraceDriver, registrations, rollout, score
    from otel_replay.replay._running import current_context, run_agent
    from otel_replay.replay._steps import AgentContext, Ledger, RecordingContext, StepError
    from otel_replay.resamplers import step_seed

__all__ = [
    "FAULTS",
    "HOLD",
    "REMOVE",
    "RESAMPLE",
    "Action",
    "AgentContext",
    "ChatRecord",
    "Driver",
    "DurableLedger",
    "Injection",
    "Intervention",
    "Ledger",
    "Move",
    "MoveKind",
    "Plan",
    "Recording",
    "RecordingContext",
    "Replay",
    "ReplayContext",
    "Resumed",
    "Rollout",
    "StepError",
    "TraceDriver",
    "TrajectoryDiff",
    "agent_driver",
    "apply_patch",
    "built_in_agent",
    "chat_agent",
    "chat_driver",
    "chat_loop",
    "chat_record",
    "current_context",
    "diff",
    "ended_early",
    "fault",
    "fork",
    "fork_id",
    "fork_injection",
    "fork_move",
    "injection",
    "instrument",
    "partial_run",
    "record",
    "registrations",
    "replay",
    "resume",
    "rewritten_call",
    "rollout",
    "run_agent",
    "score",
    "step",
    "step_differences",
    "step_seed",
    "tool",
    "uninstrument",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
