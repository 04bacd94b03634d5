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

if TYPE_CHECKING:  # lent to the other floors: __inside__
    from otel_replay.replay._builtin import built_in_agent as built_in_agent
    from otel_replay.replay._builtin import chat_loop as chat_loop
    from otel_replay.replay._chat import chat_driver as chat_driver
    from otel_replay.replay._durable import DurableLedger as DurableLedger
    from otel_replay.replay._faults import FAULTS as FAULTS
    from otel_replay.replay._live import agent_driver as agent_driver
    from otel_replay.replay._made import AS_RECORDED as AS_RECORDED
    from otel_replay.replay._made import MADE_HERE as MADE_HERE
    from otel_replay.replay._made import Verifying as Verifying
    from otel_replay.replay._made import instrumented_with as instrumented_with
    from otel_replay.replay._made import recorded_answer as recorded_answer
    from otel_replay.replay._made import recorded_verifier as recorded_verifier
    from otel_replay.replay._moves import fork_injection as fork_injection
    from otel_replay.replay._moves import injection as injection
    from otel_replay.replay._rollout import Rollout as Rollout
    from otel_replay.replay._rollout import TraceDriver as TraceDriver
    from otel_replay.replay._tracing import send_run as send_run

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

#: The inside API: what the package's other floors may import from here besides `__all__`.
__inside__ = [
    "AS_RECORDED",
    "FAULTS",
    "MADE_HERE",
    "DurableLedger",
    "Rollout",
    "TraceDriver",
    "Verifying",
    "agent_driver",
    "built_in_agent",
    "chat_driver",
    "chat_loop",
    "fork_injection",
    "injection",
    "instrumented_with",
    "recorded_answer",
    "recorded_verifier",
    "send_run",
]

__getattr__, __dir__ = lazy_exports(__name__, [*__all__, *__inside__])
