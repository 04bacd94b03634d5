"""Resample functions, the verifier and repair-candidate sources, kept on a `Registry`.

The module-level decorators (`resampler`, `verifier`, `repair_candidates`) register into the current
registry: the process-wide default, or the one a ``with registry.collecting():`` block names (the CLI
loads user modules that way, and tests build their own).

Exports load on first use (`otel_replay._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

if TYPE_CHECKING:
    from otel_replay.resamplers._context import (
        History,
        RolloutContext,
        RolloutSeed,
        StepFailed,
        standing_in,
        step_seed,
        unrecorded,
    )
    from otel_replay.resamplers._loading import (
        ENTRY_POINT_GROUP,
        ToolSource,
        UserCode,
        load_entry_points,
        load_object,
        load_registry,
        load_resamplers,
        load_verifier,
    )
    from otel_replay.resamplers._openai import (
        ChatModelOptions,
        ModelSource,
        OpenAIChatModel,
        rebuild_messages,
        wire_tool_calls,
    )
    from otel_replay.resamplers._recorded import RecordedOutcomes, recorded_outcomes
    from otel_replay.resamplers._registry import (
        DEFAULT_REGISTRY,
        Registration,
        Registry,
        ResampleFunction,
        VerifierFunction,
        current_registry,
        describe,
        repair_candidates,
        resampler,
        verifier,
    )
    from otel_replay.resamplers._verifiers import answer_verifier

__all__ = [
    "DEFAULT_REGISTRY",
    "ENTRY_POINT_GROUP",
    "ChatModelOptions",
    "History",
    "ModelSource",
    "OpenAIChatModel",
    "RecordedOutcomes",
    "Registration",
    "Registry",
    "ResampleFunction",
    "RolloutContext",
    "RolloutSeed",
    "StepFailed",
    "ToolSource",
    "UserCode",
    "VerifierFunction",
    "answer_verifier",
    "current_registry",
    "describe",
    "load_entry_points",
    "load_object",
    "load_registry",
    "load_resamplers",
    "load_verifier",
    "rebuild_messages",
    "recorded_outcomes",
    "repair_candidates",
    "resampler",
    "standing_in",
    "step_seed",
    "unrecorded",
    "verifier",
    "wire_tool_calls",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
