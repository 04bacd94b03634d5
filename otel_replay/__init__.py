"""agent-replay: import agent traces from OpenTelemetry, replay them, and find why a run failed.

Exports load on first use (`otel_replay._lazy`): ``import otel_replay`` is cheap, and a command
loads only the parts it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from otel_replay._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from otel_replay.errors import (
        AttributionError,
        CanonicalJSONError,
        NotFoundError,
        PluginLoadError,
        RegistrationError,
        ReplayError,
        RolloutError,
        StoreError,
        TraceFormatError,
        VerifierError,
    )
    from otel_replay.frame import steps_frame
    from otel_replay.importers import Format, ReadOptions, read_path
    from otel_replay.messages import assistant_message, conversation
    from otel_replay.model import SpanNode, Step, StepKind, StepStatus, Trajectory
    from otel_replay.replay import instrument, step, tool
    from otel_replay.resamplers import (
        Registry,
        RolloutContext,
        StepFailed,
        repair_candidates,
        resampler,
        verifier,
    )
    from otel_replay.store import Store

__all__ = [
    "AttributionError",
    "CanonicalJSONError",
    "Format",
    "NotFoundError",
    "PluginLoadError",
    "ReadOptions",
    "RegistrationError",
    "Registry",
    "ReplayError",
    "RolloutContext",
    "RolloutError",
    "SpanNode",
    "Step",
    "StepFailed",
    "StepKind",
    "StepStatus",
    "Store",
    "StoreError",
    "TraceFormatError",
    "Trajectory",
    "VerifierError",
    "assistant_message",
    "conversation",
    "instrument",
    "read_path",
    "repair_candidates",
    "resampler",
    "step",
    "steps_frame",
    "tool",
    "verifier",
]

__getattr__, __dir__ = lazy_exports(__name__, __all__)
