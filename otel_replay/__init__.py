"""agent-replay: import agent traces from OpenTelemetry, replay them, and find why a run failed.

Exports load on first use (`otel_replay._lazy`): ``import otel_replay`` is cheap, and a command
loads only the parts it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from otel_replay.attribution import (
        AttributionConfig,
        AttributionResult,
        Method,
        Mode,
        OnResamplerError,
        OnSuccess,
        Strategy,
        SweepResult,
        Verdict,
        attribute,
        attribute_stored,
        sweep,
        sweep_stored,
    )
    from otel_replay.errors import (
        AgentError,
        AttributionError,
        CanonicalJSONError,
        EditedContentError,
        InterventionError,
        NonDeterminismError,
        NotFoundError,
        PluginLoadError,
        RegistrationError,
        ReplayError,
        RolloutError,
        StoreError,
        TraceFormatError,
        UnservableError,
        VerifierError,
    )
    from otel_replay.executors import (
        Processes,
        RayExecutor,
        Threads,
    )
    from otel_replay.fleet import (
        Selection,
        attribute_runs,
        blame,
        pairs,
    )
    from otel_replay.frame import (
        steps_frame,
    )
    from otel_replay.importers import (
        Format,
        ReadOptions,
        read_jsonl,
        read_path,
    )
    from otel_replay.messages import (
        assistant_message,
        conversation,
    )
    from otel_replay.model import (
        FAIL_THRESHOLD,
        SpanNode,
        Step,
        StepKind,
        StepStatus,
        Trajectory,
    )
    from otel_replay.redaction import (
        COMMON_SECRET_PATTERNS,
    )
    from otel_replay.replay import (
        AgentContext,
        AgentRaised,
        Driver,
        Intervention,
        KeptFork,
        Move,
        MoveKind,
        Plan,
        Recording,
        Replay,
        Resumed,
        StepError,
        TrajectoryDiff,
        current_context,
        diff,
        fault,
        fork,
        fork_move,
        instrument,
        keep_fork,
        record,
        resume,
        run_agent,
        score,
        step,
        tool,
        uninstrument,
    )
    from otel_replay.report import (
        REPORT_SCHEMA,
        REPORT_VERSION,
        build_report,
        dumps_report,
        html_report,
    )
    from otel_replay.resamplers import (
        ChatModelOptions,
        Judge,
        JudgeOptions,
        JudgeVerdict,
        OpenAIChatModel,
        Registry,
        RolloutContext,
        StepFailed,
        ToolSource,
        UserCode,
        answer_verifier,
        load_object,
        load_registry,
        rebuild_messages,
        repair_candidates,
        resampler,
        verifier,
    )
    from otel_replay.store import (
        Store,
    )

#: The user API: everything a user of agent-replay imports is here. The subpackages' own exports
#: are a part of it (besides ``otel_replay.replay.replay`` and ``otel_replay.ingest.ingest``, which
#: their modules' names hide here); everything else is private to the package.
__all__ = [
    "COMMON_SECRET_PATTERNS",
    "FAIL_THRESHOLD",
    "REPORT_SCHEMA",
    "REPORT_VERSION",
    "AgentContext",
    "AgentError",
    "AgentRaised",
    "AttributionConfig",
    "AttributionError",
    "AttributionResult",
    "CanonicalJSONError",
    "ChatModelOptions",
    "Driver",
    "EditedContentError",
    "Format",
    "Intervention",
    "InterventionError",
    "Judge",
    "JudgeOptions",
    "JudgeVerdict",
    "KeptFork",
    "Method",
    "Mode",
    "Move",
    "MoveKind",
    "NonDeterminismError",
    "NotFoundError",
    "OnResamplerError",
    "OnSuccess",
    "OpenAIChatModel",
    "Plan",
    "PluginLoadError",
    "Processes",
    "RayExecutor",
    "ReadOptions",
    "Recording",
    "RegistrationError",
    "Registry",
    "Replay",
    "ReplayError",
    "Resumed",
    "RolloutContext",
    "RolloutError",
    "Selection",
    "SpanNode",
    "Step",
    "StepError",
    "StepFailed",
    "StepKind",
    "StepStatus",
    "Store",
    "StoreError",
    "Strategy",
    "SweepResult",
    "Threads",
    "ToolSource",
    "TraceFormatError",
    "Trajectory",
    "TrajectoryDiff",
    "UnservableError",
    "UserCode",
    "Verdict",
    "VerifierError",
    "answer_verifier",
    "assistant_message",
    "attribute",
    "attribute_runs",
    "attribute_stored",
    "blame",
    "build_report",
    "conversation",
    "current_context",
    "diff",
    "dumps_report",
    "fault",
    "fork",
    "fork_move",
    "html_report",
    "instrument",
    "keep_fork",
    "load_object",
    "load_registry",
    "pairs",
    "read_jsonl",
    "read_path",
    "rebuild_messages",
    "record",
    "repair_candidates",
    "resampler",
    "resume",
    "run_agent",
    "score",
    "step",
    "steps_frame",
    "sweep",
    "sweep_stored",
    "tool",
    "uninstrument",
    "verifier",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
